"""Command R (Cohere 2024): a parallel block (attention and MLP read the same normed input
and are added to the residual together), so one LayerNorm a layer; the LayerNorms have a
weight and no bias; optional LayerNorms over queries and keys (``use_qk_norm``) whose weights
are per head, shaped (heads, head_dim); the head is tied by default."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family, dense, mistral
from .blocks import decoder_classes, embedding, norm, stack
from .config import Cfg

# CohereConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 256000,
    "hidden_size": 8192,
    "intermediate_size": 22528,
    "num_hidden_layers": 40,
    "num_attention_heads": 64,
    "num_key_value_heads": None,
    "attention_bias": False,
    "use_qk_norm": False,
    "tie_word_embeddings": True,
}


def qk_norms(c: Cfg) -> tuple[Node, ...]:
    d = dense.head_dim(c)
    q = Block("q_norm", (Tensor("weight", (c.int("num_attention_heads"), d)),), kind="norms", label="layernorm")
    k = Block("k_norm", (Tensor("weight", (mistral.kv_heads(c), d)),), kind="norms", label="layernorm")
    return q, k


def layer(c: Cfg) -> tuple[Node, ...]:
    extra = qk_norms(c) if c.bool("use_qk_norm") else ()
    attn = dense.attn(c, bias=c.bool("attention_bias"), extra=extra)
    return attn, mistral.swiglu(c), norm("input_layernorm", c.int("hidden_size"), bias=False, form="layernorm")


def backbone(c: Cfg, layer=layer) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("norm", h, bias=False, form="layernorm"),
    )


FAMILY = Family(
    model_type="cohere",
    defaults=DEFAULTS,
    backbone="CohereModel",
    check=mistral.check,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Cohere", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "layer"]
