"""DINOv2 (Oquab et al. 2023): ViT with a mask token, LayerScale after attention and MLP
(one learned scale per channel), the MLP width from ``mlp_ratio`` (or a SwiGLU whose width is
2/3 of it rounded up to a multiple of 8), and no pooler; image classification reads the class
token and the mean patch token side by side (2h inputs)."""

from __future__ import annotations

from ..ir import Block, Node, Sym, Tensor
from . import Family
from .blocks import base, block, gated_mlp, linear, mlp, norm, stack, with_head
from .config import Cfg
from .vision import embeddings, no_cache, tokens
from .vit import attention
from .vit import check as vit_check

DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "mlp_ratio": 4,
    "image_size": 224,
    "patch_size": 14,
    "num_channels": 3,
    "qkv_bias": True,
    "use_swiglu_ffn": False,
    "use_mask_token": True,
}


def check(c: Cfg) -> None:
    vit_check(c)
    c.int("mlp_ratio", high=64)  # an integer: transformers' config refuses 3.5


def inner(c: Cfg) -> Sym:
    """h · mlp_ratio; a SwiGLU takes (int(2/3 of it) + 7) // 8 · 8."""
    width = c.int("hidden_size") * c.int("mlp_ratio", high=64)
    if c.bool("use_swiglu_ffn"):
        return Sym((int(width * 2 / 3) + 7) // 8 * 8, "I_swiglu")
    return width


def feed_forward(c: Cfg) -> Block:
    h = c.int("hidden_size")
    if c.bool("use_swiglu_ffn"):
        return gated_mlp("mlp", h, inner(c), bias=True)
    return mlp("mlp", h, inner(c))


def scale(name: str, h: Sym) -> Block:
    return block(name, Tensor("lambda1", (h,)), kind="other")


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        norm("norm1", h),
        attention(c),
        scale("layer_scale1", h),
        norm("norm2", h),
        feed_forward(c),
        scale("layer_scale2", h),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embeddings(c, h, mask=c.bool("use_mask_token"), mask_shape="2d"),
        block("encoder", stack("layer", c.int("num_hidden_layers"), *layer(c))),
        norm("layernorm", h),
    )


def classifier(c: Cfg, body: Block) -> list[Node]:
    labels = c.int("num_labels", low=0, default=2)
    return [linear("classifier", 2 * c.int("hidden_size"), labels, kind="output_head")] if labels else []


FAMILY = Family(
    model_type="dinov2",
    defaults=DEFAULTS,
    backbone="Dinov2Model",
    check=check,
    cache_layout=no_cache,
    max_tokens=tokens,
    classes={
        "Dinov2Model": base(backbone),
        "Dinov2ForImageClassification": with_head(backbone, "dinov2", classifier),
    },
)
