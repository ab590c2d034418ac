"""ModernBERT (Warner et al. 2024): a pre-norm encoder with rotary positions (no position table),
a fused ``Wqkv`` projection, a GeGLU feed-forward whose ``Wi`` holds both halves, LayerNorms
that drop their bias with ``norm_bias: false`` (the default), and no attention norm in layer 0.

Global and local (sliding-window) layers, from ``layer_types`` or ``global_attn_every_n_layers``,
differ only in their attention mask and rotary base: no parameter moves. Every head class has
``head`` (dense + norm) before its ``classifier``; the masked-LM ``decoder`` is tied to the token
table. ``classifier_pooling`` (cls or mean) moves no parameter either.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor, Tie, join
from . import Family
from .blocks import Builder, base, block, embedding, find, linear, norm, num_labels, stack, with_head
from .config import Cfg
from .dense import check_layer_types

DEFAULTS = {
    "vocab_size": 50368,
    "hidden_size": 768,
    "intermediate_size": 1152,
    "num_hidden_layers": 22,
    "num_attention_heads": 12,
    "max_position_embeddings": 8192,
    "pad_token_id": 50283,
    "norm_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "decoder_bias": True,
    "classifier_bias": False,
    "tie_word_embeddings": True,
}

EMBED = "embeddings.tok_embeddings.weight"


def layer_norm(c: Cfg, name: str) -> Block:
    return norm(name, c.int("hidden_size"), bias=c.bool("norm_bias"), form="layernorm")


def layer_modules(c: Cfg, first: bool) -> tuple[Node, ...]:
    """ModernBertEncoderLayer; layer 0's ``attn_norm`` is an Identity (the embeddings' norm
    precedes it)."""
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    attn_bias, mlp_bias = c.bool("attention_bias"), c.bool("mlp_bias")
    attn = block("attn", linear("Wqkv", h, 3 * h, attn_bias), linear("Wo", h, h, attn_bias), kind="attention")
    mlp = block("mlp", linear("Wi", h, 2 * i, mlp_bias), linear("Wo", i, h, mlp_bias), kind="feed_forward")
    return (None if first else layer_norm(c, "attn_norm"), attn, layer_norm(c, "mlp_norm"), mlp)


def layers(c: Cfg) -> tuple[Block, ...]:
    """Layer 0 without its attention norm, then the rest alike (global and local layers share
    their shapes)."""
    n = c.int("num_hidden_layers")
    first = stack("layers", 1, *layer_modules(c, True))
    return (first, stack("layers", n - 1, *layer_modules(c, False), start=1)) if n > 1 else (first,)


def backbone(c: Cfg) -> tuple[Node, ...]:
    emb = block(
        "embeddings",
        embedding("tok_embeddings", c.int("vocab_size"), c.int("hidden_size")),
        layer_norm(c, "norm"),
        kind="embeddings",
    )
    return (emb, *layers(c), layer_norm(c, "final_norm"))


def prediction_head(c: Cfg) -> Block:
    """ModernBertPredictionHead: ``dense`` (bias from ``classifier_bias``) and ``norm``."""
    h = c.int("hidden_size")
    return block("head", linear("dense", h, h, c.bool("classifier_bias")), layer_norm(c, "norm"), kind="output_head")


def mlm_head(c: Cfg, body: Block) -> list[Node]:
    """``head`` then ``decoder`` to the vocabulary: its weight is the token table when tied,
    its bias (``decoder_bias``) its own."""
    emb = find(body, EMBED)
    tied = c.bool("tie_word_embeddings")
    weight = Tie("weight", emb.shape, join(body.name, EMBED)) if tied else Tensor("weight", emb.shape)
    bias = Tensor("bias", emb.shape[:1]) if c.bool("decoder_bias") else None
    return [prediction_head(c), block("decoder", weight, bias, kind="output_head")]


def classifier_head(outputs: int | None = None):
    """``head`` then a biased ``classifier`` to ``num_labels`` (or ``outputs``)."""

    def head(c: Cfg, body: Block) -> list[Node]:
        out = num_labels(c) if outputs is None else outputs
        return [prediction_head(c), linear("classifier", c.int("hidden_size"), out, kind="output_head")]

    return head


def classes() -> dict[str, Builder]:
    return {
        "ModernBertModel": base(backbone),
        "ModernBertForMaskedLM": with_head(backbone, "model", mlm_head),
        "ModernBertForSequenceClassification": with_head(backbone, "model", classifier_head()),
        "ModernBertForTokenClassification": with_head(backbone, "model", classifier_head()),
        "ModernBertForQuestionAnswering": with_head(backbone, "model", classifier_head()),
        "ModernBertForMultipleChoice": with_head(backbone, "model", classifier_head(1)),
    }


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    check_layer_types(c)
    every = c.raw.get("global_attn_every_n_layers")
    # transformers builds layer_types from ``i % every``: 0 divides by zero, a non-integer fails.
    bad = isinstance(every, bool) or not isinstance(every, int) or every == 0
    if c.raw.get("layer_types") is None and every is not None and bad:
        raise c.error("global_attn_every_n_layers", f"expected a non-zero whole number, got {every!r}")
    pad, vocab = c.get("pad_token_id", None), c.int("vocab_size")
    # nn.Embedding(padding_idx=pad) refuses an index outside the vocabulary.
    if isinstance(pad, int) and not isinstance(pad, bool) and not -vocab <= pad < vocab:
        raise c.error("pad_token_id", f"{pad} is outside the vocabulary (vocab_size {int(vocab)})")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    from .cache import NO_CACHE

    return [], [NO_CACHE]


FAMILY = Family(
    model_type="modernbert",
    defaults=DEFAULTS,
    backbone="ModernBertModel",
    check=check,
    classes=classes(),
    cache_layout=cache_layout,
    extra_fields=("global_attn_every_n_layers",),
)
