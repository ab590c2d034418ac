"""Llama (Touvron et al. 2023): pre-norm RMSNorm decoder, rotary positions (no parameters),
grouped-query attention, SwiGLU feed-forward, untied output head by default.

Many families are this with small changes; they import the pieces below.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Node, Sym
from . import Family
from .blocks import attention, block, decoder_classes, embedding, gated_mlp, norm, stack
from .config import Cfg

DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "head_dim": None,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}


def kv_heads(c: Cfg) -> Sym:
    """``num_key_value_heads``, which transformers sets to the query heads when absent."""
    return c.opt_int("num_key_value_heads") or c.int("num_attention_heads")


def head_dim(c: Cfg) -> Sym:
    """An explicit ``head_dim`` (Gemma: 256 with h=3072), else hidden_size / heads."""
    return c.opt_int("head_dim") or c.int("hidden_size") // c.int("num_attention_heads")


def check(c: Cfg) -> None:
    if c.get("head_dim", None) is None:
        c.divides("hidden_size", "num_attention_heads")
    heads, kv = c.int("num_attention_heads"), kv_heads(c)
    if heads % kv:
        raise c.error("num_key_value_heads", f"{int(kv)} does not divide num_attention_heads ({int(heads)})")


def self_attn(c: Cfg, bias: bool | None = None, extra: tuple[Node, ...] = ()) -> Block:
    bias = c.bool("attention_bias") if bias is None else bias
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    return attention("self_attn", h, a, kv_heads(c), head_dim(c), bias=bias, extra=extra)


def mlp(c: Cfg) -> Block:
    return gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=c.bool("mlp_bias"))


def rms_layer(c: Cfg, attn: Block, ff: Block) -> tuple[Node, ...]:
    """A pre-norm decoder layer with the two RMSNorms Llama names (shared by its variants)."""
    h = c.int("hidden_size")
    return attn, ff, norm("input_layernorm", h, bias=False), norm("post_attention_layernorm", h, bias=False)


def layer(c: Cfg) -> tuple[Node, ...]:
    return rms_layer(c, self_attn(c), mlp(c))


def backbone(c: Cfg, layer: Callable[[Cfg], tuple[Node, ...]] = layer) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("norm", h, bias=False),
    )


FAMILY = Family(
    model_type="llama",
    defaults=DEFAULTS,
    backbone="LlamaModel",
    check=check,
    classes=decoder_classes("Llama", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "block", "check", "head_dim", "kv_heads", "layer", "mlp", "rms_layer", "self_attn"]
