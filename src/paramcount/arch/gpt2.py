"""GPT-2 (Radford et al. 2019), and GPT-3's dense layout: learned positions, pre-norm
LayerNorm blocks, fused QKV in HF ``Conv1D`` (weights stored in→out), output head tied to
the token embedding."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import base, block, classifier, conv1d, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50257,
    "max_position_embeddings": 1024,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "n_inner": None,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
    "summary_use_proj": True,
    "summary_proj_to_labels": True,
}

# transformers' GPT2Config.attribute_map: files say n_embd, n_layer, n_head, n_positions.
ALIASES = {
    "hidden_size": ("n_embd",),
    "num_hidden_layers": ("n_layer",),
    "num_attention_heads": ("n_head",),
    "max_position_embeddings": ("n_positions",),
}


def attn(name: str, h: int, cross: bool = False) -> Block:
    """Self-attention fuses Q, K and V in ``c_attn`` (h→3h); cross-attention has ``q_attn``
    (h→h) and ``c_attn`` for K and V only (h→2h)."""
    qkv = conv1d("c_attn", h, (2 if cross else 3) * h)
    q = conv1d("q_attn", h, h) if cross else None
    return block(name, qkv, q, conv1d("c_proj", h, h), kind="attention")


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    inner = c.opt_int("n_inner") or 4 * h
    cross = c.bool("add_cross_attention")
    return (
        norm("ln_1", h),
        attn("attn", h),
        norm("ln_2", h),
        attn("crossattention", h, cross=True) if cross else None,
        norm("ln_cross_attn", h) if cross else None,
        block("mlp", conv1d("c_fc", h, inner), conv1d("c_proj", inner, h), kind="feed_forward"),
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


def double_heads(c: Cfg, body: Block) -> list[Node]:
    """LM head plus ``multiple_choice_head.summary``: one score per choice (the model sets
    num_labels to 1), or a projection to the hidden size when summary_proj_to_labels is off."""
    h = c.int("hidden_size")
    heads = list(lm_head("wte.weight")(c, body))
    if c.bool("summary_use_proj"):
        out = 1 if c.bool("summary_proj_to_labels") else h
        heads.append(block("multiple_choice_head", linear("summary", h, out), kind="output_head"))
    return heads


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]


FAMILY = Family(
    model_type="gpt2",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GPT2Model",
    check=check,
    classes={
        "GPT2Model": base(backbone),
        "GPT2LMHeadModel": with_head(backbone, "transformer", lm_head("wte.weight")),
        "GPT2DoubleHeadsModel": with_head(backbone, "transformer", double_heads),
        "GPT2ForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "GPT2ForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
        "GPT2ForQuestionAnswering": with_head(backbone, "transformer", qa_head),
    },
)
