"""Gemma 4, text (Gemma Team 2026): Gemma 3's four-norm layer with per-head q/k norms, plus
what the config switches on.

- Global (``full_attention``) layers have their own head size and KV heads: ``global_head_dim``
  (512 unless given) and, where ``attention_k_eq_v`` holds, ``num_global_key_value_heads``;
  a file's ``per_layer_config`` (layer index → ``head_dim`` / ``num_key_value_heads``) replaces
  that rule, as ``Gemma4TextConfig.__post_init__`` does. With ``attention_k_eq_v`` a global
  layer's keys are its values: no ``v_proj``.
- The last ``num_kv_shared_layers`` layers reuse an earlier layer's keys and values: only
  ``q_proj``, ``q_norm`` and ``o_proj``, and with ``use_double_wide_mlp`` an MLP twice as wide.
- Per-layer embeddings (E2B, E4B: ``hidden_size_per_layer_input`` > 0): one packed table of
  ``vocab_size_per_layer_input × L·p`` and a projection h → L·p in the model, a gate h → p, a
  projection p → h and a norm in every layer.
- ``enable_moe_block`` (26B-A4B): beside the dense MLP, a router (projection, a scale per
  hidden unit and per expert), ``num_experts`` fused experts of ``moe_intermediate_size``,
  ``top_k_experts`` of them run per token, and three more norms.

The v-norm and the router's norm have no weight; ``layer_scalar`` and the embedding scales are
buffers. Layers alike in type, head shape, sharing and width are one stack per run.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import base, block, embedding, gated_mlp, linear, lm_head, norm, typed_stacks, with_head
from .config import Cfg, per_cfg
from .moe import experts

DEFAULTS = {
    "vocab_size": 262_144,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 30,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 512,
    "layer_types": None,
    "use_bidirectional_attention": None,
    "vocab_size_per_layer_input": 262_144,
    "hidden_size_per_layer_input": 256,
    "attention_k_eq_v": False,
    "num_kv_shared_layers": 0,
    "enable_moe_block": False,
    "use_double_wide_mlp": False,
    "num_experts": None,
    "top_k_experts": None,
    "moe_intermediate_size": None,
}
SLIDING, FULL = "sliding_attention", "full_attention"
GLOBAL_HEAD_DIM = 512  # Gemma4TextConfig.__post_init__'s global_head_dim default
LAYER_FIELDS = ("head_dim", "num_key_value_heads")  # what per_layer_config may change here


@per_cfg  # read by the check, the build, the notes and the cache layout: once per count
def layer_types(c: Cfg) -> tuple[str, ...]:
    """The file's ``layer_types``, else five sliding layers to one global; the last layer is
    global either way (``__post_init__`` forces it)."""
    n = int(c.int("num_hidden_layers"))
    given = c.get("layer_types")
    if given is None:
        types = [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    elif not isinstance(given, list) or len(given) != n or not all(t in (SLIDING, FULL) for t in given):
        got = f"{len(given)} entries" if isinstance(given, list) else repr(given)
        raise c.error("layer_types", f"expected {n} of {SLIDING!r} / {FULL!r}, got {got}")
    else:
        types = list(given)
    return (*types[:-1], FULL) if types else ()


@per_cfg
def overrides(c: Cfg) -> dict[int, dict[str, Any]]:
    """Each layer's head size and KV heads where they differ from the global fields: the file's
    ``per_layer_config``, else every global layer takes ``global_head_dim`` and, where
    ``attention_k_eq_v`` holds, ``num_global_key_value_heads``."""
    types = layer_types(c)
    table = c.raw.get("per_layer_config")
    if table is None:
        each = {"head_dim": c.int("global_head_dim", default=GLOBAL_HEAD_DIM)}
        if c.bool("attention_k_eq_v") and c.get("num_global_key_value_heads", None) is not None:
            each["num_key_value_heads"] = c.int("num_global_key_value_heads")
        return {i: each for i, t in enumerate(types) if t == FULL}
    if not isinstance(table, dict):
        raise c.error("per_layer_config", f"expected an object of layer index → fields, got {table!r:.60}")
    out: dict[int, dict[str, Any]] = {}
    for key, fields in table.items():
        index = int(key) if isinstance(key, str) and key.isdecimal() and len(key) <= 6 else -1
        if not 0 <= index < len(types) or not isinstance(fields, dict):
            raise c.error(f"per_layer_config.{key!s:.20}", "expected a layer index with an object of fields")
        other = sorted(set(fields) - set(LAYER_FIELDS))
        if other:
            raise c.error(f"per_layer_config.{key}", f"changes {', '.join(other)}, which paramcount does not model")
        sub = Cfg({**c.raw, **fields}, c.defaults, c.source, c.aliases, prefix=f"per_layer_config.{key}.")
        out[index] = {f: sub.int(f) for f in fields}
    return out


@per_cfg
def shared(c: Cfg) -> tuple[bool, ...]:
    """Which layers reuse an earlier layer's keys and values: the last num_kv_shared_layers,
    when the layers before them hold every layer type (else transformers refuses)."""
    n, k = int(c.int("num_hidden_layers")), int(c.int("num_kv_shared_layers", low=0))
    if k > n:
        raise c.error("num_kv_shared_layers", f"{k} is more than num_hidden_layers ({n})")
    types = layer_types(c)
    if k and set(types[: n - k]) != set(types):
        raise c.error("num_kv_shared_layers", "the layers before the shared ones must hold every layer type")
    return tuple(i >= n - k for i in range(n))


@per_cfg
def kinds(c: Cfg) -> tuple[tuple[str, int, int, bool], ...]:
    """(type, KV heads, head size, shares KV) of every layer."""
    extra = overrides(c)
    kv, d = c.int("num_key_value_heads"), c.int("head_dim")
    return tuple(
        (t, extra.get(i, {}).get("num_key_value_heads", kv), extra.get(i, {}).get("head_dim", d), s)
        for i, (t, s) in enumerate(zip(layer_types(c), shared(c), strict=True))
    )


def self_attn(c: Cfg, kind: tuple[str, int, int, bool]) -> Block:
    layer_type, kv, d, reuse = kind
    h, a, bias = c.int("hidden_size"), c.int("num_attention_heads"), c.bool("attention_bias")
    k_eq_v = c.bool("attention_k_eq_v") and layer_type != SLIDING
    own_kv = (
        ()
        if reuse
        else (
            linear("k_proj", h, kv * d, bias),
            None if k_eq_v else linear("v_proj", h, kv * d, bias),
            norm("k_norm", d, bias=False),
        )
    )
    return block(
        "self_attn",
        linear("q_proj", h, a * d, bias),
        norm("q_norm", d, bias=False),
        *own_kv,
        linear("o_proj", a * d, h, bias),
        kind="attention",
    )


@per_cfg
def moe(c: Cfg) -> tuple[Node, ...]:
    """The router (projection, per-unit scale, per-expert scale; its norm has no weight), the
    experts, and the MoE path's three norms."""
    h, e = c.int("hidden_size"), c.int("num_experts")
    k = c.int("top_k_experts", high=int(e))
    router = block(
        "router",
        linear("proj", h, e, bias=False),
        Tensor("scale", (h,)),
        Tensor("per_expert_scale", (e,)),
        kind="router",
    )
    return (
        router,
        experts(e, h, c.int("moe_intermediate_size"), k, checkpoint_names=None),
        *(
            norm(f, h, bias=False)
            for f in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2")
        ),
    )


@per_cfg
def per_layer_input(c: Cfg) -> tuple[Node, ...]:
    h, p = c.int("hidden_size"), c.int("hidden_size_per_layer_input", low=0)
    if not p:
        return ()
    return (
        linear("per_layer_input_gate", h, p, bias=False),
        linear("per_layer_projection", p, h, bias=False),
        norm("post_per_layer_input_norm", h, bias=False),
    )


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    wide = c.bool("use_double_wide_mlp") and kind[3]  # type: ignore[index]
    mlp = gated_mlp("mlp", h, 2 * i if wide else i)
    four = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
    return (
        self_attn(c, kind),  # type: ignore[arg-type]
        mlp,
        *(norm(n, h, bias=False) for n in four),
        *per_layer_input(c),
        *(moe(c) if c.bool("enable_moe_block") else ()),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, n, p = c.int("hidden_size"), c.int("num_hidden_layers"), c.int("hidden_size_per_layer_input", low=0)
    ple = (
        (
            embedding("embed_tokens_per_layer", c.int("vocab_size_per_layer_input"), n * p),
            linear("per_layer_model_projection", h, n * p, bias=False),
            norm("per_layer_projection_norm", p, bias=False),
        )
        if p
        else ()
    )
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        *typed_stacks("layers", kinds(c), lambda k: layer(c, k), count=n),
        norm("norm", h, bias=False),
        *ple,
    )


def check(c: Cfg) -> None:
    a = c.int("num_attention_heads")
    distinct = set(kinds(c))  # a few kinds over dozens of layers
    shapes: dict[str, set[tuple[int, int]]] = {}
    for layer_type, kv, d, _ in distinct:
        shapes.setdefault(layer_type, set()).add((int(kv), int(d)))
    for layer_type, found in shapes.items():  # rotary tables are per layer type (transformers refuses)
        if len(found) > 1:
            raise c.error("per_layer_config", f"gives {layer_type} layers different head shapes: {sorted(found)}")
    for layer_type, kv, _, _ in distinct:
        if a % kv:
            raise c.error(
                "num_key_value_heads", f"{int(kv)} KV heads do not divide {int(a)} attention heads ({layer_type})"
            )
    if c.bool("enable_moe_block"):
        for field in ("num_experts", "top_k_experts", "moe_intermediate_size"):
            if c.get(field, None) is None:
                raise c.error(field, "is needed when enable_moe_block is true")
        c.int("top_k_experts", high=int(c.int("num_experts")))


def notes(c: Cfg, cls: str) -> list[str]:
    out = []
    n_shared = sum(shared(c))
    if n_shared:
        out.append(
            f"the last {n_shared} layers reuse an earlier layer's keys and values: they hold no k_proj, v_proj "
            "or k_norm, and keep no cache of their own"
        )
    return out


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """DynamicCache: a sliding or full layer per non-shared layer, each with its own KV heads and
    head size (a global layer's keys and values are cached apart even when k_proj makes both);
    shared layers are DynamicCache's dummy layers and keep nothing."""
    from .cache import LayerKind, grouped

    w = int(c.int("sliding_window"))
    if c.get("use_bidirectional_attention") == "all":
        w = w // 2 + 1  # __post_init__ halves it (flash-attention bounds)
    own = [(t, int(kv), int(d)) if not s else None for t, kv, d, s in kinds(c)]
    out = []
    for key, (n, where) in grouped(own).items():
        if key is None:
            continue
        t, kv, d = key
        window = w if t == SLIDING else None
        out.append(LayerKind("sliding" if window else "full", n, kv, d, d, window=window, where=where))
    notes = [f"{sum(x is None for x in own)} KV-shared layers keep no cache"] if None in own else []
    return out, notes


FAMILY = Family(
    model_type="gemma4_text",
    defaults=DEFAULTS,
    backbone="Gemma4TextModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    extra_fields=("global_head_dim", "num_global_key_value_heads", "per_layer_config"),
    classes={
        "Gemma4TextModel": base(backbone),
        "Gemma4ForCausalLM": with_head(backbone, "model", lm_head("embed_tokens.weight")),
    },
)

__all__ = ["FAMILY", "backbone", "layer", "layer_types"]
