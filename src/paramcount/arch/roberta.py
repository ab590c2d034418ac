"""RoBERTa (Liu et al. 2019): BERT's encoder unchanged; what differs is the heads (``lm_head``
with its own ``layer_norm`` and a two-layer ``classifier``) and that only the bare model and
multiple choice keep the pooler. Checkpoints set ``type_vocab_size: 1`` and 514 positions.

XLM-RoBERTa, ELECTRA and ALBERT reuse the pieces below.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Node, Sym, Tensor, Tie
from . import Family, bert
from .blocks import (
    Builder,
    Pooled,
    base,
    block,
    classifier,
    embedding,
    find,
    linear,
    norm,
    num_labels,
    stack,
    with_head,
)
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50265,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "is_decoder": False,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
}

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def embeddings(c: Cfg, dim: Sym, word_tied_to: str | None = None) -> Block:
    """Word, position and segment tables of width ``dim`` (the hidden size here, the smaller
    ``embedding_size`` in ALBERT and ELECTRA). transformers builds the segment table whatever
    ``type_vocab_size`` is, even 0 (an empty parameter). ``word_tied_to`` makes the word table
    an alias of a head that owns the matrix (XLM-RoBERTa registers its head first)."""
    vocab = c.int("vocab_size")
    word = (
        block("word_embeddings", Tie("weight", (vocab, dim), word_tied_to), kind="embeddings")
        if word_tied_to
        else embedding("word_embeddings", vocab, dim)
    )
    return block(
        "embeddings",
        word,
        embedding("position_embeddings", c.int("max_position_embeddings"), dim),
        embedding("token_type_embeddings", c.int("type_vocab_size", low=0), dim),
        norm("LayerNorm", dim),
        kind="embeddings",
    )


def encoder(c: Cfg) -> Block:
    """BERT's post-norm layers (with cross-attention when the config asks for it)."""
    return block("encoder", stack("layer", c.int("num_hidden_layers"), *bert.layer(c)))


def no_pooler(c: Cfg, word_tied_to: str | None = None) -> tuple[Node, ...]:
    return embeddings(c, c.int("hidden_size"), word_tied_to), encoder(c)


full = Pooled(no_pooler, bert.pooler)


def lm_head_block(c: Cfg, decoder_weight: Node) -> Block:
    """``lm_head``: dense + ``layer_norm``, then ``decoder`` to the vocabulary, whose bias is
    ``lm_head.bias`` when embeddings are tied."""
    h, vocab = c.int("hidden_size"), c.int("vocab_size")
    tied = c.bool("tie_word_embeddings")
    decoder = block(
        "decoder",
        decoder_weight,
        Tie("bias", (vocab,), "lm_head.bias") if tied else Tensor("bias", (vocab,)),
    )
    return block(
        "lm_head",
        Tensor("bias", (vocab,)),
        linear("dense", h, h),
        norm("layer_norm", h),
        decoder,
        kind="output_head",
    )


def lm_head(c: Cfg, body: Block) -> list[Node]:
    """The head after the backbone: its decoder weight is the word embedding when tied."""
    emb = find(body, WORD_EMBEDDINGS)
    tied = c.bool("tie_word_embeddings")
    weight = Tie("weight", emb.shape, f"{body.name}.{WORD_EMBEDDINGS}") if tied else Tensor("weight", emb.shape)
    return [lm_head_block(c, weight)]


def head_first_lm(attr: str) -> Builder:
    """XLM-RoBERTa's LM classes register ``lm_head`` before the backbone, so when tied the
    matrix is ``lm_head.decoder.weight`` and the word embedding is the alias. It is still the
    vocabulary table, so it keeps the embeddings kind in the breakdown."""

    def build(c: Cfg) -> Block:
        tied = c.bool("tie_word_embeddings")
        shape = (c.int("vocab_size"), c.int("hidden_size"))
        weight = Tensor("weight", shape, kind="embeddings" if tied else None)
        alias = "lm_head.decoder.weight" if tied else None
        body = Block(attr, no_pooler(c, word_tied_to=alias), label="backbone")
        return Block("", (lm_head_block(c, weight), body))

    return build


def classification_head(c: Cfg, body: Block) -> list[Node]:
    """``classifier``: a hidden-size ``dense`` then ``out_proj`` to the labels (not a single linear)."""
    h = c.int("hidden_size")
    return [block("classifier", linear("dense", h, h), linear("out_proj", h, num_labels(c)), kind="output_head")]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    """Start and end logits, sized by num_labels (2 unless the config says otherwise)."""
    return [linear("qa_outputs", c.int("hidden_size"), num_labels(c), kind="output_head")]


def choice_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("classifier", c.int("hidden_size"), 1, kind="output_head")]


def classes(
    prefix: str, attr: str = "roberta", head_first: bool = False, body: Pooled | None = None
) -> dict[str, Builder]:
    """RoBERTa's class set under a name prefix (``XLMRoberta`` shares it and ``attr``, with
    ``head_first`` LM classes; MPNet brings its own ``body``)."""
    with_pooler = body or full
    no_pooler_ = with_pooler.body

    def wrap(body: Callable[[Cfg], tuple[Node, ...]], head: Callable[[Cfg, Block], list[Node]]) -> Builder:
        return with_head(body, attr, head)

    lm = head_first_lm(attr) if head_first else wrap(no_pooler_, lm_head)
    return {
        f"{prefix}Model": base(with_pooler),
        f"{prefix}ForCausalLM": lm,
        f"{prefix}ForMaskedLM": lm,
        f"{prefix}ForSequenceClassification": wrap(no_pooler_, classification_head),
        f"{prefix}ForMultipleChoice": wrap(with_pooler, choice_head),
        f"{prefix}ForTokenClassification": wrap(no_pooler_, classifier("classifier")),
        f"{prefix}ForQuestionAnswering": wrap(no_pooler_, qa_head),
    }


FAMILY = Family(
    model_type="roberta",
    defaults=DEFAULTS,
    backbone="RobertaModel",
    check=bert.check,
    classes=classes("Roberta"),
)
