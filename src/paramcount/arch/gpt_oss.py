"""gpt-oss (OpenAI 2025): a pre-norm RMSNorm decoder whose attention has biased q/k/v/o
projections and a learned attention sink per head (``sinks``), alternating sliding-window and
full layers (``layer_types``, no parameters), and in every layer top-k routing over experts
with per-expert biases. transformers stores the expert weights transposed, (E, in, out), and so
do the published checkpoints (``gate_up_proj``, ``gate_up_proj_bias``, ``down_proj``,
``down_proj_bias``); the router (``mlp.router``) has a bias too.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Sym, Tensor
from . import Family, llama, moe
from .blocks import attention, block, decoder_classes
from .config import Cfg

DEFAULTS = {
    "vocab_size": 201088,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 36,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "attention_bias": True,
    "tie_word_embeddings": False,
    # attribute_map: num_experts -> num_local_experts; a file's num_experts is set last, so it wins.
    "num_experts": 128,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "layer_types": None,
}

ALIASES = {"num_experts": ("num_local_experts",)}
LAYER_TYPES = ("full_attention", "sliding_attention")


def kv_heads(c: Cfg) -> Sym:
    return c.int("num_key_value_heads")


def head_dim(c: Cfg) -> Sym:
    return c.int("head_dim")


def refuse_nulls(c: Cfg, fields: tuple[str, ...]) -> None:
    """The config class types these fields ``int``: an explicit null is refused there, where a
    missing field takes the default (and would here too, silently)."""
    for f in fields:
        if f in c.raw and c.raw[f] is None:
            raise c.error(f, "is null; the config class requires an integer")


def layer_types(c: Cfg, default: list[str], allowed: tuple[str, ...] = LAYER_TYPES) -> list[str]:
    """The file's ``layer_types`` (one per layer, as transformers validates it), else ``default``."""
    types: Any = c.get("layer_types")
    if types is None:
        return default
    layers = int(c.int("num_hidden_layers"))
    if not isinstance(types, list) or len(types) != layers:
        got = f"{len(types)} entries" if isinstance(types, list) else repr(types)
        raise c.error("layer_types", f"expected a list of {layers} layer types, got {got}")
    unknown = sorted({repr(t) for t in types if t not in allowed})
    if unknown:
        raise c.error("layer_types", f"unknown layer type(s) {', '.join(unknown)}; expected one of {allowed}")
    return types


def alternating(c: Cfg) -> list[str]:
    """GptOssConfig's default: sliding, full, sliding, full, …"""
    return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(int(c.int("num_hidden_layers")))]


def check_heads(c: Cfg, kv: Sym) -> None:
    """The KV heads divide the query heads (the width need not divide by the heads: a head
    width is then explicit or h // a, rounded down, as transformers takes it)."""
    heads = c.int("num_attention_heads")
    if heads % kv:
        raise c.error("num_key_value_heads", f"{int(kv)} does not divide num_attention_heads ({int(heads)})")


def check(c: Cfg) -> None:
    refuse_nulls(c, ("num_key_value_heads", "head_dim"))
    check_heads(c, kv_heads(c))
    moe.top_k(c, c.int("num_experts"))
    layer_types(c, [])


def self_attn(c: Cfg) -> Block:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    sinks = Tensor("sinks", (a,))  # one learned logit per head that soaks up attention mass
    return attention("self_attn", h, a, kv_heads(c), head_dim(c), bias=c.bool("attention_bias"), extra=(sinks,))


def mlp(c: Cfg) -> Block:
    h, n = c.int("hidden_size"), c.int("num_experts")
    k, inter = moe.top_k(c, n), c.int("intermediate_size")
    experts = moe.experts(n, h, inter, k, bias=True, transposed=True, checkpoint_names=None)
    return block("mlp", moe.router("router", h, n, bias=True), experts)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, self_attn(c), mlp(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Sliding layers keep the last ``sliding_window`` tokens, full layers all of them."""
    from .cache import self_kinds

    typed = Cfg({**c.raw, "layer_types": layer_types(c, alternating(c))}, c.defaults, c.source, c.aliases)
    if "sliding_window" not in c.raw:
        typed = Cfg({**typed.raw, "sliding_window": DEFAULTS["sliding_window"]}, c.defaults, c.source, c.aliases)
    d = int(head_dim(c))
    return self_kinds(typed, model_type, (int(kv_heads(c)), d, d))


FAMILY = Family(
    model_type="gpt_oss",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GptOssModel",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes(
        "GptOss", backbone, heads=("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")
    ),
)

__all__ = ["FAMILY", "alternating", "check_heads", "head_dim", "kv_heads", "layer_types", "refuse_nulls", "self_attn"]
