"""Qwen2 / Qwen2.5 (Qwen team 2024): Llama's layout with biases on the Q, K and V
projections (always; the output projection has none) and a 151k-token vocabulary."""

from __future__ import annotations

from ..ir import Node
from . import Family, llama, mistral
from .blocks import decoder_classes
from .config import Cfg

# Qwen2Config has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, mistral.self_attn(c, bias=True, out_bias=False), mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return mistral.backbone(c, layer)


FAMILY = Family(
    model_type="qwen2",
    defaults=DEFAULTS,
    backbone="Qwen2Model",
    check=mistral.check,
    classes=decoder_classes("Qwen2", backbone, qa_attr="transformer"),
)
