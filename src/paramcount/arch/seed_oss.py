"""Seed-OSS (ByteDance Seed 2025): Llama's layout with biases on the query, key and value
projections (``attention_bias``, on by default) but not on the output one
(``attention_out_bias``), an ``mlp_bias`` switch and ``head_dim`` 128 (null means h/a)."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama
from .blocks import decoder_classes, gated_mlp
from .config import Cfg

DEFAULTS = {
    "vocab_size": 155136,
    "hidden_size": 4096,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 80,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "attention_bias": True,
    "attention_out_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    attn = dense.attn(c, bias=c.bool("attention_bias"), out_bias=c.bool("attention_out_bias"))
    ff = gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=c.bool("mlp_bias"))
    return llama.rms_layer(c, attn, ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="seed_oss",
    defaults=DEFAULTS,
    backbone="SeedOssModel",
    check=dense.check_head_dim,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("SeedOss", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "layer"]
