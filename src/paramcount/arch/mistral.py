"""Mistral 7B (Jiang et al. 2023): Llama's layout with sliding-window attention (no
parameters) and no bias switches; GQA with 8 KV heads by default.

Its helpers serve the other switch-free Llama variants (Mixtral, Qwen, OLMo, StarCoder2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir import Block, Node, Sym
from . import Family, llama
from .blocks import attention, decoder_classes, gated_mlp
from .config import Cfg

DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": None,
    "tie_word_embeddings": False,
}

Layer = Callable[[Cfg], tuple[Node, ...]]


def kv_heads(c: Cfg) -> Sym:
    """``num_key_value_heads``; an explicit null means one per query head, as the config's
    ``__post_init__`` sets it (a missing field takes the family default instead)."""
    if "num_key_value_heads" in c.raw and c.raw["num_key_value_heads"] is None:
        return c.int("num_attention_heads")
    return c.opt_int("num_key_value_heads") or c.int("num_attention_heads")


def check(c: Cfg) -> None:
    if c.get("head_dim", None) is None:
        c.divides("hidden_size", "num_attention_heads")
    heads, kv = c.int("num_attention_heads"), kv_heads(c)
    if heads % kv:
        raise c.error("num_key_value_heads", f"{int(kv)} does not divide num_attention_heads ({int(heads)})")


def self_attn(c: Cfg, bias: bool = False, out_bias: bool | None = None, extra: Sequence[Node] = ()) -> Block:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    return attention("self_attn", h, a, kv_heads(c), llama.head_dim(c), bias=bias, out_bias=out_bias, extra=extra)


def swiglu(c: Cfg, inter: int | None = None, name: str = "mlp", kind: str = "feed_forward") -> Block:
    """The bias-free gate/up/down MLP (``intermediate_size`` unless told another width)."""
    return gated_mlp(name, c.int("hidden_size"), inter or c.int("intermediate_size"), kind=kind)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, self_attn(c), swiglu(c))


def backbone(c: Cfg, layer: Layer = layer) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


FAMILY = Family(
    model_type="mistral",
    defaults=DEFAULTS,
    backbone="MistralModel",
    check=check,
    classes=decoder_classes("Mistral", backbone),
)

__all__ = ["FAMILY", "backbone", "check", "kv_heads", "layer", "self_attn", "swiglu"]
