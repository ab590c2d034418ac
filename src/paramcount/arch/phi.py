"""Phi-1, Phi-1.5 and Phi-2 (Microsoft 2023): one LayerNorm per layer feeding attention and MLP
in parallel, biased Q/K/V/``dense`` projections (GQA-capable), partial rotary positions (no
parameters), optional per-head Q/K LayerNorms, and an output head with a bias."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import attention, block, decoder_classes, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg
from .llama import check, head_dim, kv_heads

DEFAULTS = {
    "vocab_size": 51200,
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "tie_word_embeddings": False,
    "qk_layernorm": False,
}


def self_attn(c: Cfg) -> Block:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    # The Q/K norms are sized hidden/heads even where a head_dim attribute overrides the projections.
    qk_norms = (norm("q_layernorm", h // a), norm("k_layernorm", h // a)) if c.bool("qk_layernorm") else ()
    names = ("q_proj", "k_proj", "v_proj", "dense")
    return attention("self_attn", h, a, kv_heads(c), head_dim(c), bias=True, names=names, extra=qk_norms)


def layer(c: Cfg) -> tuple[Node, ...]:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    return (
        self_attn(c),
        block("mlp", linear("fc1", h, i), linear("fc2", i, h), kind="feed_forward"),
        norm("input_layernorm", h),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("final_layernorm", h),
    )


CLASSES = decoder_classes("Phi", backbone, heads=("ForCausalLM", "ForSequenceClassification", "ForTokenClassification"))
CLASSES["PhiForCausalLM"] = with_head(backbone, "model", lm_head("embed_tokens.weight", bias=True))

FAMILY = Family(
    model_type="phi",
    defaults=DEFAULTS,
    backbone="PhiModel",
    check=check,
    classes=CLASSES,
)
