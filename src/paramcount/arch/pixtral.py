"""Pixtral's vision encoder (Mistral AI 2024), ``PixtralVisionModel``: a bias-free patch
convolution, an RMSNorm before the encoder, and Llama-like layers (bias-free q/k/v/o over
``hidden_size // num_attention_heads``-wide heads, a gated MLP, two RMSNorms). Positions are 2-D
rotary (no parameters), so the image size changes no count. Mistral 3's vision tower."""

from __future__ import annotations

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


FAMILY = Family(
    model_type="pixtral",
    defaults=DEFAULTS,
    backbone="PixtralVisionModel",
    check=check,
    cache_layout=no_cache,
    classes={"PixtralVisionModel": model},
)
