"""StableLM 2 (Stability AI 2024): LayerNorms with weight and bias, biases on the query, key
and value projections (``use_qkv_bias``) but not the output one, partial rotary (no
parameters), and two switches: ``qk_layernorm`` (a bias-free LayerNorm per head, held as a
ModuleList ``norms`` of one per query or KV head) and ``use_parallel_residual`` (attention and
MLP read one normed input, so the layer has no ``post_attention_layernorm``)."""

from __future__ import annotations

from ..ir import Block, Node, Sym, Tensor
from . import Family, dense, mistral
from .blocks import attention, decoder_classes, embedding, norm, stack
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50304,
    "hidden_size": 2560,
    "intermediate_size": 6912,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "use_qkv_bias": False,
    "qk_layernorm": False,
    "use_parallel_residual": False,
    "tie_word_embeddings": False,
}


def per_head(name: str, heads: int, d: int) -> Block:
    """A ModuleList of ``heads`` bias-free LayerNorms, each ``head_dim`` wide."""
    return Block(name, (stack("norms", heads, Tensor("weight", (d,)), label="head"),), kind="norms", label="layernorm")


def self_attn(c: Cfg) -> Block:
    h, a, kv = c.int("hidden_size"), c.int("num_attention_heads"), mistral.kv_heads(c)
    d = head_dim(c)
    extra = (per_head("q_layernorm", a, d), per_head("k_layernorm", kv, d)) if c.bool("qk_layernorm") else ()
    return attention("self_attn", h, a, kv, d, bias=c.bool("use_qkv_bias"), out_bias=False, extra=extra)


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    post = None if c.bool("use_parallel_residual") else norm("post_attention_layernorm", h)
    return self_attn(c), mistral.swiglu(c), norm("input_layernorm", h), post


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("norm", h),
    )


def check(c: Cfg) -> None:
    """StableLmAttention refuses a width the heads do not divide, whatever ``head_dim`` says."""
    c.divides("hidden_size", "num_attention_heads")
    dense.not_null("num_key_value_heads")(c)


def head_dim(c: Cfg) -> Sym:
    return c.int("hidden_size") // c.int("num_attention_heads")


HEADS = ("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")

FAMILY = Family(
    model_type="stablelm",
    defaults=DEFAULTS,
    backbone="StableLmModel",
    check=check,
    cache_layout=dense.plain_cache(head_dim),
    classes=decoder_classes("StableLm", backbone, heads=HEADS),
)

__all__ = ["FAMILY", "backbone", "layer"]
