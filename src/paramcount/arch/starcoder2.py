"""StarCoder2 (Lozhkov et al. 2024): a GQA decoder with LayerNorms (weight and bias), a
plain two-layer ``c_fc``/``c_proj`` MLP, biases everywhere behind ``use_bias``, and the
output head tied to the token embedding by default."""

from __future__ import annotations

from ..ir import Node
from . import Family, mistral
from .blocks import decoder_classes, embedding, mlp, norm, stack
from .config import Cfg

DEFAULTS = {
    "vocab_size": 49152,
    "hidden_size": 3072,
    "intermediate_size": 12288,
    "num_hidden_layers": 30,
    "num_attention_heads": 24,
    "num_key_value_heads": 2,
    "use_bias": True,
    "tie_word_embeddings": True,
}


# No question-answering head in this family.
HEADS = ("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")


def layer(c: Cfg) -> tuple[Node, ...]:
    h, bias = c.int("hidden_size"), c.bool("use_bias")
    return (
        mistral.self_attn(c, bias=bias),
        mlp("mlp", h, c.int("intermediate_size"), bias=bias, names=("c_fc", "c_proj")),
        norm("input_layernorm", h),
        norm("post_attention_layernorm", h),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("norm", h),
    )


FAMILY = Family(
    model_type="starcoder2",
    defaults=DEFAULTS,
    backbone="Starcoder2Model",
    check=mistral.check,
    classes=decoder_classes("Starcoder2", backbone, heads=HEADS),
)
