"""Phi-3 (Abdin et al. 2024): Llama's decoder with Q, K and V fused in one ``qkv_proj``
and gate and up fused in one ``gate_up_proj``; grouped-query attention in the larger
models (Phi-3-medium, Phi-4), a tied head in Phi-4-mini."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, decoder_classes, linear
from .config import Cfg
from .llama import backbone as llama_backbone
from .llama import check, head_dim, kv_heads, rms_layer

DEFAULTS = {
    "vocab_size": 32064,
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    # Not a Phi3Config field; the attention reads it if a file sets it, else h/a.
    "head_dim": None,
    "tie_word_embeddings": False,
}


def self_attn(c: Cfg) -> Block:
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), head_dim(c)
    qkv = a * d + 2 * (kv_heads(c) * d)
    return block(
        "self_attn",
        linear("o_proj", a * d, h, bias=False),
        linear("qkv_proj", h, qkv, bias=False),
        kind="attention",
    )


def mlp(c: Cfg) -> Block:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    return block(
        "mlp",
        linear("gate_up_proj", h, 2 * i, bias=False),
        linear("down_proj", i, h, bias=False),
        kind="feed_forward",
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    return rms_layer(c, self_attn(c), mlp(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama_backbone(c, layer)


FAMILY = Family(
    model_type="phi3",
    defaults=DEFAULTS,
    backbone="Phi3Model",
    check=check,
    classes=decoder_classes(
        "Phi3", backbone, heads=("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")
    ),
)

__all__ = ["FAMILY", "backbone", "layer", "mlp", "self_attn"]
