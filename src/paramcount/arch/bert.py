"""BERT (Devlin et al. 2018): learned token, segment and position embeddings, post-norm
encoder layers with biased Q/K/V/output projections, a GELU feed-forward, and a pooler."""

from __future__ import annotations

from ..ir import Block, Node, Tensor, Tie
from . import Family
from .blocks import Pooled, base, block, classifier, embedding, find, linear, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 30522,
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


def embeddings(c: Cfg) -> Block:
    h = c.int("hidden_size")
    return block(
        "embeddings",
        embedding("word_embeddings", c.int("vocab_size"), h),
        embedding("position_embeddings", c.int("max_position_embeddings"), h),
        # built even when type_vocab_size is 0: an empty (0, h) parameter, as transformers does
        embedding("token_type_embeddings", c.int("type_vocab_size", low=0), h),
        norm("LayerNorm", h),
        kind="embeddings",
    )


def attention(name: str, h: int) -> Block:
    """BertAttention: ``self.query/key/value`` then ``output.dense`` and its LayerNorm."""
    return block(
        name,
        block("self", linear("query", h, h), linear("key", h, h), linear("value", h, h)),
        block("output", linear("dense", h, h), norm("LayerNorm", h)),
        kind="attention",
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    cross = attention("crossattention", h) if c.bool("add_cross_attention") else None
    return (
        attention("attention", h),
        cross,
        block("intermediate", linear("dense", h, i), kind="feed_forward"),
        block("output", linear("dense", i, h, kind="feed_forward"), norm("LayerNorm", h)),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    if c.bool("add_cross_attention") and not c.bool("is_decoder"):
        raise c.error("add_cross_attention", "needs is_decoder: true (transformers refuses it otherwise)")


def no_pooler(c: Cfg) -> tuple[Node, ...]:
    return embeddings(c), block("encoder", stack("layer", c.int("num_hidden_layers"), *layer(c)))


def pooler(c: Cfg) -> Block:
    h = c.int("hidden_size")
    return block("pooler", linear("dense", h, h), kind="pooler")


def mlm_head(c: Cfg, body: Block, embed: str = "embeddings.word_embeddings.weight") -> list[Node]:
    """``cls.predictions``: transform (dense + LayerNorm), then the decoder back to the
    vocabulary; its weight is the word embedding and its bias ``cls.predictions.bias``
    when embeddings are tied."""
    emb = find(body, embed)
    h = c.int("hidden_size")
    tied = c.bool("tie_word_embeddings")
    decoder = block(
        "decoder",
        Tie("weight", emb.shape, f"{body.name}.{embed}") if tied else Tensor("weight", emb.shape),
        Tie("bias", emb.shape[:1], "cls.predictions.bias") if tied else Tensor("bias", emb.shape[:1]),
    )
    predictions = block(
        "predictions",
        Tensor("bias", emb.shape[:1]),
        block("transform", linear("dense", h, h), norm("LayerNorm", h)),
        decoder,
    )
    return [block("cls", predictions, kind="output_head")]


def nsp_head(c: Cfg, body: Block) -> list[Node]:
    return [block("cls", linear("seq_relationship", c.int("hidden_size"), 2), kind="output_head")]


def pretraining_head(c: Cfg, body: Block) -> list[Node]:
    (cls,) = mlm_head(c, body)
    (nsp,) = nsp_head(c, body)
    return [block("cls", *cls.children, *nsp.children, kind="output_head")]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    """Start and end logits; BERT sizes it by num_labels (2 unless the config says otherwise)."""
    return [linear("qa_outputs", c.int("hidden_size"), num_labels(c), kind="output_head")]


def choice_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("classifier", c.int("hidden_size"), 1, kind="output_head")]


full = Pooled(no_pooler, pooler)

FAMILY = Family(
    model_type="bert",
    defaults=DEFAULTS,
    backbone="BertModel",
    check=check,
    classes={
        "BertModel": base(full),
        "BertForMaskedLM": with_head(no_pooler, "bert", mlm_head),
        "BertLMHeadModel": with_head(no_pooler, "bert", mlm_head),
        "BertForPreTraining": with_head(full, "bert", pretraining_head),
        "BertForNextSentencePrediction": with_head(full, "bert", nsp_head),
        "BertForSequenceClassification": with_head(full, "bert", classifier("classifier")),
        "BertForMultipleChoice": with_head(full, "bert", choice_head),
        "BertForTokenClassification": with_head(no_pooler, "bert", classifier("classifier")),
        "BertForQuestionAnswering": with_head(no_pooler, "bert", qa_head),
    },
)
