"""Command R7B / Command A (Cohere 2024–25): Command R's parallel block without q/k norms,
where three sliding-window layers alternate with one global layer (``layer_types``, else
``sliding_window_pattern``, 4), which changes no parameter."""

from __future__ import annotations

from ..ir import Node
from . import Family, cohere, dense, mistral
from .blocks import decoder_classes, norm
from .config import Cfg

DEFAULTS = {
    "vocab_size": 256000,
    "hidden_size": 8192,
    "intermediate_size": 22528,
    "num_hidden_layers": 40,
    "num_attention_heads": 64,
    "num_key_value_heads": None,
    "attention_bias": False,
    "sliding_window": 4096,
    "layer_types": None,
    "tie_word_embeddings": True,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    attn = dense.attn(c, bias=c.bool("attention_bias"))
    return attn, mistral.swiglu(c), norm("input_layernorm", c.int("hidden_size"), bias=False, form="layernorm")


def backbone(c: Cfg) -> tuple[Node, ...]:
    return cohere.backbone(c, layer)


def period(c: Cfg) -> int:
    """The pre-``layer_types`` ``sliding_window_pattern`` (every n-th layer global)."""
    return int(c.int("sliding_window_pattern", default=4))


FAMILY = Family(
    model_type="cohere2",
    defaults=DEFAULTS,
    backbone="Cohere2Model",
    check=dense.check,
    cache_layout=dense.periodic_cache(period),
    classes=decoder_classes("Cohere2", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "layer"]
