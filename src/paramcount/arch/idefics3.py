"""Idefics3 (Laurençon et al. 2024): a SigLIP-like vision transformer (``vision_model``: a biased
patch convolution, one position per patch, SigLIP's encoder layers and a final LayerNorm, no
pooling head), a connector that pixel-shuffles each ``scale_factor``² block of patches into one
token and projects it with one bias-free Linear (``connector.modality_projection.proj``), and a
language model (``text_model``, Llama by default) with an untied LM head by default.
SmolVLM has the same tree (``smolvlm``)."""

from __future__ import annotations

import math
from typing import Any

from ..ir import Block, Node
from . import Family
from .blocks import block, linear, norm
from .clip import check_tower, layers
from .config import Cfg, per_cfg
from .siglip import patch_embeddings
from .towers import lm_head, text_cache, tower, tower_cfg

VISION = {
    "hidden_size": 1152,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 32,
}
DEFAULTS = {"text_config": None, "vision_config": None, "scale_factor": 2, "tie_word_embeddings": False}
TEXT = "llama"
TEXT_ABSENT = {"rms_norm_eps": 1e-5}  # the config's SubConfigSpec: no shape field
MAX_SIDE = 4096  # the image processor's MAX_IMAGE_SIZE: no side past it after the first resize


def vision_cfg(c: Cfg) -> Cfg:
    v = c.sub("vision_config", VISION)
    check_tower(v)
    return v


def vision_model(v: Cfg) -> Block:
    post = norm("post_layernorm", v.int("hidden_size"))
    return block("vision_model", patch_embeddings(v), layers(v), post, tower="vision_encoder")


def connector(c: Cfg, v: Cfg) -> Block:
    s = c.int("scale_factor", high=1 << 8)
    t = tower_cfg(c, "text_config", TEXT, TEXT_ABSENT)
    proj = linear("proj", v.int("hidden_size") * s * s, t.int("hidden_size"), bias=False)
    return block("connector", block("modality_projection", proj), kind="feed_forward", tower="projector")


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v = vision_cfg(c)
    text = tower(c, "text_config", TEXT, "text_model", "language_model", TEXT_ABSENT)
    return (vision_model(v), connector(c, v), text)


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def causal_lm(c: Cfg) -> Block:
    t = tower_cfg(c, "text_config", TEXT, TEXT_ABSENT)
    head = lm_head(t, c.bool("tie_word_embeddings"), "model.text_model.embed_tokens.weight")
    return Block("", (Block("model", model(c), label="backbone"), head))


def longest_to(height: int, width: int, longest: int) -> tuple[int, int]:
    """Idefics3ImageProcessor's first resize: the longest side to ``longest`` px (up or down),
    the other kept in proportion, truncated and made even; then no side past MAX_SIDE."""
    aspect = width / height
    if width >= height:
        width, height = longest, int(longest / aspect)
        height += height % 2
    else:
        height, width = longest, int(longest * aspect)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    aspect = width / height
    if width >= height and width > MAX_SIDE:
        width, height = MAX_SIDE, max(int(MAX_SIDE / aspect), 1)
    elif height > width and height > MAX_SIDE:
        height, width = MAX_SIDE, max(int(MAX_SIDE * aspect), 1)
    return height, width


def tiles(height: int, width: int, tile: int) -> tuple[int, int]:
    """(rows, columns) of ``tile``-px crops: ``resize_for_vision_encoder`` rounds the longest
    side up to whole tiles, the other in proportion then up; an image within one tile is not split."""
    aspect = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = math.ceil(int(width / aspect) / tile) * tile
    else:
        height = math.ceil(height / tile) * tile
        width = math.ceil(int(height * aspect) / tile) * tile
    if height > tile or width > tile:
        return height // tile, width // tile
    return 0, 0


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """Idefics3Processor (SmolVLMProcessor alike): the image's longest side resized to four tiles,
    split into tile-sized crops, each crop ``<fake_token_around_image><row_r_col_c>`` and its
    (tile / patch)² / scale² image tokens, a newline after each row; then a newline, the global
    view as ``<fake_token_around_image><global-img>``, its image tokens and
    ``<fake_token_around_image>``. The last row's newline and the global view's make one token."""
    from .media import ImageTokens

    v, s = vision_cfg(c), int(c.int("scale_factor", high=1 << 8))
    tile, grid = int(v.int("image_size")), int(v.int("image_size")) // int(v.int("patch_size"))
    seq = grid * grid // (s * s)
    rows, cols = tiles(*longest_to(height, width, 4 * tile), tile)
    tokens = seq + 3 + rows * (cols * (seq + 2) + 1)
    crops = rows * cols + 1 if rows else 1
    said = (
        f"Idefics3Processor / SmolVLMProcessor, image splitting on (as published: the longest side "
        f"resized to {4 * tile} px, {tile}-px crops): {rows}×{cols} crops and the global view, {seq} image "
        f"tokens each with their markers and row newlines ('\\n\\n' one token, as the models' tokenizers "
        f"have it): {tokens:,} tokens"
    )
    return ImageTokens(tokens, crops * grid * grid, int(v.int("hidden_size")), int(v.int("intermediate_size")), said)


FAMILY = Family(
    model_type="idefics3",
    defaults=DEFAULTS,
    backbone="Idefics3Model",
    cache_layout=text_cache("text_config", TEXT, TEXT_ABSENT),
    classes={"Idefics3Model": backbone, "Idefics3ForConditionalGeneration": causal_lm},
    image_tokens=image_tokens,
)
