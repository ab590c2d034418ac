"""BLOOM (BigScience 2022): ALiBi positions (no parameters), a LayerNorm right after the word
embedding, fused biased ``query_key_value``, a 4h GELU feed-forward, tied output head."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ir import Block, Node
from ..records import record
from . import Family
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 250880,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "tie_word_embeddings": True,
}

# BloomConfig.attribute_map: the class's own fields are n_layer and n_head.
ALIASES = {
    "num_hidden_layers": ("n_layer",),
    "num_attention_heads": ("n_head",),
}


@record(frozen=True)
class LegacyEmbedFamily(Family):
    """BloomConfig and FalconConfig pop a legacy ``n_embed`` keyword that overrides
    ``hidden_size`` even when both are given, so it cannot be an ordinary (later) alias."""

    def cfg(self, raw: Mapping[str, Any], source: str | None) -> Cfg:
        if raw.get("n_embed") is not None:
            raw = {**raw, "hidden_size": raw["n_embed"]}
        return super().cfg(raw, source)


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        norm("input_layernorm", h),
        block("self_attention", linear("query_key_value", h, 3 * h), linear("dense", h, h), kind="attention"),
        norm("post_attention_layernorm", h),
        block("mlp", linear("dense_h_to_4h", h, 4 * h), linear("dense_4h_to_h", 4 * h, h), kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("word_embeddings", c.int("vocab_size"), h),
        norm("word_embeddings_layernorm", h),
        stack("h", c.int("num_hidden_layers"), *layer(c)),
        norm("ln_f", h),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]


FAMILY = LegacyEmbedFamily(
    model_type="bloom",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="BloomModel",
    check=check,
    classes={
        "BloomModel": base(backbone),
        "BloomForCausalLM": with_head(backbone, "transformer", lm_head("word_embeddings.weight")),
        "BloomForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "BloomForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
        "BloomForQuestionAnswering": with_head(backbone, "transformer", qa_head),
    },
)
