"""ViT (Dosovitskiy et al. 2020): an image cut into patches, each projected by a convolution,
a class token in front, learned position embeddings, then a pre-norm BERT-like encoder with
biased projections and a GELU MLP; a final LayerNorm and a tanh pooler."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import Pooled, base, block, classifier, linear, mlp, norm, stack, with_head
from .config import Cfg
from .vision import conv2d, embeddings, no_cache, tokens

DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "image_size": 224,
    "patch_size": 16,
    "num_channels": 3,
    "qkv_bias": True,
    "encoder_stride": 16,
    "pooler_output_size": None,
}


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def attention(c: Cfg, name: str = "attention", qkv_bias: bool | None = None) -> Block:
    h = c.int("hidden_size")
    bias = c.bool("qkv_bias") if qkv_bias is None else qkv_bias
    return block(
        name,
        linear("q_proj", h, h, bias),
        linear("k_proj", h, h, bias),
        linear("v_proj", h, h, bias),
        linear("o_proj", h, h),
        kind="attention",
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        attention(c),
        norm("layernorm_before", h),
        norm("layernorm_after", h),
        mlp("mlp", h, c.int("intermediate_size")),
    )


def encoder(c: Cfg, mask: bool = False) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embeddings(c, h, mask=mask),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("layernorm", h),
    )


def pooler(c: Cfg) -> Block:
    h = c.int("hidden_size")
    out = c.opt_int("pooler_output_size") or h
    return block("pooler", linear("dense", h, out), kind="pooler")


def masked(c: Cfg) -> tuple[Node, ...]:
    return encoder(c, mask=True)


def decoder(c: Cfg, body: Block) -> list[Node]:
    """SimMIM's decoder: a 1×1 convolution to stride²·channels values, then a pixel shuffle."""
    s, ch = c.int("encoder_stride"), c.int("num_channels")
    return [block("decoder", conv2d("0", c.int("hidden_size"), s * s * ch, 1, 1), kind="output_head")]


def image_classifier(c: Cfg, body: Block) -> list[Node]:
    """No classifier weights at all with num_labels 0 (an nn.Identity)."""
    return classifier("classifier")(c, body) if c.int("num_labels", low=0, default=2) else []


full = Pooled(encoder, pooler)

FAMILY = Family(
    model_type="vit",
    defaults=DEFAULTS,
    backbone="ViTModel",
    check=check,
    cache_layout=no_cache,
    max_tokens=tokens,
    classes={
        "ViTModel": base(full),
        "ViTForImageClassification": with_head(encoder, "vit", image_classifier),
        "ViTForMaskedImageModeling": with_head(masked, "vit", decoder),
    },
)

__all__ = ["FAMILY", "attention", "encoder", "layer", "pooler"]
