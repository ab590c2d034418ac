"""LLaVA-OneVision (Li et al. 2024): LLaVA with a SigLIP tower (no pooling head; the last
layer's features by default), the two-layer projector, a learned ``image_newline`` of the text
width that marks each row of image tiles, and Qwen2 as the language model."""

from __future__ import annotations

import math
import re
from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .llava import feature_layers
from .towers import LLAVA_RENAMES, conditional_generation, text_cache, tower, tower_cfg

DEFAULTS = {
    "text_config": None,
    "vision_config": None,
    "vision_feature_layer": -1,
    "multimodal_projector_bias": True,
    "tie_word_embeddings": False,
}
TEXT, VISION = "qwen2", "siglip_vision_model"
# LlavaOnevisionConfig's vision tower when the file has none (its SubConfigSpec init_kwargs)
VISION_ABSENT = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "patch_size": 14,
    "image_size": 384,
    "num_hidden_layers": 26,
    "num_attention_heads": 16,
    "vision_use_head": False,
}
# LlavaOnevisionConfig's image_grid_pinpoints when the file has none (the image processor's too):
# every canvas of 1 to 6 × 1 to 6 crops of 384 px, in this order (the first best fit wins).
PINPOINTS = [[384 * h, 384 * w] for h in range(1, 7) for w in range(1, 7)]


def projector(c: Cfg) -> tuple[Node, ...]:
    """Linear(vision width × feature layers → text width), GELU, Linear(text → text), and the
    row marker ``image_newline`` (text width)."""
    v, t = tower_cfg(c, "vision_config", VISION, VISION_ABSENT), tower_cfg(c, "text_config", TEXT)
    h_t, bias = t.int("hidden_size"), c.bool("multimodal_projector_bias")
    mlp = block(
        "multi_modal_projector",
        linear("linear_1", v.int("hidden_size") * feature_layers(c), h_t, bias),
        linear("linear_2", h_t, h_t, bias),
        kind="feed_forward",
        tower="projector",
    )
    return mlp, Block("image_newline", (Tensor("", (h_t,)),), kind="other", tower="projector")


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder", VISION_ABSENT),
        *projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def pinpoints(c: Cfg, side: int) -> list[list[int]]:
    """``image_grid_pinpoints``: the canvases (height, width) an image's crops may fill."""
    value = c.get("image_grid_pinpoints", None)
    if value is None:
        return PINPOINTS

    def fits(n: Any) -> bool:  # whole crops need at least one crop's side
        return isinstance(n, int) and not isinstance(n, bool) and side <= n <= 1 << 16

    if not isinstance(value, list) or not value or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise c.error("image_grid_pinpoints", f"expected [height, width] pairs, got {value!r:.60}")
    if not all(fits(n) for p in value for n in p):
        raise c.error("image_grid_pinpoints", f"expected sides of {side} to 65,536 px, got {value!r:.60}")
    return value


def best_resolution(height: int, width: int, canvases: list[list[int]]) -> tuple[int, int]:
    """transformers' ``select_best_resolution``: the canvas keeping most of the image's pixels,
    then the one wasting fewest (the first of equals)."""
    best, kept, wasted = (0, 0), 0, math.inf
    for h, w in canvases:
        scale = min(w / width, h / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        if effective > kept or (effective == kept and h * w - effective < wasted):
            best, kept, wasted = (h, w), effective, h * w - effective
    return best


def unpadded(height: int, width: int, grid: int, canvas: tuple[int, int], most: int) -> tuple[int, int]:
    """LlavaOnevisionProcessor._get_unpadded_features: the crops' features left once the padding
    around the image is cut (rows of them and their count), pooled down past ``most`` crops' worth."""
    rows, cols = grid * canvas[0], grid * canvas[1]
    if width / height > cols / rows:
        rows -= (rows - int(round(height * (cols / width), 7))) // 2 * 2
    else:
        cols -= (cols - int(round(width * (rows / height), 7))) // 2 * 2
    ratio = math.sqrt(rows * cols / (most * grid**2))
    if ratio > 1.1:
        return int(rows // ratio) * int(cols // ratio), int(rows // ratio)
    return rows * cols, rows


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """LlavaOnevisionProcessor: one image alone in its prompt is the base view's grid² features,
    then its crops (anyres: the best canvas of ``image_grid_pinpoints``) unpadded, with an
    ``image_newline`` after each row; one of several is padded square, the base view and one
    newline. The ``default`` feature strategy drops one."""
    from .media import ImageTokens

    v = tower_cfg(c, "vision_config", VISION, VISION_ABSENT)
    side, grid = int(v.int("image_size")), int(v.int("image_size")) // int(v.int("patch_size"))
    most = max_crops(c)
    canvas = best_resolution(height, width, pinpoints(c, side))
    canvas = (canvas[0] // side, canvas[1] // side)
    features, rows = unpadded(height, width, grid, canvas, most)
    drop = c.get("vision_feature_select_strategy", "full") == "default"
    h_v, i_v = int(v.int("hidden_size")), int(v.int("intermediate_size"))
    alone = features + rows + grid * grid - drop
    said = (
        f"LlavaOnevisionProcessor (anyres_max_{most}): the {side}-px base view and {canvas[0]}×{canvas[1]} crops "
        f"of {side} px, {grid}² features each, unpadded to {features:,} with {rows} row newlines: {alone:,} tokens"
    )
    several = grid * grid + 1 - drop
    each = f"LlavaOnevisionProcessor: an image among several is padded square, {grid}² features and a newline"
    return ImageTokens(
        alone,
        (1 + canvas[0] * canvas[1]) * grid * grid,
        h_v,
        i_v,
        said,
        ImageTokens(several, grid * grid, h_v, i_v, f"{each}: {several:,} tokens"),
    )


def max_crops(c: Cfg) -> int:
    """``vision_aspect_ratio`` ``anyres_max_N``: features past N crops' worth are pooled."""
    value = c.get("vision_aspect_ratio", "anyres_max_9")
    found = re.fullmatch(r"anyres_max_(\d{1,4})", value) if isinstance(value, str) else None
    if found is None or not int(found.group(1)):
        raise c.error("vision_aspect_ratio", f"expected anyres_max_N, got {value!r:.60}")
    return int(found.group(1))


FAMILY = Family(
    model_type="llava_onevision",
    defaults=DEFAULTS,
    backbone="LlavaOnevisionModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "LlavaOnevisionModel": backbone,
        # LlavaOnevisionConfig.__post_init__ takes the text config's tie when its own is false
        # (the -hf releases saved it there): the 0.5B's head is tied though its file says false
        "LlavaOnevisionForConditionalGeneration": conditional_generation(model, "text_config", TEXT, forwarded=True),
    },
    renames=(*LLAVA_RENAMES, (r"^image_newline$", "model.image_newline")),
    image_tokens=image_tokens,
)
