"""ELECTRA (Clark et al. 2020): a BERT encoder whose embeddings may be narrower than the
hidden size (``embedding_size``, then ``embeddings_project`` up to it), without a pooler.
The discriminator (``ElectraForPreTraining``) scores tokens; the generator
(``ElectraForMaskedLM``) projects back down to ``embedding_size`` to reuse the word table."""

from __future__ import annotations

from ..ir import Block, Node, Tensor, Tie, join
from . import Family, bert, roberta
from .blocks import base, block, classifier, linear, norm, num_labels, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 30522,
    "embedding_size": 128,
    "hidden_size": 256,
    "num_hidden_layers": 12,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "summary_type": "first",
    "summary_use_proj": True,
    "is_decoder": False,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
}


def backbone(c: Cfg) -> tuple[Node, ...]:
    """Embeddings at ``embedding_size``, projected to the hidden size only when they differ."""
    e, h = c.int("embedding_size"), c.int("hidden_size")
    project = linear("embeddings_project", e, h, kind="embeddings") if int(e) != int(h) else None
    return tuple(n for n in (roberta.embeddings(c, e), project, roberta.encoder(c)) if n is not None)


def discriminator_head(c: Cfg, body: Block) -> list[Node]:
    """One real-or-replaced score per token, after a hidden-size dense layer."""
    h = c.int("hidden_size")
    return [
        block(
            "discriminator_predictions",
            linear("dense", h, h),
            linear("dense_prediction", h, 1),
            kind="output_head",
        )
    ]


def generator_head(c: Cfg, body: Block) -> list[Node]:
    """``generator_predictions`` (hidden → embedding_size, LayerNorm), then
    ``generator_lm_head`` to the vocabulary: its weight is the word table when tied, its
    bias its own."""
    path = "embeddings.word_embeddings.weight"
    h, e, vocab = c.int("hidden_size"), c.int("embedding_size"), c.int("vocab_size")
    tied = c.bool("tie_word_embeddings")
    weight = Tie("weight", (vocab, e), join(body.name, path)) if tied else Tensor("weight", (vocab, e))
    return [
        block("generator_predictions", norm("LayerNorm", e), linear("dense", h, e), kind="output_head"),
        block("generator_lm_head", weight, Tensor("bias", (vocab,)), kind="output_head"),
    ]


def choice_head(c: Cfg, body: Block) -> list[Node]:
    """``sequence_summary.summary`` (when ``summary_use_proj``: to the labels if the file sets
    ``summary_proj_to_labels``, not a field of ElectraConfig, else to the hidden size), then
    one score per choice."""
    h = c.int("hidden_size")
    if c.str("summary_type") == "attn":
        raise c.error("summary_type", "'attn' is not implemented by transformers' ElectraSequenceSummary")
    summary = None
    if c.bool("summary_use_proj"):
        labels = num_labels(c)
        out = labels if c.bool("summary_proj_to_labels", default=False) and labels > 0 else h
        summary = block("sequence_summary", linear("summary", h, out), kind="output_head")
    return [n for n in (summary, linear("classifier", h, 1, kind="output_head")) if n is not None]


FAMILY = Family(
    model_type="electra",
    defaults=DEFAULTS,
    backbone="ElectraModel",
    check=bert.check,
    classes={
        "ElectraModel": base(backbone),
        "ElectraForPreTraining": with_head(backbone, "electra", discriminator_head),
        "ElectraForMaskedLM": with_head(backbone, "electra", generator_head),
        "ElectraForCausalLM": with_head(backbone, "electra", generator_head),
        "ElectraForSequenceClassification": with_head(backbone, "electra", roberta.classification_head),
        "ElectraForMultipleChoice": with_head(backbone, "electra", choice_head),
        "ElectraForTokenClassification": with_head(backbone, "electra", classifier("classifier")),
        "ElectraForQuestionAnswering": with_head(backbone, "electra", roberta.qa_head),
    },
)
