"""GPT-NeoX and Pythia (Black et al. 2022; Biderman et al. 2023): fused ``query_key_value``,
two LayerNorms per layer whatever ``use_parallel_residual`` says, partial rotary positions
(no parameters), and an untied output head that checkpoints store as ``embed_out``."""

from __future__ import annotations

from ..ir import Block, Node
from ..records import replace
from . import Family
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50432,
    "hidden_size": 6144,
    "num_hidden_layers": 44,
    "num_attention_heads": 64,
    "intermediate_size": 24576,
    "attention_bias": True,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    # use_parallel_residual only reorders the forward pass: both norms exist either way.
    h, i, bias = c.int("hidden_size"), c.int("intermediate_size"), c.bool("attention_bias")
    return (
        norm("input_layernorm", h),
        norm("post_attention_layernorm", h),
        block("attention", linear("query_key_value", h, 3 * h, bias), linear("dense", h, h, bias), kind="attention"),
        block("mlp", linear("dense_h_to_4h", h, i), linear("dense_4h_to_h", i, h), kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_in", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("final_layer_norm", h),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def causal_head(c: Cfg, body: Block) -> list[Node]:
    """``lm_head`` in memory; transformers renames the checkpoint's ``embed_out`` on load."""
    (head,) = lm_head("embed_in.weight")(c, body)
    assert isinstance(head, Block)
    return [replace(head, checkpoint=Block("embed_out", head.children, kind="output_head"))]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]


FAMILY = Family(
    model_type="gpt_neox",
    defaults=DEFAULTS,
    backbone="GPTNeoXModel",
    check=check,
    classes={
        "GPTNeoXModel": base(backbone),
        "GPTNeoXForCausalLM": with_head(backbone, "gpt_neox", causal_head),
        "GPTNeoXForSequenceClassification": with_head(backbone, "gpt_neox", classifier("score", bias=False)),
        "GPTNeoXForTokenClassification": with_head(backbone, "gpt_neox", classifier("classifier")),
        "GPTNeoXForQuestionAnswering": with_head(backbone, "gpt_neox", qa_head),
    },
)
