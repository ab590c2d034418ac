"""ALBERT (Lan et al. 2019): factorised embeddings (``embedding_size``, mapped up to the hidden
size) and cross-layer sharing: parameters exist once per group
(``encoder.albert_layer_groups.G.albert_layers.J``), and all ``num_hidden_layers`` layers run
over those ``num_hidden_groups`` groups, so depth adds compute, not parameters."""

from __future__ import annotations

from ..ir import Block, Node, Tensor, Tie, join
from . import Family, roberta
from .blocks import Pooled, base, block, classifier, linear, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 30000,
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "inner_group_num": 1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "tie_word_embeddings": True,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    """AlbertLayer: attention with its output ``dense`` and LayerNorm inside one module, then
    ``ffn``/``ffn_output`` and the ``full_layer_layer_norm``."""
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    attention = block(
        "attention",
        linear("query", h, h),
        linear("key", h, h),
        linear("value", h, h),
        linear("dense", h, h),
        norm("LayerNorm", h),
        kind="attention",
    )
    return (
        norm("full_layer_layer_norm", h),
        attention,
        linear("ffn", h, i, kind="feed_forward"),
        linear("ffn_output", i, h, kind="feed_forward"),
    )


def encoder(c: Cfg) -> Block:
    """The groups are the stored layers; each holds ``inner_group_num`` distinct layers."""
    e, h = c.int("embedding_size"), c.int("hidden_size")
    inner = stack("albert_layers", c.int("inner_group_num"), *layer(c), label="inner layer")
    return block(
        "encoder",
        linear("embedding_hidden_mapping_in", e, h, kind="embeddings"),
        stack("albert_layer_groups", c.int("num_hidden_groups"), inner),
    )


def no_pooler(c: Cfg) -> tuple[Node, ...]:
    return roberta.embeddings(c, c.int("embedding_size")), encoder(c)


def pooler(c: Cfg) -> Block:
    """A bare Linear named ``pooler`` (BERT's is a module holding ``dense``)."""
    h = c.int("hidden_size")
    return linear("pooler", h, h, kind="pooler")


full = Pooled(no_pooler, pooler)


def mlm_head(c: Cfg, body: Block) -> list[Node]:
    """``predictions``: hidden → embedding_size (dense, LayerNorm), then ``decoder`` to the
    vocabulary; tied, its weight is the word table and its bias ``predictions.bias``."""
    path = "embeddings.word_embeddings.weight"
    h, e, vocab = c.int("hidden_size"), c.int("embedding_size"), c.int("vocab_size")
    tied = c.bool("tie_word_embeddings")
    decoder = block(
        "decoder",
        Tie("weight", (vocab, e), join(body.name, path)) if tied else Tensor("weight", (vocab, e)),
        Tie("bias", (vocab,), "predictions.bias") if tied else Tensor("bias", (vocab,)),
    )
    return [
        block(
            "predictions",
            Tensor("bias", (vocab,)),
            norm("LayerNorm", e),
            linear("dense", h, e),
            decoder,
            kind="output_head",
        )
    ]


def pretraining_head(c: Cfg, body: Block) -> list[Node]:
    """MLM plus sentence-order prediction, sized by num_labels (2 by default)."""
    sop = block("sop_classifier", linear("classifier", c.int("hidden_size"), num_labels(c)), kind="output_head")
    return [*mlm_head(c, body), sop]


def check(c: Cfg) -> None:
    # transformers skips its own heads-into-width check for ALBERT (the config has
    # embedding_size); the attention output then fails to fit ``dense`` at run time.
    c.divides("hidden_size", "num_attention_heads")


def notes(c: Cfg, class_name: str) -> list[str]:
    layers, groups, inner = c.int("num_hidden_layers", low=0), c.int("num_hidden_groups"), c.int("inner_group_num")
    said = [
        f"parameters are shared: {int(layers)} layers run over {int(groups)} group(s) of "
        f"{int(inner)} layer(s), each group counted once"
    ]
    if groups > layers:
        said.append(
            f"num_hidden_groups ({int(groups)}) exceeds num_hidden_layers ({int(layers)}): some groups never run, "
            "but transformers still creates (and this counts) their parameters"
        )
    return said


FAMILY = Family(
    model_type="albert",
    defaults=DEFAULTS,
    backbone="AlbertModel",
    check=check,
    notes=notes,
    classes={
        "AlbertModel": base(full),
        "AlbertForPreTraining": with_head(full, "albert", pretraining_head),
        "AlbertForMaskedLM": with_head(no_pooler, "albert", mlm_head),
        "AlbertForSequenceClassification": with_head(full, "albert", classifier("classifier")),
        "AlbertForMultipleChoice": with_head(full, "albert", roberta.choice_head),
        "AlbertForTokenClassification": with_head(no_pooler, "albert", classifier("classifier")),
        "AlbertForQuestionAnswering": with_head(no_pooler, "albert", roberta.qa_head),
    },
)
