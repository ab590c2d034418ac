"""Llama 4 (Meta 2025), natively multimodal: the image encoder (``llama4_vision_model``), a
bias-free projector from ``vision_output_dim`` to the text width, and Llama 4's language model
with its LM head (``Llama4ForCausalLM`` of ``llama4_text``: routed and shared experts, chunked
and NoPE layers), tied only where the text config ties it. transformers builds this one class."""

from __future__ import annotations

import struct
from typing import Any

from ..ir import Block, Node, Tensor, Tie
from . import Family
from .blocks import linear
from .config import MIN_RATIO, Cfg, per_cfg
from .towers import text_cache, tower, tower_cfg

DEFAULTS = {"text_config": None, "vision_config": None}
TEXT, VISION = "llama4_text", "llama4_vision_model"
MAX_CHUNKS = 16  # Llama4ImageProcessor's max_patches: tiles an image may be cut into


@per_cfg
def parts(c: Cfg) -> tuple[Node, ...]:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    h = t.int("hidden_size")
    language = tower(c, "text_config", TEXT, "model", "language_model")
    shape = (t.int("vocab_size"), h)
    tied = t.bool("tie_word_embeddings")
    weight = Tie("weight", shape, "language_model.model.embed_tokens.weight") if tied else Tensor("weight", shape)
    head = Block("lm_head", (weight,), kind="output_head")
    projector = linear("linear_1", v.int("vision_output_dim"), h, bias=False)
    return (
        tower(c, "vision_config", VISION, "vision_model", "vision_encoder"),
        Block("multi_modal_projector", (projector,), kind="feed_forward", tower="projector"),
        Block("language_model", (language, head), tower="language_model"),
    )


def model(c: Cfg) -> Block:
    return Block("", parts(c), label="backbone")


def canvases(tile: int) -> list[tuple[int, int]]:
    """Llama4ImageProcessor's ``find_supported_resolutions``: every (rows, columns) of up to
    MAX_CHUNKS tiles, grouped by aspect ratio in the order it first meets them, in pixels."""
    by_ratio: dict[float, list[tuple[int, int]]] = {}
    for chunks in range(MAX_CHUNKS, 0, -1):
        for f in sorted({f for f in range(1, chunks + 1) if chunks % f == 0}):
            by_ratio.setdefault(f / (chunks // f), []).append((f, chunks // f))
    return [(h * tile, w * tile) for pairs in by_ratio.values() for h, w in pairs]


def f32(x: float) -> float:
    """x rounded to float32: the processor's scales are torch float32 quotients."""
    return struct.unpack("f", struct.pack("f", x))[0]


def best_fit(height: int, width: int, tile: int) -> tuple[int, int]:
    """Llama4ImageProcessor's ``get_best_fit``: the canvas needing the least upscaling, else the
    least downscaling, without distortion; of equals, the smallest (the first of those)."""
    options = canvases(tile)
    scales = [min(f32(h / height), f32(w / width)) for h, w in options]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    fits = [c for c, s in zip(options, scales, strict=True) if s == chosen]
    return min(fits, key=lambda c: c[0] * c[1])


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """Llama4Processor: <|image_start|>; with more than one tile, each tile's tokens ((size /
    patch)² pixel-shuffled by ``pixel_shuffle_ratio``²), a <|tile_x_separator|> between tiles
    of a row and a <|tile_y_separator|> after each row; then <|image|>, the global view's tokens
    and <|image_end|>."""
    from .media import ImageTokens

    v = tower_cfg(c, "vision_config", VISION)
    tile, grid = int(v.int("image_size")), int(v.int("image_size")) // int(v.int("patch_size"))
    ratio = v.number("pixel_shuffle_ratio", 0.5, low=MIN_RATIO, high=1)
    per_tile = grid * grid // round(1 / ratio**2)
    if per_tile < 1:
        raise v.error("pixel_shuffle_ratio", f"{ratio!r} leaves no token of a {grid}×{grid}-patch tile")
    rows, cols = (side // tile for side in best_fit(height, width, tile))
    tiles = rows * cols if rows * cols > 1 else 0
    tokens = 3 + per_tile + (rows * cols * (per_tile + 1) if tiles else 0)
    said = (
        f"Llama4Processor at its defaults (up to {MAX_CHUNKS} tiles of the tower's {tile} px): {rows}×{cols} "
        f"tile(s){' and the global view' * bool(tiles)}, {per_tile} tokens each, with the separators and "
        f"<|image_start|>, <|image|>, <|image_end|>: {tokens:,} tokens"
    )
    patches = (tiles + 1) * (grid * grid + 1)  # and the class token
    return ImageTokens(tokens, patches, int(v.int("hidden_size")), int(v.int("intermediate_size")), said)


FAMILY = Family(
    model_type="llama4",
    defaults=DEFAULTS,
    backbone="Llama4ForConditionalGeneration",
    cache_layout=text_cache("text_config", TEXT),
    classes={"Llama4ForConditionalGeneration": model},
    image_tokens=image_tokens,
)
