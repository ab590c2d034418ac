"""OLMo 2 (OLMo Team 2024): Llama's layout with the norms moved after attention and after
the MLP (``post_attention_layernorm``, ``post_feedforward_layernorm``; none before) and
RMSNorms over the whole query and key projections (heads × head_dim wide, not per head)."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama, mistral
from .blocks import decoder_classes
from .config import Cfg

# Olmo2Config has no head_dim field: the attention takes one from the file, else h/a.
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

HEADS = ("ForCausalLM", "ForSequenceClassification")


def layer(c: Cfg) -> tuple[Node, ...]:
    attn = dense.attn(c, bias=c.bool("attention_bias"), extra=dense.qk_norms(c, full=True))
    return dense.post_norm_layer(c, attn, mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="olmo2",
    defaults=DEFAULTS,
    backbone="Olmo2Model",
    check=mistral.check,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Olmo2", backbone, heads=HEADS),
)

__all__ = ["FAMILY", "backbone", "layer"]
