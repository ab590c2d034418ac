"""Qwen3 (Qwen team 2025): Llama's layout with RMSNorms over each head's queries and keys
(``q_norm``/``k_norm``, width ``head_dim``), an explicit ``head_dim`` (128 by default,
not h/a) and an ``attention_bias`` switch."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, llama, mistral
from .blocks import decoder_classes, norm
from .config import Cfg

DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "head_dim": 128,
    "attention_bias": False,
    "tie_word_embeddings": False,
}


def self_attn(c: Cfg) -> Block:
    d = llama.head_dim(c)
    qk_norms = (norm("q_norm", d, bias=False), norm("k_norm", d, bias=False))
    return mistral.self_attn(c, bias=c.bool("attention_bias"), extra=qk_norms)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, self_attn(c), mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return mistral.backbone(c, layer)


FAMILY = Family(
    model_type="qwen3",
    defaults=DEFAULTS,
    backbone="Qwen3Model",
    check=mistral.check,
    classes=decoder_classes("Qwen3", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "layer", "self_attn"]
