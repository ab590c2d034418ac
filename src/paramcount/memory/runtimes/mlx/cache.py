"""mlx-lm's KV caches stepped through a generation, buffer by buffer (mlx_lm 0.32).

``generate_step`` (mlx_lm/generate.py) prefills the prompt in chunks of ``min(prefill_step_size,
remaining − 1)`` tokens, then runs the last prompt token and each generated one alone; after every
call ``maybe_quantize_kv_cache`` turns a cache whose offset has reached ``quantized_kv_start`` into
a ``QuantizedKVCache`` when ``kv_bits`` is set. The caches (mlx_lm/models/cache.py):

- ``KVCache.update_and_fetch``: when the new tokens overflow the buffer it grows by
  ⌈n/256⌉·256 token slots (``step`` = 256), first cut to the offset when that is not a multiple of
  256; the old buffer lives until the concatenation is done.
- ``RotatingKVCache`` (``max_size`` M, ``keep``): a chunk of n > 1 (``_update_concat``) leaves
  min(size, M − 1) + n slots; one token (``_update_in_place``) grows it by min(256, M − offset)
  until it holds M, and cuts it back to M.
- ``QuantizedKVCache`` (``KVCache.to_quantized`` quantises the whole buffer, capacity kept): per
  slot and head, ``d·bits/32`` uint32 words + ``d/group`` scales + as many biases in the keys' dtype,
  for keys and values alike; it grows as ``KVCache`` does.

A model's ``make_cache`` decides which layers get which (mlx_lm/models/llama.py and
gemma3_text.py ``Model.make_cache``: rotating caches of the sliding window on sliding layers,
``max_kv_size`` ignored); a model without one gets ``make_prompt_cache``'s (mlx_lm/models/cache.py:
``RotatingKVCache(max_kv_size, keep=4)`` for every layer when ``max_kv_size`` is given, else
``KVCache``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

STEP = 256  # KVCache.step, RotatingKVCache.step, QuantizedKVCache.step
SRC_CACHE = (
    "mlx_lm/models/cache.py KVCache.update_and_fetch, RotatingKVCache._update_concat/_update_in_place, "
    "QuantizedKVCache.update_and_fetch, KVCache.to_quantized, make_prompt_cache; mlx_lm/generate.py "
    "generate_step (prefill chunks), maybe_quantize_kv_cache"
)


@dataclass(frozen=True)
class Kind:
    """``layers`` layers caching alike: ``kv_heads`` heads of ``key_dim``/``value_dim``, in a
    ``RotatingKVCache`` of ``max_size`` (None: a ``KVCache``) keeping ``keep`` first tokens;
    ``last`` when the model's last layer is one of them."""

    layers: int
    kv_heads: int
    key_dim: int
    value_dim: int
    max_size: int | None = None
    keep: int = 0
    last: bool = True  # holds the model's last layer (whose attention a prefill chunk skips)


@dataclass(frozen=True)
class KvSettings:
    """``generate_step``'s cache settings: ``kv_bits`` (None: never quantised), ``kv_group_size``,
    ``quantized_kv_start``, ``prefill_step_size``; ``dtype_bytes`` of the activations."""

    dtype_bytes: int
    kv_bits: int | None = None
    kv_group_size: int = 64
    quantized_kv_start: int = 5000  # mlx_lm/generate.py DEFAULT_QUANTIZED_KV_START
    prefill_step_size: int = 2048  # DEFAULT_PREFILL_STEP_SIZE


def slot_bytes(kind: Kind, s: KvSettings, quantised: bool) -> int:
    """One token slot of one layer: keys and values of every KV head."""
    if not quantised:
        return kind.kv_heads * (kind.key_dim + kind.value_dim) * s.dtype_bytes
    bits, g, b = s.kv_bits or 0, s.kv_group_size, s.dtype_bytes
    return kind.kv_heads * sum(d * bits // 8 + 2 * (d // g) * b for d in (kind.key_dim, kind.value_dim))


MAX_CHUNKS = 1 << 16  # our bound, not mlx-lm's: a plan steps through at most this many prefill chunks


def calls(prompt: int, context: int, step: int) -> Iterator[tuple[int, int]]:
    """The model calls ``generate_step`` makes, as (tokens per call, calls): the prefill chunks of
    ``step`` (min(step, remaining − 1)), what is left of the prompt but its last token, that token,
    then one call per generated token until the sequence holds ``context``."""
    full = (prompt - 1) // step
    if full:
        yield step, full
    if (prompt - 1) % step:
        yield (prompt - 1) % step, 1
    yield 1, 1
    if context > prompt:
        yield 1, context - prompt


@dataclass
class State:
    """One layer's cache: ``size`` token slots held, ``offset`` tokens seen, ``quantised``."""

    size: int = 0
    offset: int = 0
    quantised: bool = False


def update(kind: Kind, st: State, n: int) -> int:
    """Apply one call of ``n`` tokens; the slots of the old buffer that live beside the new one
    while it is built (0 when the buffer is written in place)."""
    prev, old = st.offset, st.size
    st.offset += n
    if kind.max_size is None:
        if prev + n <= old:
            return 0
        base = prev if prev % STEP else old
        st.size = base + math.ceil(n / STEP) * STEP
        return old
    m = kind.max_size
    if n > 1:  # _update_concat: temporal order, cut to M − 1, append
        st.size = n if old == 0 else min(old, m - 1) + n
        return old
    if old == 0 or (prev >= old and old < m):
        st.size = old + min(STEP, m - prev)
        grown = old
    else:
        grown = 0
    st.size = min(st.size, m) if st.size > m else st.size
    return grown


def quantise(kind: Kind, st: State, s: KvSettings) -> bool:
    """maybe_quantize_kv_cache after a call: a KVCache at ``quantized_kv_start`` becomes quantised
    (RotatingKVCache.to_quantized raises NotImplementedError; the planner refuses that first)."""
    if s.kv_bits is None or st.quantised or kind.max_size is not None or st.offset < s.quantized_kv_start:
        return False
    st.quantised = True
    return True


def final_states(kinds: tuple[Kind, ...], s: KvSettings, prompt: int, context: int) -> list[State]:
    """Each kind's cache once the sequence holds ``context`` tokens."""
    states = [State() for _ in kinds]
    for n, times in calls(prompt, context, s.prefill_step_size):
        for kind, st in zip(kinds, states, strict=True):
            run(kind, st, s, n, times)
    return states


def run(kind: Kind, st: State, s: KvSettings, n: int, times: int) -> int:
    """``times`` calls of ``n`` tokens, each followed by maybe_quantize_kv_cache; the largest old
    buffer (slots) that lived beside its replacement. Single-token runs jump from one growth (or
    the quantisation) to the next instead of stepping every token."""
    grown = 0
    while times > 0:
        k = 1 if n > 1 else min(times, max(_quiet(kind, st, s), 1))
        if k > 1:
            st.offset += k - 1
            times -= k - 1
        grown = max(grown, update(kind, st, n))
        quantise(kind, st, s)
        times -= 1
    return grown


def _quiet(kind: Kind, st: State, s: KvSettings) -> int:
    """Single-token calls from here before one that grows the buffer or quantises it (that one
    included)."""
    room = st.size - st.offset if kind.max_size is None or st.size < kind.max_size else 1 << 62
    if s.kv_bits is not None and not st.quantised and kind.max_size is None:
        room = min(room, max(s.quantized_kv_start - st.offset - 1, 0))
    return room + 1


def kv_bytes(kinds: tuple[Kind, ...], s: KvSettings, states: list[State]) -> int:
    return sum(k.layers * st.size * slot_bytes(k, s, st.quantised) for k, st in zip(kinds, states, strict=True))
