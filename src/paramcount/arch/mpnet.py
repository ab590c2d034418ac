"""MPNet (Song et al. 2020): BERT-shaped post-norm layers whose attention projections are
named ``q``, ``k``, ``v``, ``o`` (under ``attention.attn``), no segment table, and one
relative-position bias table (buckets × heads) held by the encoder and shared by every
layer. Its heads are RoBERTa's (no causal-LM class), under the attribute ``mpnet``."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, bert, roberta
from .blocks import Pooled, block, embedding, linear, norm, stack
from .config import Cfg

DEFAULTS = {
    "vocab_size": 30527,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "relative_attention_num_buckets": 32,
    "tie_word_embeddings": True,
}


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def layer(c: Cfg) -> tuple[Node, ...]:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    attn = block("attn", linear("q", h, h), linear("k", h, h), linear("v", h, h), linear("o", h, h))
    return (
        block("attention", attn, norm("LayerNorm", h), kind="attention"),
        block("intermediate", linear("dense", h, i), kind="feed_forward"),
        block("output", linear("dense", i, h), norm("LayerNorm", h), kind="feed_forward"),
    )


def no_pooler(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    embeddings = block(
        "embeddings",
        embedding("word_embeddings", c.int("vocab_size"), h),
        embedding("position_embeddings", c.int("max_position_embeddings"), h),
        norm("LayerNorm", h),
        kind="embeddings",
    )
    # nn.Embedding(buckets, heads): one learned scalar per (distance bucket, head), for all layers.
    relative = embedding(
        "relative_attention_bias", c.int("relative_attention_num_buckets"), c.int("num_attention_heads")
    )
    relative = Block(relative.name, relative.children, kind="attention")
    encoder = block("encoder", stack("layer", c.int("num_hidden_layers"), *layer(c)), relative)
    return embeddings, encoder


CLASSES = roberta.classes("MPNet", attr="mpnet", body=Pooled(no_pooler, bert.pooler))
del CLASSES["MPNetForCausalLM"]

FAMILY = Family(
    model_type="mpnet",
    defaults=DEFAULTS,
    backbone="MPNetModel",
    check=check,
    classes=CLASSES,
)
