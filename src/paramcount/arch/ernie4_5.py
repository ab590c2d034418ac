"""ERNIE 4.5 dense (Baidu 2025): Llama's layout with one ``use_bias`` switch for every
attention and MLP projection, ``head_dim`` 128 (null means h/a) and a tied head by default."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama
from .blocks import decoder_classes, gated_mlp
from .config import Cfg

DEFAULTS = {
    "vocab_size": 103424,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 18,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "use_bias": False,
    "tie_word_embeddings": True,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    bias = c.bool("use_bias")
    ff = gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=bias)
    return llama.rms_layer(c, dense.attn(c, bias=bias), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="ernie4_5",
    defaults=DEFAULTS,
    backbone="Ernie4_5Model",
    check=dense.check_head_dim,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Ernie4_5", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "layer"]
