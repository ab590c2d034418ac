"""EXAONE 4.0 (LG AI Research 2025): OLMo 2's post-norm layer with per-head q/k RMSNorms
(``head_dim`` wide, like Qwen3); sliding-window layers alternate with global ones
(``layer_types``, else every ``sliding_window_pattern``-th layer global; no window at all
when ``sliding_window`` is null), which changes no parameter."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama, mistral
from .blocks import decoder_classes
from .config import Cfg

# Exaone4Config has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 102400,
    "hidden_size": 4096,
    "intermediate_size": 16384,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "sliding_window": 4096,
    "sliding_window_pattern": 4,
    "layer_types": None,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    return dense.post_norm_layer(c, dense.attn(c, extra=dense.qk_norms(c)), mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def period(c: Cfg) -> int:
    return int(c.int("sliding_window_pattern"))


FAMILY = Family(
    model_type="exaone4",
    defaults=DEFAULTS,
    backbone="Exaone4Model",
    check=dense.not_null("num_key_value_heads"),
    cache_layout=dense.periodic_cache(period),
    classes=decoder_classes("Exaone4", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "layer"]
