"""GLM-4-0414 (Zhipu AI 2025): Llama's layout with biases on the query, key and value
projections (``attention_bias``, on by default; none on the output one), the gate and up
projections fused into one ``gate_up_proj`` (h → 2I), four RMSNorms a layer (before and after
attention and the MLP) and ``head_dim`` 128; partial rotary changes no parameter."""

from __future__ import annotations

from ..ir import Node
from . import Family, dense, llama
from .blocks import block, decoder_classes, linear, norm
from .config import Cfg

DEFAULTS = {
    "vocab_size": 151552,
    "hidden_size": 4096,
    "intermediate_size": 13696,
    "num_hidden_layers": 40,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "attention_bias": True,
    "tie_word_embeddings": False,
}

NORMS = ("input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm", "post_mlp_layernorm")


def layer(c: Cfg) -> tuple[Node, ...]:
    h, inter = c.int("hidden_size"), c.int("intermediate_size")
    attn = dense.attn(c, bias=c.bool("attention_bias"), out_bias=False)
    mlp = block(
        "mlp", linear("gate_up_proj", h, 2 * inter, False), linear("down_proj", inter, h, False), kind="feed_forward"
    )
    return (attn, mlp, *(norm(n, h, bias=False) for n in NORMS))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


HEADS = ("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")

FAMILY = Family(
    model_type="glm4",
    defaults=DEFAULTS,
    backbone="Glm4Model",
    check=dense.not_null("head_dim", "num_key_value_heads"),
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Glm4", backbone, heads=HEADS),
)

__all__ = ["FAMILY", "backbone", "layer"]
