"""Ministral 3 (Mistral AI 2025): Mistral's layout with an explicit ``head_dim`` (128 by
default; null means h/a); its YaRN and Llama-4 attention scaling change no parameter."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama, mistral
from .blocks import decoder_classes
from .config import Cfg

DEFAULTS = {
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 34,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, dense.attn(c), mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="ministral3",
    defaults=DEFAULTS,
    backbone="Ministral3Model",
    check=dense.not_null("head_dim", "num_key_value_heads"),
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Ministral3", backbone),
)

__all__ = ["FAMILY", "backbone", "layer"]
