"""Granite 3 (IBM 2024): Llama's layout. Its ``embedding_multiplier``, ``residual_multiplier``,
``attention_multiplier`` and ``logits_scaling`` scale activations and change no shape; the
head is tied by the published checkpoints' own ``tie_word_embeddings``, untied by default."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama, mistral
from .blocks import decoder_classes, gated_mlp
from .config import Cfg

# GraniteConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    ff = gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=c.bool("mlp_bias"))
    return llama.rms_layer(c, mistral.self_attn(c, bias=c.bool("attention_bias")), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="granite",
    defaults=DEFAULTS,
    backbone="GraniteModel",
    check=mistral.check,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Granite", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "layer"]
