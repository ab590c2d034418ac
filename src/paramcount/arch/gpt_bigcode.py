"""GPTBigCode (SantaCoder, StarCoder; Allal et al. 2023, Li et al. 2023): GPT-2's layout with
``nn.Linear`` layers and multi-query attention, the fused ``c_attn`` projecting to the
queries plus one shared K and V head (``multi_query``, the default) or to full Q, K, V."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node
from . import Family
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg
from .gpt2 import ALIASES

DEFAULTS = {
    "vocab_size": 50257,
    "max_position_embeddings": 1024,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "n_inner": None,
    "multi_query": True,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
}


def kv_heads(c: Cfg) -> int:
    return 1 if c.bool("multi_query") else int(c.int("num_attention_heads"))


def attn(c: Cfg, cross: bool = False) -> Block:
    """Self-attention: ``c_attn`` h → h + 2·kv·d; cross-attention (multi-head only):
    ``q_attn`` h → h and ``c_attn`` h → 2h for K and V."""
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    width = 2 * h if cross else h + 2 * kv_heads(c) * (h // a)
    q = linear("q_attn", h, h) if cross else None
    name = "crossattention" if cross else "attn"
    return block(name, linear("c_attn", h, width), q, linear("c_proj", h, h), kind="attention")


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    inner = c.opt_int("n_inner") or 4 * h
    cross = c.bool("add_cross_attention")
    return (
        norm("ln_1", h),
        attn(c),
        norm("ln_2", h),
        attn(c, cross=True) if cross else None,
        norm("ln_cross_attn", h) if cross else None,
        block("mlp", linear("c_fc", h, inner), linear("c_proj", inner, h), kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("wte", c.int("vocab_size"), h),
        embedding("wpe", c.int("max_position_embeddings"), h),
        stack("h", c.int("num_hidden_layers"), *layer(c)),
        norm("ln_f", h),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    if c.bool("add_cross_attention") and c.bool("multi_query"):
        # GPTBigCodeBlock raises NotImplementedError for this combination.
        raise c.error("add_cross_attention", "transformers has no cross-attention with multi_query")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Self-attention caches ``kv_heads`` heads of h/a (one with multi_query)."""
    from .cache import self_kinds

    d = int(c.int("hidden_size")) // int(c.int("num_attention_heads"))
    return self_kinds(c, model_type, (kv_heads(c), d, d))


FAMILY = Family(
    model_type="gpt_bigcode",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GPTBigCodeModel",
    check=check,
    cache_layout=cache_layout,
    classes={
        "GPTBigCodeModel": base(backbone),
        "GPTBigCodeForCausalLM": with_head(backbone, "transformer", lm_head("wte.weight")),
        "GPTBigCodeForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "GPTBigCodeForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
    },
)
