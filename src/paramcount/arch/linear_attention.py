"""Linear-attention token mixers and the hybrid schedules that interleave them with softmax
attention: gated DeltaNet (Qwen3-Next, Qwen3.5), Kimi delta attention (Kimi Linear) and
lightning attention (MiniMax-01), with the recurrent and convolution states each keeps.

The mixers are tagged ``kind="recurrent"``: they keep a fixed-size state, not a KV cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..ir import Block, Node, Sym, Tensor
from .blocks import block, linear, norm
from .config import Cfg

LINEAR, FULL = "linear_attention", "full_attention"
MAX_LAYERS = 1 << 16  # a per-layer schedule is a list: keep it far above any real depth but bounded


def layers(c: Cfg) -> Sym:
    """``num_hidden_layers``, bounded so that a per-layer schedule stays small."""
    return c.int("num_hidden_layers", high=MAX_LAYERS)


def layer_types(c: Cfg, default: Callable[[int], str], allowed: Sequence[str] = (LINEAR, FULL)) -> list[str]:
    """The file's ``layer_types`` (checked: one known type per layer), else ``default(i)`` per layer."""
    n = int(layers(c))
    given = c.get("layer_types", None)
    if given is None:
        return [default(i) for i in range(n)]
    if not isinstance(given, list) or len(given) != n:
        got = f"{len(given)} entries" if isinstance(given, list) else f"{given!r:.80}"
        raise c.error("layer_types", f"expected a list of {n} layer types (num_hidden_layers), got {got}")
    unknown = sorted({f"{t!r:.40}" for t in given if t not in allowed})
    if unknown:
        named = ", ".join(unknown[:3]) + (", …" if len(unknown) > 3 else "")
        raise c.error("layer_types", f"unknown layer type(s) {named}; expected {' or '.join(allowed)}")
    return list(given)


def interval_types(c: Cfg) -> list[str]:
    """Qwen3-Next / Qwen3.5: ``layer_types``, else every ``full_attention_interval``-th layer
    (default 4) full attention and the rest gated DeltaNet, as the config's ``__post_init__``."""
    if c.get("layer_types", None) is not None:
        return layer_types(c, lambda i: FULL)
    every = int(c.int("full_attention_interval", default=4))
    return layer_types(c, lambda i: FULL if (i + 1) % every == 0 else LINEAR)


# ---- gated DeltaNet (Qwen3-Next, Qwen3.5) ----------------------------------------------------


def deltanet_dims(c: Cfg) -> tuple[Sym, Sym, Sym, Sym, Sym]:
    """(key heads, value heads, key head dim, value head dim, conv kernel)."""
    return (
        c.int("linear_num_key_heads"),
        c.int("linear_num_value_heads"),
        c.int("linear_key_head_dim"),
        c.int("linear_value_head_dim"),
        c.int("linear_conv_kernel_dim"),
    )


def check_deltanet(c: Cfg) -> None:
    """The forward splits the value heads into groups per key head: they must divide."""
    nk, nv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    if nv % nk:
        raise c.error("linear_num_value_heads", f"{int(nv)} is not a multiple of linear_num_key_heads ({int(nk)})")


def depthwise_conv(channels: int, kernel: int) -> Block:
    """A causal depthwise ``nn.Conv1d`` without bias: weight (channels, 1, kernel)."""
    return Block("conv1d", (Tensor("weight", (channels, 1, kernel)),))


def gated_deltanet(c: Cfg, fused: bool) -> Block:
    """``linear_attn``: Q/K/V (and the output gate z, the β and decay inputs b and a) projected
    from h — fused as ``in_proj_qkvz``/``in_proj_ba`` (Qwen3-Next) or one projection each
    (Qwen3.5) — a depthwise conv over Q, K and V, per-value-head ``dt_bias`` and ``A_log``,
    a gated RMSNorm over each value head, and ``out_proj``."""
    h = c.int("hidden_size")
    nk, nv, dk, dv, kernel = deltanet_dims(c)
    key, value = nk * dk, nv * dv
    if fused:
        proj: tuple[Node, ...] = (
            linear("in_proj_qkvz", h, 2 * key + 2 * value, bias=False),
            linear("in_proj_ba", h, 2 * nv, bias=False),
        )
    else:
        proj = (
            linear("in_proj_qkv", h, 2 * key + value, bias=False),
            linear("in_proj_z", h, value, bias=False),
            linear("in_proj_b", h, nv, bias=False),
            linear("in_proj_a", h, nv, bias=False),
        )
    return block(
        "linear_attn",
        depthwise_conv(2 * key + value, kernel),
        Tensor("dt_bias", (nv,)),
        Tensor("A_log", (nv,)),
        norm("norm", dv, bias=False),
        linear("out_proj", value, h, bias=False),
        *proj,
        kind="recurrent",
    )


def gated_attention(c: Cfg) -> Block:
    """Qwen3-Next / Qwen3.5 full attention: q_proj twice as wide (queries and a sigmoid output
    gate per head), GQA keys and values, per-head q/k RMSNorms, partial rotary (no parameters)."""
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), c.int("head_dim")
    kv, bias = c.int("num_key_value_heads"), c.bool("attention_bias")
    return block(
        "self_attn",
        linear("q_proj", h, 2 * a * d, bias),
        linear("k_proj", h, kv * d, bias),
        linear("v_proj", h, kv * d, bias),
        linear("o_proj", a * d, h, bias),
        norm("q_norm", d, bias=False),
        norm("k_norm", d, bias=False),
        kind="attention",
    )


def check_heads(c: Cfg) -> None:
    a, kv = c.int("num_attention_heads"), c.int("num_key_value_heads")
    if a % kv:
        raise c.error("num_key_value_heads", f"{int(kv)} does not divide num_attention_heads ({int(a)})")


# ---- Kimi delta attention (Kimi Linear) ------------------------------------------------------


def kda(c: Cfg, heads: Sym, d: Sym, kernel: Sym) -> Block:
    """``self_attn`` of a KDA layer: Q/K/V projections and a depthwise conv over them, a low-rank
    per-channel forget gate (``f_a``/``f_b``, ``dt_bias`` per channel, ``A_log`` per head), the
    β projection, a low-rank output gate (``g_a``/``g_b``), a gated RMSNorm per head, ``o_proj``."""
    h = c.int("hidden_size")
    width = heads * d
    gate = block(
        "forget_gate",
        linear("f_a_proj", h, d, bias=False),
        linear("f_b_proj", d, width, bias=False),
        Tensor("dt_bias", (width,)),
        Tensor("A_log", (1, 1, heads, 1)),
    )
    return block(
        "self_attn",
        linear("q_proj", h, width, bias=False),
        linear("k_proj", h, width, bias=False),
        linear("v_proj", h, width, bias=False),
        depthwise_conv(3 * width, kernel),
        gate,
        linear("b_proj", h, heads, bias=False),
        linear("g_a_proj", h, d, bias=False),
        linear("g_b_proj", d, width, bias=False),
        norm("o_norm", d, bias=False),
        linear("o_proj", width, h, bias=False),
        kind="recurrent",
    )


# ---- lightning attention (MiniMax-01) ----------------------------------------------------------


def lightning(c: Cfg, heads: Sym, d: Sym) -> Block:
    """``self_attn`` of a lightning-attention layer: fused QKV, an RMSNorm over all heads, a
    sigmoid output gate from h and ``out_proj``; its decay slopes are buffers."""
    h, width = c.int("hidden_size"), heads * d
    return block(
        "self_attn",
        norm("norm", width, bias=False),
        linear("qkv_proj", h, 3 * width, bias=False),
        linear("out_proj", width, h, bias=False),
        linear("output_gate", h, width, bias=False),
        kind="recurrent",
    )


# ---- caches ----------------------------------------------------------------------------------


def hybrid_cache(
    c: Cfg,
    types: list[str],
    full: Callable[[int, str], list[Any]],
    states: Callable[[int, str], list[Any]],
) -> list[Any]:
    """Cache kinds of a hybrid stack: ``full(n, where)`` for its full-attention layers and
    ``states(n, where)`` for its linear ones (both give lists of ``LayerKind``)."""
    from .cache import typed_groups

    groups = typed_groups(c, "layer_types", types, len(types))
    out: list[Any] = []
    for kind, (n, where) in groups.items():
        out += full(n, where) if kind == FULL else states(n, where)
    return out


def deltanet_states(c: Cfg, n: int, where: str) -> list[Any]:
    """A gated DeltaNet layer keeps its conv input window (2·key + value channels × kernel, in
    the cache dtype) and its recurrent state (value heads × d_k × d_v, kept in fp32)."""
    from .cache import state_kind

    nk, nv, dk, dv, kernel = (int(x) for x in deltanet_dims(c))
    return [
        state_kind(n, (2 * nk * dk + nv * dv) * kernel, "conv state", where),
        state_kind(n, nv * dk * dv, "recurrent state", where, dtype="fp32"),
    ]


RECURRENT_NOTE = (
    "linear-attention layers keep a fixed-size recurrent state instead of a KV cache; "
    "transformers keeps it in fp32 whatever the model dtype"
)


def mtp_note(c: Cfg, field: str, layer: Sequence[Node]) -> list[str]:
    """Qwen3-Next and Qwen3.5 checkpoints hold multi-token-prediction weights (``mtp.*``) that
    transformers skips on load: per MTP layer one full-attention decoder layer (``layer``), plus
    ``fc`` (2h → h) and three RMSNorms, as vLLM's MTP modules build them (the embedding and
    head are the model's own). ``field`` gives their number (default 1, as vLLM reads it)."""
    n = int(c.int(field, low=0, default=1))
    if not n:
        return []
    h = int(c.int("hidden_size"))
    each = sum(node.count for node in layer) + 2 * h * h + 3 * h
    return [
        f"the published checkpoint also holds {n} multi-token-prediction layer(s) (mtp.*, {n * each:,} parameters) "
        "that the transformers model skips on load; they are not counted"
    ]
