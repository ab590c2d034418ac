"""KV-cache bytes at a context length and batch size, equal to what transformers' caches hold.

What the figure means. ``kv_cache(model, T, B)`` is the bytes of the key and value tensors a
transformers 5 cache holds once each of ``B`` sequences has ``T`` tokens in it, after a
prefill of ``T`` tokens or any mix of prefill and decoding steps (the cache trims after every
update, so both give the same). With the default ``cache="dynamic"`` (``DynamicCache``, what
``generate`` and ``forward(use_cache=True)`` use) a full-attention layer holds ``T`` tokens and
a sliding-window layer ``min(T, W−1)``: once ``T ≥ W−1`` the sliding layers stop growing (the
steady state) while the full layers grow by one token a step. During the prefill forward
itself a sliding layer briefly attends over all ``T`` tokens' keys and values; that transient
is activation memory, not cache, and is not counted. ``cache="static"`` (``StaticCache`` with
``max_cache_len = T``) allocates ``T`` tokens per full layer and ``min(T, W)`` per sliding one
up front. Encoder-decoder models add a cross-attention cache of ``encoder_length`` tokens
(the source length; ``T`` is the target length).

A GGUF file gets llama.cpp's layout (:mod:`paramcount.gguf.kv`) and, by default,
llama.cpp's own allocation, ``cache="llama.cpp"``: what ``llama-server -c T·B -np B`` (or
``llama-cli -c T``) allocates with the tools' defaults (``-ub 512``, ``--swa-full`` off, a
separate stream per sequence), from src/llama-context.cpp and src/llama-kv-cache-iswa.cpp.
The context is padded up to a multiple of 256 cells (``n_ctx``), each sequence gets
``n_ctx_seq`` = ``n_ctx / B`` padded to 256 (which comes to T padded to 256), and every
full-attention layer allocates that many cells per sequence up front; a sliding-window layer
allocates ``min(n_ctx_seq, W + n_ubatch)`` padded to 256, where ``n_ubatch = min(T·B, 512)``,
since a micro-batch is written before the window is trimmed. A cell holds one token's keys
and values. The cache dtype defaults to fp16, llama.cpp's ``-ctk``/``-ctv`` default (f16).
Checked against llama.cpp's own KV buffers (tests/test_llamacpp.py, from a llama-cpp-python
run), where the llama.cpp runtime's plan (:mod:`paramcount.memory.runtimes.llamacpp.plan`) is byte-equal to this.

Cache dtypes: fp32 4 B, fp16 and bf16 2 B, fp8 1 B per element plus one fp32 scale per key
and per value tensor of each layer (transformers' ``QuantizedCache(backend="fp8")``, and
vLLM's ``kv_cache_dtype="fp8"``, keep a per-tensor scale), int8 1 B and int4 0.5 B per
element with nothing else: transformers' quanto and HQQ caches add a scale and zero-point
per group of 64 and keep the last 128 tokens unquantised, which is not modelled here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...arch.cache import COMPRESSED, MLA_FORMS, LayerKind, Layout
from ...errors import ParamcountError
from ..core.terms import Term
from .kv_layout import attention_layout

CACHE_DTYPES = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}  # bits per element
DTYPE_ALIASES = {
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
}
CACHES = ("dynamic", "static", "llama.cpp")
LLAMA_PAD = 256  # llama.cpp pads n_ctx, each sequence's share and the SWA cache to 256 cells
LLAMA_UBATCH = 512  # llama.cpp tools' default micro-batch (-ub), which the SWA cache holds beyond W
SCALE_BYTES = {"fp8": 4}  # one fp32 scale per key tensor and per value tensor, per layer
MAX_TOKENS = 1 << 30  # 1,073,741,824 tokens
MAX_BATCH = 1 << 20

__all__ = ["CACHES", "CACHE_DTYPES", "MLA_FORMS", "KVCache", "KVRow", "attention_layout", "kv_cache"]


@dataclass(frozen=True)
class KVRow:
    """One kind of layer in the cache: each of its layers keeps ``tokens`` tokens per sequence."""

    kind: LayerKind
    tokens: int
    bytes: int
    formula: str

    @property
    def label(self) -> str:
        return f"{self.kind.label}: {self.kind.layers} layer{'s' * (self.kind.layers != 1)} ({self.kind.where})"


@dataclass(frozen=True)
class KVCache:
    """The KV cache of ``batch`` sequences of ``context`` tokens (see the module docstring).

    ``per_token`` is the bytes one token adds to one sequence's cache before any window caps
    (every self-attention layer counted, cross-attention excluded, fp8 scales excluded): the
    published "KV cache per token" figure. ``per_token_at(T)`` is what the next token adds
    once ``T`` are cached, with full windows no longer growing. ``per_sequence`` is the whole
    cache of one sequence at ``context`` (``bytes`` at batch 1).
    """

    layout: Layout
    context: int
    batch: int
    dtype: str
    encoder_length: int
    cache: str
    layers: tuple[KVRow, ...]
    per_token: int
    per_sequence: int

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.layers)

    @property
    def notes(self) -> tuple[str, ...]:
        return self.layout.notes

    def per_token_at(self, context: int | None = None) -> int:
        """Bytes one more token adds to one sequence holding ``context`` tokens (default: ours)."""
        t = self.context if context is None else _count(context, "context", MAX_TOKENS - 1)
        grow = [k for k in self.layout.kinds if k.attention != "cross"]
        after = sum(_row_bytes(k, _tokens(k, t + 1, 1, 1, self.cache), 1, self.dtype) for k in grow)
        return after - sum(_row_bytes(k, _tokens(k, t, 1, 1, self.cache), 1, self.dtype) for k in grow)

    def term(self) -> Term:
        """The cache as a memory-plan term, with one part per layer kind when there are several."""
        label, assumption = self._label(), self._assumption()
        if not self.layers:
            why = "; ".join(self.notes) or "no attention layer keeps a cache"
            return Term("kv_cache", label, 0, f"0 B: {why}", assumption)
        if len(self.layers) == 1:
            return Term("kv_cache", label, self.bytes, self.layers[0].formula, assumption)
        unit = "cells per sequence" if self.cache == "llama.cpp" else "tokens"
        parts = tuple(
            Term(f"kv_cache.{_part_key(r.kind)}", r.label, r.bytes, r.formula, _part_assumption(r, unit))
            for r in self.layers
        )
        formula = " + ".join(f"{p.bytes:,}" for p in parts) + f" = {self.bytes:,} B"
        return Term("kv_cache", label, self.bytes, formula, assumption, parts=parts)

    def _label(self) -> str:
        if self.layout.source:
            tokens = f"{self.context:,} tokens + {self.encoder_length:,} {self.layout.source}"
        elif any(k.attention == "cross" for k in self.layout.kinds):
            tokens = f"{self.context:,} target + {self.encoder_length:,} source tokens"
        else:
            tokens = f"{self.context:,} tokens"
        kinds = {k.attention == "state" for k in self.layout.kinds}
        what = {frozenset({True}): "Recurrent state", frozenset({True, False}): "KV cache + recurrent state"}
        return f"{what.get(frozenset(kinds), 'KV cache')} ({self.dtype}, {tokens} × {self.batch})"

    def _assumption(self) -> str:
        said = [f"cache dtype {self.dtype}, {_size(CACHE_DTYPES[self.dtype])} per element (--kv-dtype)"]
        if self.dtype == "fp8":
            said.append("plus one fp32 scale per key and value tensor per layer")
        if self.dtype in ("int8", "int4"):
            said.append("no quantisation scales or zero-points counted")
        windows = any(k.window for k in self.layout.kinds)
        if self.cache == "llama.cpp":
            said.append(_LLAMA_RULE + (_LLAMA_SWA if windows else "") + " (--kv-cache)")
        elif windows:
            kept = "W−1" if self.cache == "dynamic" else "W"
            said.append(f"transformers {self.cache} cache: sliding layers keep min(T, {kept}) tokens (--kv-cache)")
        if self.layout.source:
            said.append(f"cross-attention layers over {self.encoder_length:,} {self.layout.source}")
        elif any(k.attention == "cross" for k in self.layout.kinds):
            said.append(f"encoder length {self.encoder_length:,} (--encoder-length)")
        if self.layout.mla:
            said.append(f"MLA {self.layout.mla} cache (--mla)")
        return "; ".join(said)


def _part_key(kind: LayerKind) -> str:
    """The term key of one row: ``kv_cache.full``, ``kv_cache.sliding``, ``kv_cache.conv_state`` …"""
    if kind.attention == "state" or kind.attention in COMPRESSED:
        return kind.stores.lower().replace(" ", "_").replace("=", "")
    if kind.stores == "k=v":
        return f"{kind.attention}_kv_shared"
    return kind.attention + ("_indexer" if kind.stores == "indexer" else "")


def _part_assumption(row: KVRow, unit: str) -> str:
    if row.kind.attention == "state":
        own = f" (kept in {row.kind.dtype} whatever --kv-dtype says)" if row.kind.dtype else ""
        return f"{row.kind.state:,} elements per layer and sequence, whatever the context{own}"
    return f"{row.tokens:,} {unit} per layer"


def kv_cache(
    model: Any,
    context: int,
    batch: int = 1,
    dtype: str | None = None,
    *,
    encoder_length: int | None = None,
    cache: str | None = None,
    mla: str = "latent",
    layout: Layout | None = None,
) -> KVCache:
    """The KV cache of ``model`` for ``batch`` sequences of ``context`` tokens, in ``dtype``.

    ``dtype`` defaults to bf16, and to fp16 (llama.cpp's f16) for a GGUF file;
    ``encoder_length`` (default: the encoder output length the model fixes, as Whisper's 1,500
    frames, else ``context``) sizes an encoder-decoder's cross-attention cache;
    ``cache`` is ``"dynamic"`` (the default) or ``"static"`` (transformers' caches), or for a
    GGUF file ``"llama.cpp"`` (its default); ``mla`` is ``"latent"`` or ``"expanded"``.
    """
    context, batch, layout, name, source, cache = _settle(
        model, context, batch, dtype, encoder_length, cache, mla, layout
    )
    rows = tuple(_row(k, context, batch, source, name, cache) for k in layout.kinds)
    one = sum(_row_bytes(k, _tokens(k, context, 1, source, cache), 1, name) for k in layout.kinds)
    per_token = -(-layout.per_token_bits(CACHE_DTYPES[name]) // 8)
    return KVCache(layout, context, batch, name, source, cache, rows, per_token, one)


def kv_bytes(
    model: Any,
    context: int,
    batch: int = 1,
    dtype: str | None = None,
    *,
    encoder_length: int | None = None,
    cache: str | None = None,
    mla: str = "latent",
    layout: Layout | None = None,
) -> int:
    """``kv_cache(...).bytes`` without writing the rows' formulas: what a fit's search asks
    hundreds of times per table."""
    context, batch, layout, name, source, cache = _settle(
        model, context, batch, dtype, encoder_length, cache, mla, layout
    )
    return sum(_row_bytes(k, _tokens(k, context, batch, source, cache), batch, name) for k in layout.kinds)


def _settle(
    model: Any,
    context: int,
    batch: int,
    dtype: str | None,
    encoder_length: int | None,
    cache: str | None,
    mla: str,
    layout: Layout | None,
) -> tuple[int, int, Layout, str, int, str]:
    """The checked context and batch, the layout, the cache dtype's name, the source length and
    the cache, as kv_cache and kv_bytes both read them."""
    context = _count(context, "context", MAX_TOKENS)
    batch = _count(batch, "batch", MAX_BATCH)
    source = context if encoder_length is None else _count(encoder_length, "encoder_length", MAX_TOKENS)
    if dtype is not None:
        cache_dtype(dtype)
    if cache is not None and cache not in CACHES:
        raise ParamcountError(f"unknown cache {cache!r}; choose one of: {', '.join(CACHES)}", field="cache")
    layout = layout or attention_layout(model, mla=mla)  # a planner passes the model's once, for every plan
    fixed = {k.source for k in layout.kinds if k.attention == "cross" and k.source}
    if encoder_length is None and fixed:  # an encoder whose output length is the model's (Whisper)
        source = max(fixed)
    llama = layout.runtime == "llama.cpp"
    cache = cache or ("llama.cpp" if llama else "dynamic")
    if cache == "llama.cpp" and not llama:
        raise ParamcountError("the llama.cpp cache is for GGUF files; choose dynamic or static", field="cache")
    if cache != "dynamic" and any(k.attention in COMPRESSED for k in layout.kinds):
        raise ParamcountError(
            f"{layout.model_type}'s compressed attention is modelled in transformers' dynamic cache only",
            field="cache",
        )
    name = cache_dtype(dtype or ("fp16" if llama else "bf16"))
    return context, batch, layout, name, source, cache


def cache_dtype(dtype: Any) -> str:
    """The canonical name of a cache dtype (``bfloat16`` → ``bf16``), or a one-line error."""
    key = dtype.strip().lower() if isinstance(dtype, str) else None
    key = DTYPE_ALIASES.get(key, key)
    if key not in CACHE_DTYPES:
        choose = ", ".join(CACHE_DTYPES)
        raise ParamcountError(f"unknown KV-cache dtype {dtype!r}; choose one of: {choose}", field="dtype")
    return key


def _count(value: Any, field: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamcountError(f"expected a whole number, got {value!r}", field=field)
    if not 1 <= value <= high:
        raise ParamcountError(f"{value:,} is out of range (must be 1..{high:,})", field=field)
    return value


def _tokens(kind: LayerKind, context: int, batch: int, source: int, cache: str) -> int:
    """Tokens each sequence keeps in one layer of ``kind`` (llama.cpp: cells allocated per sequence);
    a recurrent state keeps none, however long the context."""
    if kind.attention == "state":
        return 0
    if kind.attention == "cross":
        return source
    if kind.attention == "compressed":  # DeepseekV4HCACache.update_compressor_states: one entry per window
        return context // kind.rate
    if kind.attention == "buffer":  # store_compression_weights keeps what no full window takes
        return context % kind.rate
    if kind.attention == "overlap":  # DeepseekV4CSACache.update_overlap_state, once a window closes
        return kind.rate if context >= kind.rate else 0
    if cache == "llama.cpp":
        return llama_cells(kind, context, batch)
    if kind.window is None:
        return context
    if cache == "static":
        return min(context, kind.window)
    # DynamicSlidingWindowLayer keeps states[-W+1:]; for W = 1 that slice is [0:], everything.
    return min(context, kind.window - 1) if kind.window > 1 else context


def _pad(n: int) -> int:
    return -(-n // LLAMA_PAD) * LLAMA_PAD


def llama_cells(kind: LayerKind, context: int, batch: int) -> int:
    """Cells llama.cpp allocates per sequence in a layer of ``kind`` (see the module docstring)."""
    n_ctx_seq = _pad(_pad(context * batch) // batch)
    if kind.window is None:
        return n_ctx_seq
    n_ubatch = min(context * batch, LLAMA_UBATCH)  # n_batch = min(n_ctx, 2048), then min(n_batch, 512)
    return _pad(min(n_ctx_seq, kind.window + n_ubatch))


_LLAMA_RULE = (
    "llama.cpp cache (-c T·B -np B, -ub 512, --swa-full off): every full layer allocates n_ctx_seq = T "
    "padded up to a multiple of 256 cells per sequence"
)
_LLAMA_SWA = "; a sliding layer keeps n_swa = min(n_ctx_seq, W + min(T·B, 512)) padded to 256"


def _row_bytes(kind: LayerKind, tokens: int, batch: int, dtype: str) -> int:
    """Each layer's key and value tensors, packed whole (int4: two per byte), plus fp8 scales;
    a state kind's fixed elements, in its own dtype where it has one."""
    if kind.attention == "state":
        return kind.layers * -(-batch * kind.state * CACHE_DTYPES[kind.dtype or dtype] // 8)
    bits = CACHE_DTYPES[dtype]
    per_layer = sum(-(-batch * kind.kv_heads * tokens * d * bits // 8) for d in (kind.key_dim, kind.value_dim))
    return kind.layers * (per_layer + 2 * SCALE_BYTES.get(dtype, 0))


def _row(kind: LayerKind, context: int, batch: int, source: int, dtype: str, cache: str) -> KVRow:
    tokens = _tokens(kind, context, batch, source, cache)
    size = _row_bytes(kind, tokens, batch, dtype)
    return KVRow(kind, tokens, size, _formula(kind, tokens, batch, dtype, cache, size))


def _formula(kind: LayerKind, tokens: int, batch: int, dtype: str, cache: str, size: int) -> str:
    """``symbols × size = numbers × size = bytes``, as the row was computed."""
    n, kv, dk, dv = kind.layers, kind.kv_heads, kind.key_dim, kind.value_dim
    if kind.attention == "state":
        el = _size(CACHE_DTYPES[kind.dtype or dtype])
        return f"L · S · B × {el} = {n} · {kind.state:,} · {batch:,} × {el} = {size:,} B"
    t_sym = _tokens_symbol(kind, cache)
    if kind.stores == "mla-latent":
        sym, nums = f"L · (r_kv + d_rope) · {t_sym} · B", f"{n} · ({dk} + {dv})"
    elif kind.stores == "indexer":
        sym, nums = f"L · d_index · {t_sym} · B", f"{n} · {dk}"
    elif kind.value_dim == 0:  # one tensor: K=V, or compressed entries
        sym, nums = f"L · d · {t_sym} · B", f"{n} · {dk}"
    elif dk == dv:
        sym, nums = f"2 · L · n_kv · d_head · {t_sym} · B", f"2 · {n} · {kv} · {dk}"
    else:
        sym, nums = f"L · n_kv · (d_k + d_v) · {t_sym} · B", f"{n} · {kv} · ({dk} + {dv})"
    scale = SCALE_BYTES.get(dtype)
    scale_sym, scale_nums = (f" + 2 · L · {scale} B", f" + 2 · {n} · {scale} B") if scale else ("", "")
    el = _size(CACHE_DTYPES[dtype])
    return f"{sym} × {el}{scale_sym} = {nums} · {tokens:,} · {batch:,} × {el}{scale_nums} = {size:,} B"


def _tokens_symbol(kind: LayerKind, cache: str) -> str:
    if kind.attention == "cross":
        return "S"
    if kind.attention in COMPRESSED:
        return {"compressed": "⌊T/m⌋", "buffer": "(T mod m)", "overlap": "m"}[kind.attention]
    if cache == "llama.cpp":
        return "n_ctx_seq" if kind.window is None else "n_swa"
    if kind.window is None:
        return "T"
    return "min(T, W)" if cache == "static" else "min(T, W−1)"


def _size(bits: int) -> str:
    return f"{bits // 8} B" if bits % 8 == 0 else f"{bits / 8:g} B"


def sliding_overhang(layout: Any, context: int, batch: int, dtype: str) -> int:
    """Bytes the sliding-window layers of a dynamic cache hold beyond what they keep, right after
    a prefill of ``context`` tokens: transformers' ``DynamicSlidingWindowLayer.update`` keeps
    ``full_key_states[:, :, -W+1:]``, a view whose storage is the whole concatenation."""
    dtype = cache_dtype(dtype)
    extra = 0
    for kind in getattr(layout, "kinds", ()):
        if kind.attention == "sliding" and kind.window:
            kept = _tokens(kind, context, batch, 0, "dynamic")
            extra += _row_bytes(kind, context, batch, dtype) - _row_bytes(kind, kept, batch, dtype)
    return extra
