"""Pixtral's vision encoder (Mistral AI 2024), ``PixtralVisionModel``: a bias-free patch
convolution, an RMSNorm before the encoder, and Llama-like layers (bias-free q/k/v/o over
``hidden_size // num_attention_heads``-wide heads, a gated MLP, two RMSNorms). Positions are 2-D
rotary (no parameters), so the image size changes no count. Mistral 3's vision tower."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ParamcountError
from ..ir import Block
from . import Family
from .blocks import block, gated_mlp, linear, norm, stack
from .config import Cfg
from .vision import conv2d, no_cache, pair

DEFAULTS = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "patch_size": 16,
}


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def encoder(c: Cfg) -> tuple[Block, ...]:
    h = c.int("hidden_size")
    attention = block("attention", *(linear(p, h, h, bias=False) for p in ("k_proj", "v_proj", "q_proj", "o_proj")))
    layer = (
        norm("attention_norm", h, bias=False),
        gated_mlp("feed_forward", h, c.int("intermediate_size")),
        Block("attention", attention.children, kind="attention"),
        norm("ffn_norm", h, bias=False),
    )
    ph, pw = pair(c, "patch_size")
    return (
        Block("patch_conv", conv2d("", c.int("num_channels"), h, ph, pw, bias=False).children, kind="embeddings"),
        norm("ln_pre", h, bias=False),
        block("transformer", stack("layers", c.int("num_hidden_layers"), *layer)),
    )


def model(c: Cfg) -> Block:
    return Block("", encoder(c), label="backbone")


def fitted(width: int, height: int, longest: int, step: int) -> tuple[int, int]:
    """PixtralImageProcessor's resize: scaled down (floored) to fit ``longest`` px a side, then
    each side rounded up to whole ``step``-px patches."""
    ratio = max(height / longest, width / longest)
    if ratio > 1:
        width, height = math.floor(width / ratio), math.floor(height / ratio)
    return -(-width // step) * step, -(-height // step) * step


def image_tokens(v: Cfg, merge: int, width: int, height: int, processor: str) -> Any:
    """PixtralProcessor: the image resized to fit the tower's ``image_size`` in whole patch ×
    ``merge`` squares, one [IMG] token each, an [IMG_BREAK] after each row but the last,
    which ends in [IMG_END]; the tower runs over every ``patch_size`` patch."""
    from .media import ImageTokens

    patch, longest = int(v.int("patch_size")), int(v.int("image_size", default=1024))  # PixtralVisionConfig's
    w, h = fitted(width, height, longest, patch * merge)
    if not w * h:  # a side scaled below one pixel: the processor cannot resize to it
        raise ParamcountError(
            f"{processor} cannot resize a {width}x{height} image (a side < 1 px)", field="--image-size"
        )
    cols, rows = w // (patch * merge), h // (patch * merge)
    tokens = rows * (cols + 1)
    said = (
        f"{processor}: resized to {w}x{h} (within {longest} px a side, whole {patch * merge}-px squares), "
        f"{rows}×{cols} [IMG] tokens with an [IMG_BREAK] or [IMG_END] ending each row: {tokens:,} tokens"
    )
    return ImageTokens(
        tokens, (w // patch) * (h // patch), int(v.int("hidden_size")), int(v.int("intermediate_size")), said
    )


FAMILY = Family(
    model_type="pixtral",
    defaults=DEFAULTS,
    backbone="PixtralVisionModel",
    check=check,
    cache_layout=no_cache,
    classes={"PixtralVisionModel": model},
)

__all__ = ["FAMILY", "fitted", "image_tokens"]
