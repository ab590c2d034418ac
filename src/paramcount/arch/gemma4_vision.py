"""Gemma 4's image encoder (``Gemma4VisionModel``): patches of ``patch_size``² × 3 values
projected by a bias-free linear layer, a learned 2-D position table (2 × position_embedding_size
× h), then Gemma-style layers: bias-free q/k/v/o projections (each a ``ClippableLinear``:
the weight under ``.linear``, its clip bounds buffers), RMSNorms on each query and key head (the
value norm has no weight), a gated MLP and four RMSNorms. The pooler has no parameters."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import base, block, linear, norm
from .config import Cfg

DEFAULTS = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 16,
    "num_attention_heads": 12,
    "num_key_value_heads": 12,
    "head_dim": 64,
    "patch_size": 16,
    "position_embedding_size": 10 * 1024,
}
NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


def clippable(name: str, d_in: int, d_out: int) -> Block:
    """transformers' Gemma4ClippableLinear: a bias-free nn.Linear held as ``linear``."""
    return Block(name, (linear("linear", d_in, d_out, bias=False),))


def layer(c: Cfg) -> tuple[Node, ...]:
    h, a, kv, d, i = (
        c.int(f) for f in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size")
    )
    attn = block(
        "self_attn",
        clippable("q_proj", h, a * d),
        clippable("k_proj", h, kv * d),
        clippable("v_proj", h, kv * d),
        clippable("o_proj", a * d, h),
        norm("q_norm", d, bias=False),
        norm("k_norm", d, bias=False),
        kind="attention",
    )
    mlp = block(
        "mlp",
        clippable("gate_proj", h, i),
        clippable("up_proj", h, i),
        clippable("down_proj", i, h),
        kind="feed_forward",
    )
    return (attn, mlp, *(norm(n, h, bias=False) for n in NORMS))


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, p = c.int("hidden_size"), c.int("patch_size")
    patches = block(
        "patch_embedder",
        linear("input_proj", 3 * p * p, h, bias=False),
        Tensor("position_embedding_table", (2, c.int("position_embedding_size"), h)),
        kind="embeddings",
    )
    layers = Block("layers", layer(c), repeat=c.int("num_hidden_layers"), label="layer")
    return (patches, Block("encoder", (layers,)))


def check(c: Cfg) -> None:
    a, kv = c.int("num_attention_heads"), c.int("num_key_value_heads")
    if a % kv:
        raise c.error("num_key_value_heads", f"{int(kv)} does not divide num_attention_heads ({int(a)})")


FAMILY = Family(
    model_type="gemma4_vision",
    defaults=DEFAULTS,
    backbone="Gemma4VisionModel",
    check=check,
    classes={"Gemma4VisionModel": base(backbone)},
)

__all__ = ["FAMILY", "backbone", "clippable"]
