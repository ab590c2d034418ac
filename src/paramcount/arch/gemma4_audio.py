"""Gemma 4's audio encoder (``Gemma4AudioModel``, a Universal Speech Model conformer): two
strided 3×3 convolutions (bias-free, each with a bias-free LayerNorm) over the log-mel frames and
a projection to h, then conformer layers (two macaron feed-forwards of 4h, chunked local
attention with a relative-position key projection and a per-dimension scale, a light
convolution: a gated projection, a depthwise causal Conv1d of ``conv_kernel_size``, and RMSNorms)
and a biased projection to ``output_proj_dims``. Linear layers are ``ClippableLinear``s (weight
under ``.linear``; the clip bounds are buffers)."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import base, block, linear, norm
from .config import Cfg
from .gemma4_vision import clippable

DEFAULTS = {
    "hidden_size": 1024,
    "num_hidden_layers": 12,
    "num_attention_heads": 8,
    "subsampling_conv_channels": (128, 32),
    "conv_kernel_size": 5,
    "output_proj_dims": 1536,
}


def channels(c: Cfg) -> tuple[int, int]:
    value: Any = c.get("subsampling_conv_channels")
    if not isinstance(value, list | tuple) or len(value) != 2 or not all(isinstance(v, int) and v > 0 for v in value):
        raise c.error("subsampling_conv_channels", f"expected two channel counts, got {value!r:.60}")
    return int(value[0]), int(value[1])


def feed_forward(name: str, h: int) -> Block:
    return block(
        name,
        clippable("ffw_layer_1", h, 4 * h),
        clippable("ffw_layer_2", 4 * h, h),
        norm("pre_layer_norm", h, bias=False),
        norm("post_layer_norm", h, bias=False),
        kind="feed_forward",
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    d = h // a
    attn = block(
        "self_attn",
        clippable("q_proj", h, a * d),
        clippable("k_proj", h, a * d),
        clippable("v_proj", h, a * d),
        clippable("post", h, h),
        linear("relative_k_proj", h, a * d, bias=False),
        Tensor("per_dim_scale", (d,)),
        kind="attention",
    )
    conv = block(
        "lconv1d",
        clippable("linear_start", h, 2 * h),
        clippable("linear_end", h, h),
        Block("depthwise_conv1d", (Tensor("weight", (h, 1, c.int("conv_kernel_size"))),)),
        norm("pre_layer_norm", h, bias=False),
        norm("conv_norm", h, bias=False),
        kind="attention",
    )
    norms = (norm(n, h, bias=False) for n in ("norm_pre_attn", "norm_post_attn", "norm_out"))
    return (feed_forward("feed_forward1", h), feed_forward("feed_forward2", h), attn, conv, *norms)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    c0, c1 = channels(c)
    conv = block(
        "subsample_conv_projection",
        block("layer0", Block("conv", (Tensor("weight", (c0, 1, 3, 3)),)), norm("norm", c0, bias=False)),
        block("layer1", Block("conv", (Tensor("weight", (c1, c0, 3, 3)),)), norm("norm", c1, bias=False)),
        linear("input_proj_linear", (c0 // 4) * c1, h, bias=False),
        kind="embeddings",
    )
    layers = Block("layers", layer(c), repeat=c.int("num_hidden_layers"), label="layer")
    return (conv, layers, linear("output_proj", h, c.int("output_proj_dims")))


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    c0, _ = channels(c)
    if c0 < 4:
        raise c.error(
            "subsampling_conv_channels", f"the first count ({c0}) must be at least 4 (the projection reads c0 // 4)"
        )


FAMILY = Family(
    model_type="gemma4_audio",
    defaults=DEFAULTS,
    backbone="Gemma4AudioModel",
    check=check,
    classes={"Gemma4AudioModel": base(backbone)},
)

__all__ = ["FAMILY", "backbone"]
