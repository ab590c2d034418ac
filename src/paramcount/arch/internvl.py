"""InternVL 3 (transformers' ``-hf`` checkpoints): an InternViT vision tower, a projector
(a LayerNorm over the pixel-shuffled features, ``hidden · (1/downsample_ratio)²`` wide, then a
biased two-layer GELU MLP to the text width) and a language model (Qwen2 by default) with an LM
head tied by the class default."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node
from . import Family
from .blocks import block, linear, norm
from .config import MIN_RATIO, Cfg, per_cfg
from .towers import LLAVA_RENAMES, conditional_generation, text_cache, tower, tower_cfg, untied_text_notes
from .vision import pair

DEFAULTS = {"text_config": None, "vision_config": None, "downsample_ratio": 0.5, "tie_word_embeddings": True}
TEXT, VISION = "qwen2", "internvl_vision"
MIN_TILES, MAX_TILES = 1, 12  # GotOcr2ImageProcessor's min_patches and max_patches


def shuffle(c: Cfg) -> int:
    """int(1 / downsample_ratio): how many patches a side fold into one token."""
    return int(1 / c.number("downsample_ratio", low=MIN_RATIO, high=1))


def projector(c: Cfg) -> Block:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    wide, h_t = v.int("hidden_size") * shuffle(c) ** 2, t.int("hidden_size")
    return block(
        "multi_modal_projector",
        norm("layer_norm", wide),
        linear("linear_1", wide, h_t),
        linear("linear_2", h_t, h_t),
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder"),
        projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def grid(height: int, width: int, tile_h: int, tile_w: int) -> tuple[int, int]:
    """GotOcr2ImageProcessor's ``get_optimal_tiled_canvas``: (columns, rows) of tiles nearest the
    image's aspect ratio; of equals, more tiles while the image covers over half of them."""
    arrangements = [(w, h) for w in range(1, MAX_TILES + 1) for h in range(1, MAX_TILES + 1)]
    arrangements = sorted((a for a in arrangements if MIN_TILES <= a[0] * a[1] <= MAX_TILES), key=lambda a: a[0] * a[1])
    best, best_diff = (1, 1), float("inf")
    for cols, rows in arrangements:
        diff = abs(width / height - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and width * height > 0.5 * tile_h * tile_w * cols * rows:
            best = (cols, rows)
    return best


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """InternVLProcessor (crop_to_patches on): the image resized onto a grid of tower-sized tiles
    (up to 12) plus a thumbnail when there is more than one, each tile (size / patch)² patches
    pixel-shuffled to that × downsample_ratio² tokens, all between <img> and </img>."""
    from .media import ImageTokens

    v = tower_cfg(c, "vision_config", VISION)
    (th, tw), (ph, pw) = (tuple(int(n) for n in pair(v, f)) for f in ("image_size", "patch_size"))
    ratio = c.number("downsample_ratio", low=MIN_RATIO, high=1)  # pixel_shuffle keeps int(side · ratio)
    seq = int(th // ph * ratio) * int(tw // pw * ratio)
    if seq < 1:
        raise c.error("downsample_ratio", f"{ratio!r} leaves no token of a {th // ph}×{tw // pw}-patch tile")
    cols, rows = grid(height, width, th, tw)
    crops = cols * rows + (cols * rows > 1)
    tokens = seq * crops + 2
    said = (
        f"InternVLProcessor at its defaults (crop_to_patches, {MIN_TILES} to {MAX_TILES} tiles of the tower's "
        f"{tw}x{th} px): {cols}×{rows} tiles{' and a thumbnail' * (crops > 1)}, {seq} tokens each, "
        f"with <img> and </img>: {tokens:,} tokens"
    )
    patches = crops * ((th // ph) * (tw // pw) + 1)  # and the class token
    return ImageTokens(tokens, patches, int(v.int("hidden_size")), int(v.int("intermediate_size")), said)


FAMILY = Family(
    notes=untied_text_notes(TEXT),
    model_type="internvl",
    defaults=DEFAULTS,
    backbone="InternVLModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "InternVLModel": backbone,
        "InternVLForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
    },
    renames=LLAVA_RENAMES,
    image_tokens=image_tokens,
)
