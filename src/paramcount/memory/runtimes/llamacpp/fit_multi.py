"""What ``llama-fit-params`` chooses over several GPUs: the context, ``-ngl``, the tensor split
``-ts`` (layers per device) and the ``-ot`` overrides that leave each device's margin free.

common/fit.cpp ``common_params_fit_impl`` (llama-cpp-python 0.3.36's vendored llama.cpp) with
``nd > 1`` devices, step by step; this project's plan stands in for what llama.cpp measures
(``common_get_device_memory_data``: each device's model, context and compute buffers). No GPU
was at hand; the answers are held to ``common_fit_params`` run over two RPC devices that
allocate as ggml-cuda does (tests/fixtures/llamacpp_multidev.json: 10 of 12 identical).

1. With the defaults (``-ts`` unset: ``llama_model_base::load_tensors`` splits the layers by each
   device's free memory), nothing changes when every device keeps its margin free
   (``fit_params_target``: 1024 MiB each).
2. Else, when the devices together fall short and the context is unset: the context is
   interpolated between the floor and the full one to the summed target, less
   ``(nd + 1) · model_per_layer / 2`` (``/ 6`` for a MoE model: "only whole layers can be
   assigned to devices"), rounded down to 256 per stream; unlike one GPU, the fit goes on.
3. ``-ngl``, ``-ts`` or ``-ot`` set by hand stop it. Then the devices are filled back to
   front, the last first (it holds the output layer), each by the method of false position
   over its own layer count against its own target; a MoE model's layers keep their experts in
   host memory.
4. A MoE model whose dense weights fit: the partial layers become whole front to back, device by
   device, and one more layer tries to keep part of its feed-forward, overflowing to the next
   device (``CUDA{id+1}``) or, on the last, to the CPU.

``set_ngl_tensor_split_tbo`` gives ``-ngl`` (the sum), ``-ts`` (each device's layer count) and
the overrides, which ``tools/fit-params/fit-params.cpp`` prints (``-ts`` without its trailing
zeros, and not at all when one value is left).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ....errors import ParamcountError
from ....records import replace
from .fit import _FRACTIONS, ALL_EXPERTS, MARGIN, MIB, MIN_CTX, NO_LIMIT, FitParams, Layers, _step
from .placement import CPU

SRC = (
    "llama.cpp common/fit.cpp common_params_fit_impl (nd > 1: per-device targets, set_ngl_tensor_split_tbo);"
    " src/llama-model.cpp load_tensors (-ts unset: split by free memory); tools/fit-params/fit-params.cpp"
)
SOURCE_ONLY = (
    "no GPU at hand: the fit follows llama.cpp's source with this project's plan as its measurements (held to"
    " common_fit_params over 2 RPC devices: tests/fixtures/llamacpp_multidev.json)"
)


class _Devices:
    """``common_get_device_memory_data`` per device for a placement, cached: each GPU's model +
    context + compute (the CUDA context left out: llama.cpp finds it already taken)."""

    def __init__(self, planner: Any, frees: Sequence[int], seqs: int, hp_ngl: int):
        self.planner, self.frees, self.seqs, self.hp_ngl = planner, tuple(frees), seqs, hp_ngl
        self.names = tuple(f"CUDA{i}" for i in range(len(frees)))
        self.n_ctx = 0
        self.cache: dict[Any, tuple[int, ...]] = {}

    def measure(self, n_ctx: int, ngl: int | None, split: Sequence[float], overrides: Any) -> tuple[int, ...]:
        """Bytes per device; ``split`` all zero: load_tensors splits by free memory."""
        split = tuple(float(v) for v in split) if any(split) else tuple(float(f) for f in self.frees)
        key = (n_ctx, ngl, split, tuple(overrides))
        if key not in self.cache:
            self.cache[key] = self.per_device(self.plan(*key))
        return self.cache[key]

    def plan(self, n_ctx: int, ngl: int | None, split: tuple[float, ...], overrides: Any) -> Any:
        p = replace(self.planner.placement, gpu_layers=ngl, tensor_split=split, overrides=tuple(overrides))
        return self.planner.placed(p).plan(max(n_ctx // self.seqs, 1), self.seqs)  # -c n_ctx -np seqs

    def per_device(self, plan: Any) -> tuple[int, ...]:
        found = plan.settings["devices"]
        overhead = sum(t.bytes for t in plan.device_terms if t.key == "overhead") // len(self.names)
        return tuple(found[n] - overhead for n in self.names)

    def layers(self, per: Sequence[Layers], bufts: Sequence[str]) -> tuple[int, ...]:
        """get_memory_for_layers: the bytes per device with set_ngl_tensor_split_tbo's params."""
        return self.measure(self.n_ctx, sum(n.n_layer for n in per), [n.n_layer for n in per], self.tbo(per, bufts))

    def tbo(self, per: Sequence[Layers], bufts: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """set_ngl_tensor_split_tbo: from il0 = hp_ngl + 1 - ngl, each device's whole layers,
        then its partial ones, the first of those overflowing to ``bufts[id]`` as its
        overflow_type says, the rest's experts to the CPU (LAYER_FRACTION_MOE)."""
        il0, out = self.hp_ngl + 1 - sum(n.n_layer for n in per), []
        for n, buft in zip(per, bufts, strict=True):
            il0 += n.n_full
            for il in range(il0, il0 + n.n_part):
                first = il == il0
                out.append((_FRACTIONS[n.first if first else "moe"].format(il), buft if first else CPU))
            il0 += n.n_part
        return tuple(out)


def fit_params_multi(
    planner: Any, frees: Sequence[int], n_ctx: int | None, parallel: int, n_ctx_train: int | None, *,
    margins: Sequence[int] | None = None, min_ctx: int = MIN_CTX,
) -> FitParams:  # fmt: skip
    """llama-fit-params over ``len(frees)`` GPUs with those bytes free (see the module
    docstring); ``n_ctx``: -c as given (None: unset, the trained context per stream)."""
    from .offload import layers_of

    p0, nd = planner.placement, len(frees)
    margins = tuple(margins or (MARGIN,) * nd)
    seqs = max(1, parallel)
    streams = 1 if planner.options.kv_unified else seqs
    if n_ctx is None and n_ctx_train is None:
        raise ParamcountError("the model states no trained context for llama.cpp's default -c 0: give --context")
    n_max = n_ctx if n_ctx is not None else n_ctx_train * streams
    dev = _Devices(planner, frees, seqs, layers_of(planner).n_layer)
    steps: list[str] = []
    full = dev.measure(n_max, p0.gpu_layers, p0.tensor_split, p0.overrides)
    done = _MultiDone(dev, margins, steps, streams, n_ctx_train)
    for name, free, use, margin in zip(dev.names, frees, full, margins, strict=True):
        steps.append(f"{name}: {free // MIB:,} MiB free, projected {use // MIB:,} MiB used at -c {n_max:,}"
                     f" vs. a target of {margin // MIB:,} MiB free")  # fmt: skip
    if all(f - u >= m for f, u, m in zip(frees, full, margins, strict=True)):
        steps.append("targets for free memory can be met on all devices, no changes needed")
        return done(n_max, None, p0.tensor_split, p0.overrides)
    ctx = _context(dev, p0, n_ctx, n_max, (streams, min_ctx), full, margins, steps)
    failed = _given(p0, nd)
    if failed:
        return done(ctx, p0.gpu_layers, p0.tensor_split, p0.overrides, failed)
    dev.n_ctx = ctx
    moe = any(r.kind == "experts" for r in planner.loaded.rows)
    targets = [f - m for f, m in zip(frees, margins, strict=True)]
    surplus = _dense_surplus(dev, ctx, margins, steps) if moe else 0
    per, mem = _fill(dev, targets, moe, steps)
    bufts = [CPU] * nd
    if moe and surplus > 0:
        per, bufts = _convert(dev, per, mem, targets, steps)
    return done(ctx, sum(n.n_layer for n in per), [n.n_layer for n in per], dev.tbo(per, bufts))


def _context(
    dev: _Devices, p0: Any, n_ctx: int | None, n_max: int, limits: tuple[int, int], full: Sequence[int],
    margins: Sequence[int], steps: list[str],
) -> int:  # fmt: skip
    """Step 2 over several devices: the context the layers are then fitted at (nd > 1 never
    returns here: "entire model should be fit across devices by reducing context")."""
    streams, min_ctx = limits
    surplus = sum(dev.frees) - sum(full) - sum(margins)
    if surplus >= 0:
        return n_max
    steps.append(f"cannot meet free memory targets on all devices, need to use {-surplus // MIB:,} MiB less in total")
    floor = min_ctx * streams
    if n_ctx is not None:
        steps.append(f"context size set by user to {n_ctx:,}: no change")
        return n_ctx
    if n_max <= floor:
        steps.append(f"default model context size is {n_max:,}, <= the minimum {floor:,}: no change")
        return n_max
    model = dev.plan(n_max, p0.gpu_layers, _split(dev, p0), p0.overrides).term("weights").bytes
    moe = any(r.kind == "experts" for r in dev.planner.loaded.rows)
    n_gl = dev.hp_ngl if p0.gpu_layers is None or p0.gpu_layers < 0 else min(p0.gpu_layers, dev.hp_ngl)
    per_layer = model // max(n_gl, 1)  # sum_projected_model / min(n_gpu_layers, hp_ngl)
    nd = len(dev.frees)
    target = sum(dev.frees) - sum(margins) - (nd + 1) * per_layer // (6 if moe else 2)
    at_min = sum(dev.measure(floor, p0.gpu_layers, p0.tensor_split, p0.overrides))
    if target <= at_min:
        steps.append(f"context size reduced from {n_max:,} to {floor:,}, {(sum(full) - at_min) // MIB:,} MiB less")
        return floor
    if sum(full) <= at_min:  # C++ divides by (or interpolates over) no growth: model no answer
        raise ParamcountError("llama.cpp's fit would divide by zero: the devices hold as much at the least context")
    ctx = floor + (n_max - floor) * (target - at_min) // (sum(full) - at_min)
    ctx = max(ctx - ctx % (256 * streams), floor)  # "round down context for CUDA backend"
    steps.append(f"context size reduced from {n_max:,} to {ctx:,} (linear between {floor:,} and {n_max:,}, to the"
                 f" summed target less (nd + 1) · {per_layer // MIB:,} MiB per layer / {6 if moe else 2})")  # fmt: skip
    return ctx


def _split(dev: _Devices, p0: Any) -> tuple[float, ...]:
    return tuple(p0.tensor_split) if any(p0.tensor_split) else tuple(float(f) for f in dev.frees)


def _given(p0: Any, nd: int) -> str | None:
    """The parameters set by hand that stop the fit, in common_params_fit_impl's order."""
    if p0.gpu_layers is not None:
        return f"n_gpu_layers already set by user to {p0.gpu_layers}, abort"
    if any(p0.tensor_split[:nd]):
        return "model_params::tensor_split already set by user, abort"
    if p0.overrides:
        return "model_params::tensor_buft_overrides already set by user, abort"
    return None


def _dense_surplus(dev: _Devices, ctx: int, margins: Sequence[int], steps: list[str]) -> int:
    """global_surplus_cpu_moe: free less used less margin, summed, with every expert in host
    memory and the other parameters as given (-ts unset: split by free memory)."""
    used = dev.measure(ctx, None, (), ((ALL_EXPERTS, CPU),))
    surplus = sum(f - u - m for f, u, m in zip(dev.frees, used, margins, strict=True))
    steps.append(f"with only dense weights in device memory: a total {'surplus' if surplus > 0 else 'deficit'} of"
                 f" {abs(surplus) // MIB:,} MiB")  # fmt: skip
    return surplus


def _fill(dev: _Devices, targets: Sequence[int], moe: bool, steps: list[str]) -> tuple[list[Layers], tuple]:
    """Step 3: each device from the last, by false position on its own layer count (a MoE
    model's layers with their experts in host memory, but the output layer's device's first)."""
    nd = len(targets)
    per, bufts = [Layers()] * nd, [CPU] * nd
    mem = dev.layers(per, bufts)
    for id in reversed(range(nd)):
        n = dev.hp_ngl + 1 - sum(per[j].n_layer for j in range(id + 1, nd))
        high = list(per)
        high[id] = Layers(n, (n if id < nd - 1 else n - 1) if moe else 0)
        if n > 0:
            mem_high = dev.layers(high, bufts)
            if mem_high[id] > targets[id]:
                per, mem = _bisect_layers(dev, id, per, mem, high, mem_high, targets[id], moe)
            else:
                per, mem = high, mem_high
        steps.append(f"{dev.names[id]}: {per[id].n_layer} layers, {mem[id] // MIB:,} MiB used,"
                     f" {(dev.frees[id] - mem[id]) // MIB:,} MiB free")  # fmt: skip
    return per, mem


def _bisect_layers(dev, id, low, mem, high, mem_high, target, moe):
    """The false-position loop of step 3 on device ``id``: stop at a difference of one layer."""
    nd = len(low)
    delta = high[id].n_layer - low[id].n_layer
    while delta > 1:
        step = _step(delta, target, mem[id], mem_high[id])
        t = low[id]
        part = t.n_part + (step - 1 if id == nd - 1 and t.n_part == 0 else step) if moe else 0
        test = list(low)
        test[id] = Layers(t.n_layer + step, part, t.first)
        m = dev.layers(test, [CPU] * nd)
        if m[id] <= target:
            low, mem = test, m
        else:
            high, mem_high = test, m
        delta = high[id].n_layer - low[id].n_layer
    return low, mem


def _convert(dev: _Devices, per: list[Layers], mem: tuple, targets: Sequence[int], steps: list[str]):
    """Step 4: front to back, each device takes whole layers from the dense-only ones, then
    tries part of one more (UP, then GATE; else ATTN), overflowing to the next device."""
    nd = len(per)
    bufts = [CPU] * nd
    start = nd
    for id in reversed(range(nd)):  # id_dense_start: the first of the trailing devices with layers
        if per[id].n_layer == 0:
            break
        start = id
    id = 0
    while id <= start < nd:
        per, mem, start = _whole(dev, id, per, mem, start, targets[id], bufts)
        if start < nd and per[start].n_layer > (0 if id < nd - 1 else 1):
            per, bufts, mem, start = _one_more(dev, id, per, bufts, mem, start, targets)
        steps.append(f"{dev.names[id]}: {per[id].n_layer} layers ({per[id].n_part} overflowing),"
                     f" {mem[id] // MIB:,} MiB used, {(dev.frees[id] - mem[id]) // MIB:,} MiB free")  # fmt: skip
        id += 1
    return per, bufts


def _whole(dev, id, per, mem, start, target, bufts):
    """Step 4's false position on device ``id``'s whole layers, converted from the partial
    layers of the devices from ``start`` on."""
    nd = len(per)
    high = list(per)
    for jd in range(start, nd):
        move = high[jd].n_layer if jd < nd - 1 else high[jd].n_layer - 1
        high[id] = replace(high[id], n_layer=high[id].n_layer + move)
        high[jd] = replace(high[jd], n_layer=high[jd].n_layer - move, n_part=0)
    start_high, mem_high = nd - 1, dev.layers(high, bufts)
    if mem_high[id] <= target:
        return high, mem_high, start_high
    delta = high[id].n_full - per[id].n_full
    while delta > 1:
        step = _step(delta, target, mem[id], mem_high[id])
        test, st, done = list(per), start, 0
        while st < nd:
            c = min(step - done, test[st].n_part)
            test[st] = replace(test[st], n_layer=test[st].n_layer - c, n_part=test[st].n_part - c)
            test[id] = replace(test[id], n_layer=test[id].n_layer + c)
            done += c
            if test[st].n_part > 0:
                break
            st += 1
        m = dev.layers(test, bufts)
        if m[id] <= target:
            per, mem, start = test, m, st
        else:
            high, mem_high, start_high = test, m, st
        delta = high[id].n_full - per[id].n_full
    return per, mem, start


def _one_more(dev, id, per, bufts, mem, start, targets):
    """ "try to fit at least part of one more layer": the first partial layer of device ``id``
    overflows to the next device's buffer (the CPU on the last); accepted where both devices stay
    strictly under their targets."""
    nd = len(per)
    test, st = list(per), start
    # a last device holding only the output layer has n_part 0: C++'s uint32 n_part-- wraps, and
    # set_ngl_tensor_split_tbo's loop bound wraps with it (no pattern); -1 here gives the same
    test[st] = replace(test[st], n_layer=test[st].n_layer - 1, n_part=test[st].n_part - 1)
    test[id] = replace(test[id], n_layer=test[id].n_layer + 1, n_part=test[id].n_part + 1, first="up")
    if test[st].n_part == 0:
        st += 1
    tried = list(bufts)
    if id < nd - 1:
        tried[id] = dev.names[id + 1]

    def fits(m: tuple) -> bool:
        return m[id] < targets[id] and (id + 1 == nd or m[id + 1] < targets[id + 1])

    m = dev.layers(test, tried)
    if fits(m):
        per, bufts, mem, start = list(test), tried, m, st
        test[id] = replace(test[id], first="gate")
        m = dev.layers(test, tried)
        if fits(m):
            per, mem = list(test), m
        return per, bufts, mem, start
    test[id] = replace(test[id], first="attn")
    m = dev.layers(test, tried)
    return (list(test), tried, m, st) if fits(m) else (per, bufts, mem, start)


class _MultiDone:
    """The answer, with each device's projected use at it."""

    def __init__(self, dev: _Devices, margins: Sequence[int], steps: list[str], streams: int, n_ctx_train: Any):
        self.dev, self.margins, self.steps = dev, tuple(margins), steps
        self.streams, self.n_ctx_train = streams, n_ctx_train

    def __call__(self, n_ctx: int, ngl: int | None, split: Any, overrides: Any, failed: str | None = None):
        dev = self.dev
        plan = dev.plan(n_ctx, ngl, _split_of(dev, split), overrides)
        use = dev.per_device(plan)
        per = tuple(
            {"device": n, "free_bytes": f, "margin_bytes": m, "projected_bytes": u, "layers": None,
             "keeps_margin": f - u >= m}
            for n, f, m, u in zip(dev.names, dev.frees, self.margins, use, strict=True)
        )  # fmt: skip
        if ngl is not None and any(split):
            per = tuple({**d, "layers": int(v)} for d, v in zip(per, split, strict=True))
        said = (*_dropped(ngl, split), *_past_the_end(overrides, dev.hp_ngl), *_short(per))
        steps = (*self.steps, *((failed,) if failed else ()), *said, SOURCE_ONLY)
        most = longest_multi(dev, self.margins, self.streams, self.n_ctx_train)
        return FitParams(n_ctx, ngl, tuple(overrides), sum(use), sum(dev.frees), sum(self.margins), steps, failed,
                         plan, most, tuple(float(v) for v in split), per, SRC)  # fmt: skip


def longest_multi(dev: _Devices, margins: Sequence[int], streams: int, n_ctx_train: int | None) -> int | None:
    """The longest -c at which every layer, split by free memory (-ts unset) with the given
    -ot, leaves each GPU its margin, in steps of 256 per stream (llama_context pads n_ctx to 256
    cells); None: not even 256. A bisection: no device's bytes fall as the context grows."""
    overrides, step = dev.planner.placement.overrides, 256 * streams

    def fits(k: int) -> bool:
        used = dev.measure(k * step, None, (), overrides)
        return all(f - u >= m for f, u, m in zip(dev.frees, used, margins, strict=True))

    low, high = 0, max(-(-(n_ctx_train or NO_LIMIT) // 256), 1) + 1  # fits(low); not fits(high)
    if fits(high - 1):
        return (high - 1) * step
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low * step or None


def _short(per: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """Each device the answer leaves short of its margin. llama-fit-params checks a device only
    while it fills it (common_params_fit_impl step 3: ``mem_test[id] <= targets[id]``), so a
    device filled earlier can end short: filling the first GPU puts every layer on the GPUs,
    which turns pipeline parallelism on, and its input copies grow the last GPU's buffer
    (measured: tests/fixtures/llamacpp_multidev.json, 32 MiB short on 2 × 1,180 MiB)."""
    return tuple(
        f"{d['device']}: {(d['free_bytes'] - d['projected_bytes']) // MIB:,} MiB left free at the answer, short of its"
        f" {d['margin_bytes'] // MIB:,} MiB margin (llama-fit-params checks a device only while filling it)"
        for d in per
        if not d["keeps_margin"]
    )


def _dropped(ngl: int | None, split: Any) -> tuple[str, ...]:
    """fit-params.cpp drops -ts's trailing zeros, and -ts itself when one value is left: pasted,
    such a line has llama.cpp split by free memory instead of the fitted split. Said, not mended."""
    kept = [int(v) for v in split]
    while len(kept) > 1 and kept[-1] == 0:
        kept.pop()
    if ngl is None or len(kept) > 1 or not any(split):
        return ()
    fitted = ",".join(str(int(v)) for v in split)
    return (f"the split is {fitted}, which fit-params.cpp prints as no -ts (its trailing zeros dropped): pasted as"
            " printed, llama.cpp splits the layers by free memory instead; add -ts " + fitted,)  # fmt: skip


def _past_the_end(overrides: Any, hp_ngl: int) -> tuple[str, ...]:
    """set_ngl_tensor_split_tbo counts the output layer as layer hp_ngl, the last of the last
    device's, and puts a device's partial layers after its whole ones: a pattern can name that
    slot, which is no block."""
    past = [p for p, _ in overrides if (m := re.match(r"blk\\\.(\d+)\\\.", p)) and int(m[1]) >= hp_ngl]
    if not past:
        return ()
    said = (
        f"{past[0]} names no block (they are 0-{hp_ngl - 1}): set_ngl_tensor_split_tbo counts the output layer as"
        f" layer {hp_ngl} and puts partial layers after whole ones; llama.cpp prints it all the same, matching nothing"
    )
    return (said,)


def _split_of(dev: _Devices, split: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in split) if any(split) else tuple(float(f) for f in dev.frees)
