"""What ``llama-fit-params`` (and ``--fit on``, llama-server's and llama-cli's default) would
choose on one GPU: the context, ``-ngl`` and ``-ot`` overrides that leave llama.cpp's margin free.

A model of common/fit.cpp ``common_params_fit_impl`` as vendored by llama-cpp-python 0.3.36,
step by step, with this project's plan standing in for the allocations llama.cpp measures
(``common_get_device_memory_data``: each device's model, context and compute buffers; free
memory is the card's less the CUDA context, which llama.cpp finds already taken):

1. With the defaults (every layer, ``-c`` 0: the trained context times the sequences), nothing
   changes when the GPU keeps its margin free (``fit_params_target``: 1024 MiB).
2. Else, the context unset, above the floor (``fit_params_min_ctx``: 4096 per sequence): the
   context is interpolated between the floor and the full one to the margin, rounded down to a
   multiple of 256 per sequence; if even the floor is too much, the floor is kept.
3. Then layers, filled back to front (the output layer first) by the method of false position
   over ``-ngl``; for a MoE model, each layer past the first GPU one keeps its experts in host
   memory (``blk\\.N\\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU``, LAYER_FRACTION_MOE).
4. For a MoE model whose dense weights all fit, those partial layers are made whole again front
   to back, and one more layer tries to keep part of its feed-forward (LAYER_FRACTION_UP, then
   GATE, else ATTN).

llama.cpp stops (and the tool exits 1) when ``-ngl`` or ``-ot`` was set by hand; so does this.
Over several GPUs (``-ts``) the same function takes other paths: :mod:`.fit_multi`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ....errors import ParamcountError
from ....records import replace
from .placement import CPU, compact_overrides

MIB = 1 << 20
MARGIN = 1024 * MIB  # common.h fit_params_target: 1024 MiB per device (-fitt)
MIN_CTX = 4096  # common.h fit_params_min_ctx (-fitc)
NO_LIMIT = 1 << 30  # the search's bound for a model that states no trained context
_FRACTIONS = {  # common/fit.cpp get_overflow_pattern
    "attn": "blk\\.{}\\.ffn_(gate|up|gate_up|down).*",
    "up": "blk\\.{}\\.ffn_(gate|gate_up|down).*",
    "gate": "blk\\.{}\\.ffn_down.*",
    "moe": "blk\\.{}\\.ffn_(up|down|gate_up|gate)_(ch|)exps",
}
ALL_EXPERTS = "blk\\.\\d+\\.ffn_(up|down|gate_up|gate)_(ch|)exps"
SRC = "llama.cpp common/fit.cpp common_params_fit_impl; tools/fit-params/fit-params.cpp; common/common.h defaults"


@dataclass(frozen=True)
class Layers:
    """``ngl_t`` for one GPU: ``n_layer`` offloaded (the output layer among them), ``n_part`` of
    them with part of their weights overflowing to host memory, the first of those as ``first``."""

    n_layer: int = 0
    n_part: int = 0
    first: str = "moe"

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


@dataclass(frozen=True)
class FitParams:
    """llama-fit-params' answer: ``n_ctx`` [-c], ``ngl`` (None: left at -1) and ``overrides``
    [-ot]; ``used`` what the GPU is projected to hold of ``free``, ``margin`` llama.cpp's target;
    ``steps`` what it did, in words; ``failed``: why it gave up (the tool exits 1)."""

    n_ctx: int
    ngl: int | None
    overrides: tuple[tuple[str, str], ...]
    used: int
    free: int
    margin: int
    steps: tuple[str, ...]
    failed: str | None = None
    plan: Any = field(default=None, repr=False, compare=False)
    longest: int | None = None  # the longest -c with every layer on the GPU that leaves the margin
    tensor_split: tuple[float, ...] = ()  # several GPUs (fit_multi.py): -ts, each device's layers
    per_device: tuple[dict[str, Any], ...] = ()  # several GPUs: each one's free, margin and projected bytes
    source: str = SRC

    def arguments(self, printed: bool = False) -> str:
        """As ``llama-fit-params`` prints them: ``-c N -ngl L [-ts a,b] [-ot "..."]`` (fit-params.cpp:
        -ts as whole numbers, without its trailing zeros, and only while more than one is left),
        but ``-ot``'s per-layer patterns merged (:func:`.placement.compact_overrides`: the same
        placement in a line that pastes); ``printed``: the patterns one by one, as the tool prints them."""
        out = f"-c {self.n_ctx} -ngl {-1 if self.ngl is None else self.ngl}"
        ts = list(self.tensor_split)
        while len(ts) > 1 and ts[-1] == 0:
            ts.pop()
        if len(ts) > 1:
            out += " -ts " + ",".join(str(int(v)) for v in ts)
        if self.overrides:
            listed = ",".join(f"{p}={b}" for p, b in self.overrides)
            out += f' -ot "{listed if printed else compact_overrides(self.overrides)}"'
        return out

    def devices(self) -> dict[str, int]:
        """Where it all goes at the answer: bytes on the GPU (the CUDA context too) and in host memory."""
        if self.plan is None:
            return {}
        return dict(self.plan.settings.get("devices") or {"CUDA0": self.plan.total, "host": self.plan.host})

    def to_dict(self) -> dict[str, Any]:
        return {
            "arguments": None if self.failed else self.arguments(),
            "n_ctx": self.n_ctx,
            "n_gpu_layers": -1 if self.ngl is None else self.ngl,
            "overrides": [f"{p}={b}" for p, b in self.overrides],
            "projected_bytes": self.used,
            "free_bytes": self.free,
            "margin_bytes": self.margin,
            "longest_context_all_layers": self.longest,
            "devices": self.devices(),
            "steps": list(self.steps),
            "failed": self.failed,
            "source": self.source,
            **self._exactness(),
            **({"tensor_split": [int(v) for v in self.tensor_split], "per_device": list(self.per_device)}
               if self.per_device else {}),
        }  # fmt: skip

    def _exactness(self) -> dict[str, Any]:
        """``exact: false`` and why, where the measurements the fit stands on are estimates."""
        if self.plan is None:
            return {}
        guessed = [t.key for t in self.plan.device_terms if t.estimate]
        why = [f"the plan's {', '.join(guessed)} are estimates"] if guessed else []
        if self.per_device:
            why.append("no GPU at hand: the split follows llama.cpp's source, not its logged buffers")
        return {"exact": not why, **({"why": "; ".join(why)} if why else {})}


class _Search:
    """The measurements step 3 and 4 take: the GPU's bytes for a layer split, cached."""

    def __init__(self, planner: Any, n_ctx: int, seqs: int, hp_ngl: int):
        self.planner, self.n_ctx, self.seqs, self.hp_ngl = planner, n_ctx, seqs, hp_ngl
        self.cache: dict[Any, int] = {}

    def overrides(self, n: Layers) -> tuple[tuple[str, str], ...]:
        """set_ngl_tensor_split_tbo: patterns for the n_part layers after the n_full first ones
        (from il0 = hp_ngl + 1 - ngl: the output layer's index is hp_ngl, past the last block)."""
        il0 = self.hp_ngl + 1 - n.n_layer + n.n_full
        return tuple((_FRACTIONS[n.first if il == il0 else "moe"].format(il), CPU) for il in range(il0, il0 + n.n_part))

    def used(self, n: Layers, overrides: Any = None) -> int:
        key = (n, overrides)
        if key not in self.cache:
            tbo = self.overrides(n) if overrides is None else overrides
            gl = n.n_layer if overrides is None else None
            self.cache[key] = used(self.planner, self.n_ctx, self.seqs, gl, tbo)
        return self.cache[key]


def used(planner: Any, n_ctx: int, seqs: int, ngl: int | None, overrides: Any = ()) -> int:
    """What llama.cpp measures on the GPU (model + context + compute: memory_breakdown), the
    CUDA context left out: llama.cpp finds it already taken from the free memory."""
    p = replace(planner.placement, gpu_layers=ngl, overrides=tuple(overrides))
    plan = planner.placed(p).plan(max(n_ctx // seqs, 1), seqs)  # -c n_ctx -np seqs
    return plan.total - sum(t.bytes for t in plan.device_terms if t.key == "overhead")


def fit_target(text: str) -> tuple[int, ...]:
    """``-fitt MiB0,MiB1,...`` (common/arg.cpp: split at , and /; fewer than llama_max_devices
    values; one is broadcast to every device, several set the first devices, the rest keep
    1024 MiB), in bytes."""
    from .placement import MAX_DEVICES

    parts = [p for p in re.split(r"[,/]+", text.strip()) if p]
    if not parts or any(not p.isdecimal() or len(p) > 12 for p in parts):
        raise ParamcountError(f"expected MiB per GPU like 1024 or 512,2048, not {text!r}", field="--fit-target")
    if len(parts) >= MAX_DEVICES:
        raise ParamcountError(
            f"got {len(parts)} input configs, but system only has {MAX_DEVICES} devices", field="--fit-target"
        )
    return tuple(int(p) * MIB for p in parts)


def margins_for(given: tuple[int, ...] | None, nd: int) -> tuple[int, ...]:
    """Each device's margin from -fitt's values (common_params::fit_params_target)."""
    if not given:
        return (MARGIN,) * nd
    if len(given) == 1:
        return given * nd
    return tuple(given[i] if i < len(given) else MARGIN for i in range(nd))


def _step(delta: int, target: int, low: int, high: int) -> int:
    """``uint32_t step_size = int64_t(delta) * (target - low) / (high - low)``, clamped to
    ``[1, delta - 1]``: C's division truncates, and a negative quotient wraps as a uint32."""
    num, den = delta * (target - low), high - low
    if den == 0:  # C++ divides by zero here (SIGFPE): no answer to model
        raise ParamcountError("llama.cpp's fit would divide by zero: two placements measured the same on a GPU")
    q = abs(num) // abs(den) * (1 if (num >= 0) == (den > 0) else -1)
    return min(max(q % (1 << 32), 1), delta - 1)


def fit_params(
    planner: Any, free: int, n_ctx: int | None, parallel: int, n_ctx_train: int | None, *,
    margin: int = MARGIN, min_ctx: int = MIN_CTX,
) -> FitParams:  # fmt: skip
    """llama-fit-params on one GPU with ``free`` bytes free (see the module docstring); ``n_ctx``:
    -c as given (None: unset, the trained context ``n_ctx_train`` per sequence)."""
    p0 = planner.placement
    seqs = max(1, parallel)
    streams = 1 if planner.options.kv_unified else seqs
    if n_ctx is None and n_ctx_train is None:
        raise ParamcountError("the model states no trained context for llama.cpp's default -c 0: give --context")
    n_max = n_ctx if n_ctx is not None else n_ctx_train * streams
    steps: list[str] = []
    done = _Done(planner, free, margin, seqs, streams, steps, n_ctx_train)
    full = used(planner, n_max, seqs, p0.gpu_layers, p0.overrides)
    steps.append(f"projected to use {full // MIB:,} MiB of {free // MIB:,} MiB free at -c {n_max:,}")
    if free - full >= margin:
        steps.append(f"leaves {(free - full) // MIB:,} >= {margin // MIB:,} MiB free: no changes needed")
        return done(n_max, p0.gpu_layers, p0.overrides)
    ctx = _context(planner, n_ctx, n_max, (seqs, streams), min_ctx, free - margin, full, steps)
    if ctx > 0:
        return done(ctx, p0.gpu_layers, p0.overrides)
    ctx = -ctx
    if p0.gpu_layers is not None:
        return done(ctx, p0.gpu_layers, p0.overrides, f"n_gpu_layers already set by user to {p0.gpu_layers}, abort")
    if p0.overrides:
        return done(ctx, None, p0.overrides, "model_params::tensor_buft_overrides already set by user, abort")
    from .offload import layers_of

    search = _Search(planner, ctx, seqs, layers_of(planner).n_layer)
    moe = any(r.kind == "experts" for r in planner.loaded.rows)
    n = _dense(search, free - margin, moe, steps)
    if moe and n.n_layer > 0:
        surplus = free - search.used(Layers(), ((ALL_EXPERTS, CPU),)) - margin
        steps.append(f"with only dense weights on the GPU: a {'surplus' if surplus > 0 else 'deficit'} of"
                     f" {abs(surplus) // MIB:,} MiB")  # fmt: skip
        if surplus > 0:
            n = _whole(search, n, free - margin, steps)
    return done(ctx, n.n_layer, search.overrides(n))


def _context(
    planner: Any,
    n_ctx: int | None,
    n_max: int,
    counts: tuple[int, int],
    min_ctx: int,
    target: int,
    full: int,
    steps: list[str],
) -> int:
    """Step 2: the reduced context (> 0: it fits so) or, negated, the one layers are fitted at;
    ``counts``: the sequences and the KV streams (1 with --kv-unified)."""
    seqs, streams = counts
    floor = min_ctx * streams
    if n_ctx is not None:
        steps.append(f"context size set by user to {n_ctx:,}: no change")
        return -n_ctx
    if n_max <= floor:
        steps.append(f"trained context {n_max:,} is <= the minimum {floor:,}: no change")
        return -n_max
    at_min = used(planner, floor, seqs, planner.placement.gpu_layers, planner.placement.overrides)
    if target <= at_min or full <= at_min:
        steps.append(f"context reduced from {n_max:,} to {floor:,}, still {(at_min - target) // MIB:,} MiB over")
        return -floor
    ctx = floor + (n_max - floor) * (target - at_min) // (full - at_min)
    align = 256 * streams  # "round down context for CUDA backend, keep it divisible by the number of streams"
    ctx = max(ctx - ctx % align, floor)
    steps.append(f"context reduced from {n_max:,} to {ctx:,} (linear between {floor:,} and {n_max:,})")
    return ctx


def _dense(search: _Search, target: int, moe: bool, steps: list[str]) -> Layers:
    """Step 3: as many layers as fit, back to front (a MoE model's with their experts in host
    memory but the first), by the method of false position."""
    low = Layers()
    mem = search.used(low)
    whole = search.hp_ngl + 1
    high = Layers(whole, whole - 1 if moe else 0)
    mem_high = search.used(high)
    if mem_high <= target:
        steps.append(f"all {whole} layers fit{' with their experts in host memory' if moe else ''}")
        return high
    delta = high.n_layer - low.n_layer
    while delta > 1:
        step = _step(delta, target, mem, mem_high)
        part = low.n_part + (step - 1 if low.n_part == 0 else step) if moe else 0
        test = Layers(low.n_layer + step, part)
        m = search.used(test)
        if m <= target:
            low, mem = test, m
        else:
            high, mem_high = test, m
        delta = high.n_layer - low.n_layer
    steps.append(f"{low.n_layer} layers fit ({mem // MIB:,} MiB){', experts of ' if moe else ''}"
                 + (f"{low.n_part} of them in host memory" if moe else ""))  # fmt: skip
    return low


def _whole(search: _Search, low: Layers, target: int, steps: list[str]) -> Layers:
    """Step 4 on one GPU: the partial layers made whole front to back while they fit, then one
    more layer's feed-forward tried in part (UP, then GATE; else ATTN)."""
    mem = search.used(low)
    high = Layers(low.n_layer, 0)
    mem_high = search.used(high)
    if mem_high <= target:
        low, mem = high, mem_high
    else:
        delta = high.n_full - low.n_full
        while delta > 1:
            step = _step(delta, target, mem, mem_high)
            test = Layers(low.n_layer, low.n_part - min(step, low.n_part), low.first)
            m = search.used(test)
            if m <= target:
                low, mem = test, m
            else:
                high, mem_high = test, m
            delta = high.n_full - low.n_full
    if low.n_layer > 1:  # "try to fit at least part of one more layer"
        tried = [replace(low, first="up"), replace(low, first="gate")]
        if search.used(tried[0]) < target:
            low = tried[0]
            low = tried[1] if search.used(tried[1]) < target else low
        elif search.used(replace(low, first="attn")) < target:
            low = replace(low, first="attn")
    steps.append(f"{low.n_full} whole layers, {low.n_part} with part in host memory (first: {low.first})")
    return low


def longest(planner: Any, target: int, seqs: int, streams: int, n_ctx_train: int | None) -> int | None:
    """The longest -c at which every layer on the GPU leaves the margin, in steps of 256 per
    sequence (llama_context pads n_ctx to 256 cells: any -c between allocates as the next step);
    None: not even 256. A bisection: the GPU's bytes never fall as the context grows."""
    overrides, step = planner.placement.overrides, 256 * streams
    low, high = 0, max(-(-(n_ctx_train or NO_LIMIT) // 256), 1) + 1  # fits(low); not fits(high)
    if used(planner, (high - 1) * step, seqs, None, overrides) <= target:
        return (high - 1) * step
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if used(planner, mid * step, seqs, None, overrides) <= target else (low, mid)
    return low * step or None


class _Done:
    """The answer, with the GPU's projected use at it."""

    def __init__(
        self, planner: Any, free: int, margin: int, seqs: int, streams: int, steps: list[str], n_ctx_train: int | None
    ):
        self.planner, self.free, self.margin, self.seqs, self.streams = planner, free, margin, seqs, streams
        self.steps, self.n_ctx_train = steps, n_ctx_train

    def __call__(self, n_ctx: int, ngl: int | None, overrides: Any, failed: str | None = None) -> FitParams:
        p = replace(self.planner.placement, gpu_layers=ngl, overrides=tuple(overrides))
        plan = self.planner.placed(p).plan(max(n_ctx // self.seqs, 1), self.seqs)
        use = plan.total - sum(t.bytes for t in plan.device_terms if t.key == "overhead")
        steps = (*self.steps, *((failed,) if failed else ()))
        most = longest(self.planner, self.free - self.margin, self.seqs, self.streams, self.n_ctx_train)
        return FitParams(n_ctx, ngl, tuple(overrides), use, self.free, self.margin, steps, failed, plan, most)
