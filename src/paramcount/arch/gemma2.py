"""Gemma 2 (Gemma Team 2024): Gemma with a norm after attention and a norm around the
feed-forward (four RMSNorms a layer); sliding and global attention layers alternate, which
changes no parameter."""

from __future__ import annotations

from ..ir import Node
from . import Family
from .blocks import decoder_classes, norm
from .config import Cfg
from .gemma import HEADS, mlp
from .llama import backbone as llama_backbone
from .llama import check as llama_check
from .llama import self_attn

DEFAULTS = {
    "vocab_size": 256000,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "attention_bias": False,
    "tie_word_embeddings": True,
    "layer_types": None,
}


def check(c: Cfg) -> None:
    """transformers' Gemma2/Gemma3 configs refuse a width the heads do not divide (even
    with an explicit head_dim) and a layer_types list of the wrong length."""
    c.divides("hidden_size", "num_attention_heads")
    llama_check(c)
    types = c.get("layer_types")
    if types is None:
        return
    if not isinstance(types, list):
        raise c.error("layer_types", f"expected a list, got {types!r}")
    if len(types) != c.int("num_hidden_layers"):
        layers = int(c.int("num_hidden_layers"))
        raise c.error("layer_types", f"has {len(types)} entries for num_hidden_layers = {layers}")


def norms(c: Cfg) -> tuple[Node, ...]:
    """The four per-layer RMSNorms, in transformers' order."""
    h = c.int("hidden_size")
    names = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
    return tuple(norm(n, h, bias=False) for n in names)


def layer(c: Cfg) -> tuple[Node, ...]:
    return (self_attn(c), mlp(c), *norms(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama_backbone(c, layer)


FAMILY = Family(
    model_type="gemma2",
    defaults=DEFAULTS,
    backbone="Gemma2Model",
    check=check,
    classes=decoder_classes("Gemma2", backbone, heads=HEADS),
)

__all__ = ["FAMILY", "backbone", "check", "layer", "norms"]
