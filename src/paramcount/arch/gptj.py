"""GPT-J (Wang & Komatsuzaki 2021): one LayerNorm per layer feeding attention and MLP in
parallel, unbiased Q/K/V/output projections, rotary positions on ``rotary_dim`` channels (no
parameters), and an untied output head that has a bias."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import attention, base, block, classifier, embedding, linear, lm_head, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50400,
    "hidden_size": 4096,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "n_inner": None,
    "tie_word_embeddings": False,
}

# GPTJConfig.attribute_map: the class's own fields are n_embd, n_layer, n_head.
ALIASES = {
    "hidden_size": ("n_embd",),
    "num_hidden_layers": ("n_layer",),
    "num_attention_heads": ("n_head",),
    "max_position_embeddings": ("n_positions",),
}


def layer(c: Cfg) -> tuple[Node, ...]:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    inner = c.opt_int("n_inner") or 4 * h
    return (
        norm("ln_1", h),
        attention("attn", h, a, a, h // a, names=("q_proj", "k_proj", "v_proj", "out_proj")),
        block("mlp", linear("fc_in", h, inner), linear("fc_out", inner, h), kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("wte", c.int("vocab_size"), h),
        stack("h", c.int("num_hidden_layers"), *layer(c)),
        norm("ln_f", h),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def qa_head(c: Cfg, body: Block) -> list[Node]:
    """GPT-J sizes ``qa_outputs`` by num_labels, not a fixed 2 (start, end)."""
    return [linear("qa_outputs", c.int("hidden_size"), num_labels(c), kind="output_head")]


FAMILY = Family(
    model_type="gptj",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GPTJModel",
    check=check,
    classes={
        "GPTJModel": base(backbone),
        "GPTJForCausalLM": with_head(backbone, "transformer", lm_head("wte.weight", bias=True)),
        "GPTJForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "GPTJForQuestionAnswering": with_head(backbone, "transformer", qa_head),
    },
)
