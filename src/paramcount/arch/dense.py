"""Pieces shared by the dense Llama-like decoders of 2024–2025 (Granite, Cohere, OLMo 2/3,
SmolLM3, EXAONE 4, GLM-4, …): their KV-cache layouts, the ``layer_types`` check their config
classes make, and the post-norm layer (a norm after attention and after the MLP, none before).

Many of these configs build ``layer_types`` in ``__post_init__`` from a period ("every 4th
layer is full attention") and give ``sliding_window`` a class default, which the shared
:mod:`paramcount.arch.cache` cannot know; :func:`periodic_cache` counts such a pattern
arithmetically (never a list of ``num_hidden_layers`` entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir import Block, Node, Sym
from . import llama, mistral
from .blocks import attention, norm
from .config import Cfg

CacheLayout = Callable[[Cfg, str, str, str], tuple[list[Any], list[str]]]
HeadDim = Callable[[Cfg], Sym]


def head_dim(c: Cfg) -> Sym:
    """``head_dim``, where an explicit null means h/a as the config's ``__post_init__`` sets
    it (a missing field takes the family default instead, 128 in most of these)."""
    if "head_dim" in c.raw and c.raw["head_dim"] is None:
        return c.int("hidden_size") // c.int("num_attention_heads")
    return llama.head_dim(c)


def attn(c: Cfg, bias: bool = False, out_bias: bool | None = None, extra: tuple[Node, ...] = ()) -> Block:
    """Q, K, V and output projections of ``num_key_value_heads`` × :func:`head_dim`."""
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    return attention("self_attn", h, a, mistral.kv_heads(c), head_dim(c), bias=bias, out_bias=out_bias, extra=extra)


def qk_norms(c: Cfg, full: bool = False) -> tuple[Node, ...]:
    """RMSNorms over queries and keys: per head (``head_dim`` wide), or with ``full`` over the
    whole projection (OLMo 2 and 3: ``heads × head_dim`` and ``kv_heads × head_dim``)."""
    d = head_dim(c)
    if not full:
        return norm("q_norm", d, bias=False), norm("k_norm", d, bias=False)
    a, kv = c.int("num_attention_heads"), mistral.kv_heads(c)
    return norm("q_norm", a * d, bias=False), norm("k_norm", kv * d, bias=False)


def check_layer_types(c: Cfg) -> None:
    """What ``PreTrainedConfig.validate_layer_type`` refuses: a ``layer_types`` list of the
    wrong length or with an attention type transformers does not know."""
    types = c.raw.get("layer_types")
    if types is None:
        return
    layers = int(c.int("num_hidden_layers"))
    if not isinstance(types, list) or len(types) != layers:
        got = f"{len(types)} entries" if isinstance(types, list) else repr(types)
        raise c.error("layer_types", f"expected a list of {layers} layer types (num_hidden_layers), got {got}")
    unknown = sorted({repr(t) for t in types if t not in ("full_attention", "sliding_attention")})
    if unknown:
        raise c.error("layer_types", f"unknown layer type(s) {', '.join(unknown)}")


def check(c: Cfg) -> None:
    """Mistral's head and width checks plus the ``layer_types`` one."""
    mistral.check(c)
    check_layer_types(c)


def not_null(*fields: str) -> Callable[[Cfg], None]:
    """Refuse an explicit null in fields the config class types as plain ``int`` (its strict
    dataclass validation rejects them), then make :func:`check_head_dim`'s checks."""

    def checker(c: Cfg) -> None:
        for f in fields:
            if f in c.raw and c.raw[f] is None:
                raise c.error(f, "must be an integer (transformers' config class refuses null here)")
        check_head_dim(c)

    return checker


def check_head_dim(c: Cfg) -> None:
    """:func:`check`, for configs whose ``head_dim`` defaults to a number (null means h/a)."""
    if "head_dim" in c.raw and c.raw["head_dim"] is None:
        c.divides("hidden_size", "num_attention_heads")
    check(c)


def post_norm_layer(c: Cfg, attn: Block, ff: Block) -> tuple[Node, ...]:
    """OLMo 2's layer: RMSNorms after attention and after the MLP, none before (EXAONE 4 too)."""
    h = c.int("hidden_size")
    return attn, ff, norm("post_attention_layernorm", h, bias=False), norm("post_feedforward_layernorm", h, bias=False)


def plain_cache(head_dim: HeadDim = head_dim) -> CacheLayout:
    """A decoder whose every layer caches ``num_key_value_heads`` heads of ``head_dim(c)``;
    a file's own ``sliding_window`` or ``layer_types`` (kept as extra attributes, which
    ``DynamicCache`` honours) still apply."""

    def layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
        from .cache import self_kinds

        d = int(head_dim(c))
        return self_kinds(c, model_type, (int(mistral.kv_heads(c)), d, d))

    return layout


def periodic_cache(period: Callable[[Cfg], int], head_dim: HeadDim = head_dim) -> CacheLayout:
    """Sliding-window layers with every ``period(c)``-th layer (from ``period - 1``) full, as
    Cohere2, OLMo 3 and EXAONE 4 build ``layer_types`` when the file has none; the window is
    the file's ``sliding_window``, else the family default. A file's ``layer_types`` wins."""

    def layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
        from . import cache as kv_layout

        d, kv = int(head_dim(c)), int(mistral.kv_heads(c))
        raw = {**c.raw, "sliding_window": c.raw.get("sliding_window", c.defaults.get("sliding_window"))}
        seen = Cfg(raw, c.defaults, c.source, c.aliases)
        layers = int(c.int("num_hidden_layers"))
        if c.raw.get("layer_types") is not None:
            return kv_layout.self_kinds(seen, model_type, (kv, d, d))
        w = kv_layout.window(seen, model_type)
        groups = kv_layout._every(layers, period(c), w) if w is not None else [("full", layers, "all", None)]
        kinds = [kv_layout.LayerKind(kind, n, kv, d, d, win, where) for kind, n, where, win in groups]
        return kinds, kv_layout.window_notes(kinds)

    return layout


__all__ = [
    "attn",
    "check",
    "check_head_dim",
    "check_layer_types",
    "head_dim",
    "not_null",
    "periodic_cache",
    "plain_cache",
    "post_norm_layer",
    "qk_norms",
]
