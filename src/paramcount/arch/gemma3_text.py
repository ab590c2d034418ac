"""Gemma 3, text only (Gemma Team 2025): Gemma 2's four-norm layer plus RMSNorms on each
query and key head (q_norm, k_norm of size head_dim); one global layer in six by default,
which changes no parameter. The multimodal Gemma 3 wraps this model as its language_model."""

from __future__ import annotations

from ..ir import Node
from . import Family
from .blocks import base, classifier, lm_head, norm, with_head
from .config import Cfg
from .gemma import mlp
from .gemma2 import check, norms
from .llama import backbone as llama_backbone
from .llama import self_attn

DEFAULTS = {
    "vocab_size": 262208,
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


def layer(c: Cfg) -> tuple[Node, ...]:
    d = c.int("head_dim")
    qk_norms = (norm("q_norm", d, bias=False), norm("k_norm", d, bias=False))
    return (self_attn(c, extra=qk_norms), mlp(c), *norms(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama_backbone(c, layer)


FAMILY = Family(
    model_type="gemma3_text",
    defaults=DEFAULTS,
    backbone="Gemma3TextModel",
    check=check,
    # The text-only classes: no token classification or QA head exists for Gemma 3.
    classes={
        "Gemma3TextModel": base(backbone),
        "Gemma3ForCausalLM": with_head(backbone, "model", lm_head("embed_tokens.weight")),
        "Gemma3TextForSequenceClassification": with_head(backbone, "model", classifier("score", bias=False)),
    },
)

__all__ = ["FAMILY", "backbone", "layer"]
