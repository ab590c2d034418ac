"""Gemma (Gemma Team 2024): Llama's decoder with an explicit head_dim (256, not h/a),
GeGLU feed-forward, RMSNorm that scales by (1 + w) (still one vector of h), the embedding
multiplied by sqrt(h) (a buffer, not a parameter) and an output head tied to it."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import decoder_classes, gated_mlp
from .config import Cfg
from .llama import backbone as llama_backbone
from .llama import check, rms_layer, self_attn

DEFAULTS = {
    "vocab_size": 256000,
    "hidden_size": 3072,
    "intermediate_size": 24576,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 256,
    "attention_bias": False,
    "tie_word_embeddings": True,
}

# GemmaForQuestionAnswering does not exist in transformers.
HEADS = ("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")


def mlp(c: Cfg) -> Block:
    """GeGLU: gate, up and down projections, never biased (no mlp_bias switch in Gemma)."""
    return gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))


def layer(c: Cfg) -> tuple[Node, ...]:
    return rms_layer(c, self_attn(c), mlp(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama_backbone(c, layer)


FAMILY = Family(
    model_type="gemma",
    defaults=DEFAULTS,
    backbone="GemmaModel",
    check=check,
    classes=decoder_classes("Gemma", backbone, heads=HEADS),
)

__all__ = ["FAMILY", "HEADS", "backbone", "layer", "mlp"]
