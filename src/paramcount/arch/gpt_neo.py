"""GPT-Neo (Black et al. 2021): GPT-2's layout with ``nn.Linear`` layers, separate biasless
Q/K/V projections and a biased output projection, and layers alternating global and local
(windowed) attention by ``attention_types``. Local and global layers hold the same tensors;
the window only changes the attention mask."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node
from . import Family
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50257,
    "max_position_embeddings": 2048,
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": None,
    "attention_types": None,
    "window_size": 256,
    "tie_word_embeddings": True,
}

# GPTNeoConfig.attribute_map: files say num_layers and num_heads.
ALIASES = {"num_hidden_layers": ("num_layers",), "num_attention_heads": ("num_heads",)}


def attn(h: Any) -> Block:
    """``attn.attention``: biasless q/k/v, biased out_proj (GPTNeoAttention wraps GPTNeoSelfAttention)."""
    projections = [linear(n, h, h, bias=False) for n in ("k_proj", "v_proj", "q_proj")]
    inner = block("attention", *projections, linear("out_proj", h, h))
    return block("attn", inner, kind="attention")


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    inner = c.opt_int("intermediate_size") or 4 * h
    return (
        norm("ln_1", h),
        attn(h),
        norm("ln_2", h),
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


def attention_layers(c: Cfg) -> int:
    """How many layers ``attention_types`` ([[types, repeat], …]) expands to, without
    expanding it; a type other than global or local is refused as GPTNeoAttention does."""
    spec = c.raw.get("attention_types")
    if spec is None:
        return 24  # the class default [[["global", "local"], 12]]
    if not isinstance(spec, list):
        raise c.error("attention_types", f"expected a list of [types, repeat] pairs, got {spec!r}")
    total = 0
    for item in spec:
        ok = isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
        if not ok or not isinstance(item[1], int) or isinstance(item[1], bool) or item[1] < 0:
            raise c.error("attention_types", f"expected [types, repeat] pairs, got {item!r}")
        bad = [t for t in item[0] if t not in ("global", "local")]
        if bad:
            raise c.error("attention_types", f"unknown attention type {bad[0]!r} (global or local)")
        total += len(item[0]) * item[1]
    return total


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    layers, expanded = int(c.int("num_hidden_layers")), attention_layers(c)
    if expanded != layers:
        raise c.error("attention_types", f"expands to {expanded} layers but num_layers is {layers}")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Every layer caches all heads in full: the config has no ``sliding_window``, so
    transformers' DynamicCache keeps the whole context even for local layers (they only mask)."""
    from .cache import self_kinds

    a = int(c.int("num_attention_heads"))
    d = int(c.int("hidden_size")) // a
    kinds, notes = self_kinds(c, model_type, (a, d, d))
    said = f"local layers attend to the last {c.int('window_size')} tokens but transformers caches every token"
    return kinds, [*notes, said]


FAMILY = Family(
    model_type="gpt_neo",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GPTNeoModel",
    check=check,
    cache_layout=cache_layout,
    classes={
        "GPTNeoModel": base(backbone),
        "GPTNeoForCausalLM": with_head(backbone, "transformer", lm_head("wte.weight")),
        "GPTNeoForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "GPTNeoForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
        "GPTNeoForQuestionAnswering": with_head(
            backbone, "transformer", lambda c, body: [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]
        ),
    },
)
