"""Falcon (TII 2023): fused ``query_key_value`` sized three ways (multi-head, multi-query with one
K/V head as falcon-7b, or grouped K/V heads with ``new_decoder_architecture`` as falcon-40b),
attention and MLP in parallel behind one or two LayerNorms, rotary or ALiBi positions (neither
has parameters), a single ``bias`` switch, tied output head."""

from __future__ import annotations

from ..ir import Block, Node, Sym
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .bloom import LegacyEmbedFamily
from .config import Cfg

DEFAULTS = {
    "vocab_size": 65024,
    "hidden_size": 4544,
    "num_hidden_layers": 32,
    "num_attention_heads": 71,
    "num_ln_in_parallel_attn": None,
    "num_kv_heads": None,
    "new_decoder_architecture": False,
    "multi_query": True,
    "parallel_attn": True,
    "bias": False,
    "ffn_hidden_size": None,
    "tie_word_embeddings": True,
}

# RefinedWeb-era names that FalconConfig (no attribute_map) leaves as inert extra attributes.
IGNORED_LEGACY = {"n_head": "num_attention_heads", "n_layer": "num_hidden_layers", "n_head_kv": "num_kv_heads"}


def kv_heads(c: Cfg) -> Sym:
    """K/V heads the fused projection carries: ``num_kv_heads`` (default: all heads) in the new
    architecture or plain multi-head attention, one under multi-query."""
    if c.bool("new_decoder_architecture") or not c.bool("multi_query"):
        return c.opt_int("num_kv_heads") or c.int("num_attention_heads")
    return Sym(1)


def qkv_width(c: Cfg) -> Sym:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    if c.bool("new_decoder_architecture"):
        return (2 * kv_heads(c) + a) * (h // a)
    if c.bool("multi_query"):
        return h + 2 * (h // a)
    return 3 * h


def layer_norms(c: Cfg) -> tuple[Node, ...]:
    """Sequential layers have two norms; parallel ones one, or ``ln_attn`` and ``ln_mlp`` when
    num_ln_in_parallel_attn is 2 (the default of the new architecture)."""
    h = c.int("hidden_size")
    if not c.bool("parallel_attn"):
        return norm("input_layernorm", h), norm("post_attention_layernorm", h)
    count = c.opt_int("num_ln_in_parallel_attn", low=0)
    if count is None and c.bool("new_decoder_architecture"):
        count = 2
    if count == 2:
        return norm("ln_attn", h), norm("ln_mlp", h)
    return (norm("input_layernorm", h),)


def layer(c: Cfg) -> tuple[Node, ...]:
    h, bias = c.int("hidden_size"), c.bool("bias")
    ffn = c.opt_int("ffn_hidden_size") or 4 * h
    return (
        block(
            "self_attention",
            linear("query_key_value", h, qkv_width(c), bias),
            linear("dense", h, h, bias),
            kind="attention",
        ),
        block("mlp", linear("dense_h_to_4h", h, ffn, bias), linear("dense_4h_to_h", ffn, h, bias), kind="feed_forward"),
        *layer_norms(c),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("word_embeddings", c.int("vocab_size"), h),
        stack("h", c.int("num_hidden_layers"), *layer(c)),
        norm("ln_f", h),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    heads, kv = c.int("num_attention_heads"), kv_heads(c)
    # The new architecture splits the fused projection into groups of heads/kv queries.
    if c.bool("new_decoder_architecture") and heads % kv:
        raise c.error("num_kv_heads", f"{int(kv)} does not divide num_attention_heads ({int(heads)})")


def notes(c: Cfg, class_name: str) -> list[str]:
    return [
        f"{old} is a RefinedWeb field that transformers' FalconConfig ignores; {new} keeps its default"
        for old, new in IGNORED_LEGACY.items()
        if c.raw.get(old) is not None and not c.has(new)
    ]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]


FAMILY = LegacyEmbedFamily(
    model_type="falcon",
    defaults=DEFAULTS,
    backbone="FalconModel",
    check=check,
    notes=notes,
    flag_fields={"num_key_value_heads": "num_kv_heads"},
    classes={
        "FalconModel": base(backbone),
        "FalconForCausalLM": with_head(backbone, "transformer", lm_head("word_embeddings.weight")),
        "FalconForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "FalconForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
        "FalconForQuestionAnswering": with_head(backbone, "transformer", qa_head),
    },
)
