"""DistilBERT (Sanh et al. 2019): BERT halved in depth with its own module names
(``transformer.layer.N.attention.q_lin``, ``ffn.lin1``…), no segment embeddings and no
pooler. ``sinusoidal_pos_embds`` only fills the position table with fixed sinusoids: it is
still a parameter."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Node, Tensor, Tie, join
from . import Family
from .blocks import base, block, classifier, embedding, find, linear, mlp, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "sinusoidal_pos_embds": False,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "hidden_size": 768,
    "hidden_dim": 4 * 768,
    "tie_word_embeddings": True,
}

# DistilBertConfig.attribute_map: files say dim, n_heads, n_layers.
ALIASES = {
    "hidden_size": ("dim",),
    "num_attention_heads": ("n_heads",),
    "num_hidden_layers": ("n_layers",),
}

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attention = block(
        "attention",
        linear("q_lin", h, h),
        linear("k_lin", h, h),
        linear("v_lin", h, h),
        linear("out_lin", h, h),
        kind="attention",
    )
    return (
        attention,
        norm("sa_layer_norm", h),
        mlp("ffn", h, c.int("hidden_dim"), names=("lin1", "lin2")),
        norm("output_layer_norm", h),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    embeddings = block(
        "embeddings",
        embedding("word_embeddings", c.int("vocab_size"), h),
        embedding("position_embeddings", c.int("max_position_embeddings"), h),
        norm("LayerNorm", h),
        kind="embeddings",
    )
    return (embeddings, block("transformer", stack("layer", c.int("num_hidden_layers"), *layer(c))))


def mlm_head(c: Cfg, body: Block) -> list[Node]:
    """``vocab_transform`` and ``vocab_layer_norm``, then ``vocab_projector``: its weight is the
    word table when tied, its bias always its own."""
    emb = find(body, WORD_EMBEDDINGS)
    h = c.int("hidden_size")
    tied = c.bool("tie_word_embeddings")
    weight = Tie("weight", emb.shape, join(body.name, WORD_EMBEDDINGS)) if tied else Tensor("weight", emb.shape)
    return [
        linear("vocab_transform", h, h, kind="output_head"),
        norm("vocab_layer_norm", h),
        block("vocab_projector", weight, Tensor("bias", emb.shape[:1]), kind="output_head"),
    ]


def pre_classifier_head(labels_of_one: bool = False) -> Callable[[Cfg, Block], list[Node]]:
    """``pre_classifier`` (hidden → hidden) then ``classifier``: to the labels, or to a single
    score per choice for multiple choice."""

    def head(c: Cfg, body: Block) -> list[Node]:
        h = c.int("hidden_size")
        out = 1 if labels_of_one else num_labels(c)
        return [linear("pre_classifier", h, h, kind="output_head"), linear("classifier", h, out, kind="output_head")]

    return head


def qa_head(c: Cfg, body: Block) -> list[Node]:
    """Start and end logits: transformers refuses any other num_labels for this class."""
    labels = num_labels(c)
    if labels != 2:
        raise c.error("num_labels", f"DistilBertForQuestionAnswering needs 2 labels, got {int(labels)}")
    return [linear("qa_outputs", c.int("hidden_size"), labels, kind="output_head")]


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def notes(c: Cfg, class_name: str) -> list[str]:
    if c.bool("sinusoidal_pos_embds"):
        return ["sinusoidal_pos_embds: the position table holds fixed sinusoids but is a parameter, so it is counted"]
    return []


FAMILY = Family(
    model_type="distilbert",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="DistilBertModel",
    check=check,
    notes=notes,
    flag_fields={"intermediate_size": "hidden_dim"},
    classes={
        "DistilBertModel": base(backbone),
        "DistilBertForMaskedLM": with_head(backbone, "distilbert", mlm_head),
        "DistilBertForSequenceClassification": with_head(backbone, "distilbert", pre_classifier_head()),
        "DistilBertForMultipleChoice": with_head(backbone, "distilbert", pre_classifier_head(labels_of_one=True)),
        "DistilBertForTokenClassification": with_head(backbone, "distilbert", classifier("classifier")),
        "DistilBertForQuestionAnswering": with_head(backbone, "distilbert", qa_head),
    },
)
