"""OLMo (Groeneveld et al. 2024): Llama's layout but its LayerNorms are non-parametric
(no weight, no bias: ``OlmoLayerNorm`` holds no parameters), with an ``attention_bias``
switch on all four projections; ``clip_qkv`` clamps activations and adds nothing."""

from __future__ import annotations

from ..ir import Node
from . import Family, mistral
from .blocks import decoder_classes, embedding, stack
from .config import Cfg

# OlmoConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 50304,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    return mistral.self_attn(c, bias=c.bool("attention_bias")), mistral.swiglu(c)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return embedding("embed_tokens", c.int("vocab_size"), h), stack("layers", c.int("num_hidden_layers"), *layer(c))


FAMILY = Family(
    model_type="olmo",
    defaults=DEFAULTS,
    backbone="OlmoModel",
    check=mistral.check,
    classes=decoder_classes("Olmo", backbone, heads=("ForCausalLM", "ForSequenceClassification")),
)
