"""Apertus (Swiss AI 2025): Llama's layout with per-head q/k RMSNorms, a non-gated MLP
(up, down) whose xIELU activation holds two trainable scalars per layer (``act_fn.alpha_p``,
``act_fn.alpha_n``; its ``beta`` and ``eps`` are buffers), and the norms named
``attention_layernorm`` and ``feedforward_layernorm``."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family, dense, llama, mistral
from .blocks import block, decoder_classes, linear, norm
from .config import Cfg

# ApertusConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "hidden_act": "xielu",
    "attention_bias": False,
    "tie_word_embeddings": False,
}


def mlp(c: Cfg) -> Block:
    h, inter = c.int("hidden_size"), c.int("intermediate_size")
    xielu = c.str("hidden_act") == "xielu"  # any other activation is a parameterless function
    act = Block("act_fn", (Tensor("alpha_p", (1,)), Tensor("alpha_n", (1,))), kind="feed_forward") if xielu else None
    return block(
        "mlp", linear("up_proj", h, inter, False), linear("down_proj", inter, h, False), act, kind="feed_forward"
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attn = dense.attn(c, bias=c.bool("attention_bias"), extra=dense.qk_norms(c))
    return attn, mlp(c), norm("attention_layernorm", h, bias=False), norm("feedforward_layernorm", h, bias=False)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="apertus",
    defaults=DEFAULTS,
    backbone="ApertusModel",
    check=mistral.check,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("Apertus", backbone, heads=("ForCausalLM", "ForTokenClassification")),
)

__all__ = ["FAMILY", "backbone", "layer", "mlp"]
