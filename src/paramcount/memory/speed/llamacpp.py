"""llama.cpp's speed: decode, prefill and time to first token over the memory plan's placement.

Decode (``llama_decode`` of one token per stream): the devices run their layers one after another
(``-sm layer``: ggml_backend_sched's splits, in layer order), so a step's time is the sum over
devices of ``bytes read / (bandwidth · e) + layers · c`` (each the larger of that and its FLOPs at
the family's compute share): ``e`` and ``c`` are the family's fitted ``bandwidth`` and ``layer_s``.

Prefill (``llama_decode`` of a prompt in ubatches of ``-ub`` tokens, 512 by default): the matmuls'
FLOPs at the family's share of its peak dense 16-bit rate, on the device holding each weight. A
weight left in host memory is still multiplied on the first GPU for a batch of 32 tokens or more
(ggml-cuda's ``ggml_backend_cuda_device_offload_op``: ``get_op_batch_size >= 32``), and
``ggml_backend_sched_split_graph`` copies it there once per ubatch, over PCIe. On a CPU (alone,
or the host's share of an offload that stays there) the matmuls run at the rate of the units
ggml-cpu's kernel for the weights' type uses (:func:`cpu_peak`).

Time to first token: the prompt's prefill (the first token is sampled from its last logits); with
``--parallel N`` prompts arriving together, llama-server batches them (``n_batch``), so each waits
for all N.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ParamcountError
from .factors import Fitted, family, fitted
from .figures import Figure, Part
from .work import HOST, Work

RUNTIME = "llama.cpp"
OFFLOAD_BATCH = 32  # ggml-cuda get_op_batch_size threshold: a host weight's op moves to the GPU
PEAK_DTYPES = ("fp16", "bf16", "fp32")  # the 16-bit matrix rate, else the vector rate
Table = Callable[[str, str], "Fitted | None"]


@dataclass(frozen=True)
class Setup:
    """The hardware a run uses: the GPUs in placement order (-ts, CUDA0 first), and the host CPU
    (None: not named; needed only when layers stay in host memory)."""

    gpus: tuple[Any, ...]
    cpu: Any | None = None

    def of(self, device: int | None) -> Any | None:
        return self.cpu if device is HOST else self.gpus[device]


# ggml-cpu/amx/common.h ``qtype_has_amx_kernels``: the types ggml_backend_amx_mul_mat multiplies
# on AMX tiles (tdpbusd); the others stay on the AVX-512 VNNI vec_dot kernels
AMX_TYPES = ("q4_0", "q4_1", "q8_0", "q4_k", "q5_k", "q6_k", "iq4_xs")
FLOAT_TYPES = ("fp32", "fp16", "bf16", "stored")


def peak(hw: Any, weight_type: str = "") -> float | None:
    """The peak FLOP/s of ``hw`` a prompt's matmuls in ``weight_type`` (a scheme: ``q4_k_m``,
    ``bf16``) run at: on a CPU its kernel's units (:func:`cpu_peak`); on a GPU its dense 16-bit
    matrix rate, else its vector rate; None where the catalog has none (Apple's GPUs past M2)."""
    if hw.kind == "cpu":
        return cpu_peak(hw, weight_type)
    for dtype in PEAK_DTYPES:
        if hw.flops.get(dtype):
            return float(hw.flops[dtype])
    return None


def cpu_peak(hw: Any, weight_type: str, tiles: bool = False) -> float | None:
    """The rate of the CPU units ggml-cpu's matmul uses for ``weight_type``.
    ``ggml_compute_forward_mul_mat`` converts the activations to the type's ``vec_dot_type``
    (``type_traits_cpu``): a quantised type's to Q8_0/Q8_K, whose products are int8 dot products
    (``ggml_vec_dot_q4_K_q8_K`` and the others in arch/x86/quants.c: ``mul_sum_us8_pairs_float``,
    VNNI ``vpdpbusd`` where present, else ``vpmaddubsw``; the repacked ``ggml_gemm_q4_K_8x8_q8_K``
    of repack.cpp likewise). F16 runs in fp32 after F16C's conversion (``ggml_vec_dot_f16``,
    llamafile's ``tinyBLAS``); BF16 on AVX-512 BF16's ``vdpbf16ps`` where the CPU has it
    (``ggml_vec_dot_bf16``), else in fp32. With ``tiles`` (the bound), AMX's int8 rate for the
    types of :data:`AMX_TYPES` (ggml-cpu/amx/mmq.cpp); without (the estimate), the vector units':
    the family's share was fitted on vector kernels, and AMX's tiles do not run back to back in
    ggml's kernels (the scales' f32 post-processing interleaves with them: llama.cpp PR #7707)."""
    vector = hw.vector_flops or hw.flops
    kind = weight_type.lower()
    if kind == "bf16" and vector.get("bf16"):
        return float(vector["bf16"])
    if kind in FLOAT_TYPES or not kind:
        return float(vector["fp32"]) if vector.get("fp32") else None
    if tiles and "amx_int8" in hw.features and kind.startswith(AMX_TYPES) and hw.flops.get("int8"):
        return float(hw.flops["int8"])
    return float(vector["int8"]) if vector.get("int8") else None


def ceiling(hw: Any, weight_type: str = "") -> float | None:
    """The FLOP/s no kernel passes on ``hw``, for the bounds: the largest of its 16-bit, int8
    (llama.cpp's quantised matmuls run on int8 units: ``mul_mat_q``) and fp32 rates; on a CPU the
    rate of the units its kernel for ``weight_type`` can run on (no other kernel runs that type)."""
    if hw.kind == "cpu":
        return cpu_peak(hw, weight_type, tiles=True)
    rates = [hw.flops[d] for d in ("fp16", "bf16", "int8", "fp32") if hw.flops.get(d)]
    return float(max(rates)) if rates else None


def effective(hw: Any, f: Fitted | None, weight_type: str = "") -> float | None:
    """The FLOP/s a prompt's matmuls reach: the family's fitted share of the peak, or (Apple,
    whose GPU FLOP/s are not published past M2) its fitted FLOP/s per byte/s of bandwidth."""
    if f is None:
        return None
    if f.get("flop_per_byte"):
        return f.get("flop_per_byte") * hw.bandwidth_bytes_per_s
    top, share = peak(hw, weight_type), f.get("compute")
    return top * share if top and share else None


def decode(
    work: Work, setup: Setup, depth: int, streams: int = 1, runtime: str = RUNTIME, table: Table = fitted
) -> Figure:
    """One decode step of ``streams`` sequences at ``depth`` cells of context (tokens/s per stream);
    ``table`` gives the factors (the calibration passes the ones it is trying)."""
    reads, parts, used = _step_reads(work, depth, streams), [], {}
    share = _shares(work)
    flops = work.flops(depth) * streams
    for dev, read in reads.items():
        layers = work.layers.get(dev, 0)
        if dev is HOST and read <= work.lookup * streams:  # no layer, weight or cache there
            parts.append(Part("host", read, 0, 0.0, 0.0, "embedding rows"))  # a few KB: GET_ROWS on the CPU
            continue
        hw = _hardware(setup, dev)
        f = table(runtime, family(hw))
        used[hw.key] = f
        parts.append(_decode_part(hw, f, read, round(flops * share.get(dev, 0)), layers, work.weight_type))
    return _figure("decode", parts, 1, used, work, depth, streams)  # a step: one token per stream


def _step_reads(work: Work, depth: int, streams: int) -> dict[int | None, int]:
    """Bytes one step reads per device: the weights once (of routed experts, those any of the
    streams' tokens picks: E·(1 − (1 − k/E)^N) of E for N tokens routed independently), each
    stream's KV and embedding rows."""
    out = {d: b + _more_experts(work, d, streams) for d, b in work.weights.items()}
    for dev, kv in work.kv(depth).items():
        out[dev] = out.get(dev, 0) + kv * streams
    for dev, scores in work.scores(depth).items():
        out[dev] = out.get(dev, 0) + scores * streams
    out[HOST] = out.get(HOST, 0) + work.lookup * streams
    return out


def _more_experts(work: Work, device: int | None, streams: int) -> int:
    """Routed-expert bytes ``streams`` tokens read beyond one token's k of E."""
    a = float(work.active)
    if streams == 1 or a >= 1 or work.resident is None:
        return 0
    experts = (work.resident.get(device, 0) - work.weights.get(device, 0)) / (1 - a)
    return round(experts * ((1 - (1 - a) ** streams) - a))


def _shares(work: Work) -> dict[int | None, float]:
    """Each device's share of the matmul FLOPs: its share of the weights read."""
    total = sum(work.weights.values()) or 1
    return {d: b / total for d, b in work.weights.items()}


def _hardware(setup: Setup, dev: int | None) -> Any:
    hw = setup.of(dev)
    if hw is None:
        raise ParamcountError(
            "layers or tensors stay in host memory: name the host's CPU (--cpu, e.g. 'Ryzen 9 7950X') for their speed",
            field="--cpu",
        )
    return hw


def _decode_part(hw: Any, f: Fitted | None, read: int, flops: int, layers: int, weight_type: str = "") -> Part:
    bw, top, reach = hw.bandwidth_bytes_per_s, ceiling(hw, weight_type), effective(hw, f, weight_type)
    bound_compute = flops / top if top else 0.0
    bound = max(read / bw, bound_compute)
    e, c = (f.get("bandwidth"), f.get("layer_s") or 0.0) if f else (None, 0.0)
    cpu = hw.kind == "cpu"
    if not e:
        return Part(hw.key, read, flops, None, bound, _limit(read / bw, bound_compute, 0.0), cpu)
    memory, compute = read / (bw * e), flops / reach if reach else 0.0
    seconds = max(memory, compute) + layers * c
    return Part(hw.key, read, flops, seconds, bound, _limit(memory, compute, layers * c), cpu)


def _limit(memory: float, compute: float, overhead: float) -> str:
    top = max(memory, compute, overhead)
    return "memory bandwidth" if top == memory else "compute" if top == compute else "per-layer launch/sync overhead"


def prefill(
    work: Work, setup: Setup, prompt: int, ubatch: int = 512, runtime: str = RUNTIME, table: Table = fitted
) -> Figure:
    """A prompt of ``prompt`` tokens in ubatches of ``ubatch``: FLOPs per device at its fitted
    compute share, host weights copied to the first GPU once per ubatch (prompts of 32 or more)."""
    flops, parts, used = work.prompt_flops(prompt), [], {}
    share = _shares(work)
    moved = setup.gpus and prompt >= OFFLOAD_BATCH
    if moved and work.weights.get(HOST):  # every host tensor is copied whole: a ubatch uses most experts
        host = share.pop(HOST)
        share[0] = share.get(0, 0) + host
        whole = (work.resident or work.weights)[HOST]
        parts.append(_pcie_part(whole, math.ceil(prompt / ubatch), setup.gpus[0]))
    held, ubatches = work.resident or work.weights, math.ceil(prompt / ubatch)
    scores = work.scores(prompt * (prompt + 1) // 2)  # token t scores t + 1 cells
    for dev in scores.keys() - share.keys():
        share[dev] = 0.0  # attention where no weight is (-nkvo: on the CPU)
    for dev, s in share.items():
        hw = _hardware(setup, dev)
        f = table(runtime, family(hw))
        used[hw.key] = f
        parts.append(_prefill_part(hw, f, round(flops * s), held.get(dev, 0) * ubatches, scores.get(dev, 0),
                                   work.weight_type))  # fmt: skip
    return _figure("prefill", parts, prompt, used, work, prompt, 1)


def _pcie_part(host_bytes: int, ubatches: int, gpu: Any) -> Part:
    """The host weights copied over the first GPU's PCIe link once per ubatch: the link at its
    peak, the bound; no measurement of it was fitted, so the estimate takes the bound."""
    link = gpu.pcie_bytes_per_s
    moved = host_bytes * ubatches
    if not link:
        return Part("pcie", moved, 0, None, 0.0, "PCIe (no link rate for this card)")
    return Part("pcie", moved, 0, None, moved / link, "PCIe/host memory", True)


def _prefill_part(hw: Any, f: Fitted | None, flops: int, read: int, scores: int = 0, weight_type: str = "") -> Part:
    """A device's share of a prompt: its FLOPs at the fitted share of the peak, or, where more,
    its weights read once per ubatch (all of a mixture's experts: a ubatch's tokens pick most of
    them) at the fitted share of the bandwidth; then, without flash attention, the scores moved
    through memory (separate kernels: their time adds). The bound takes each at its peak."""
    top, reach, bw = ceiling(hw, weight_type), effective(hw, f, weight_type), hw.bandwidth_bytes_per_s
    e = f.get("bandwidth") if f else None
    share = e or 1.0  # no fitted factor: the peak
    weights, moved = read / (bw * share), scores / (bw * share)
    compute = flops / reach if reach else None
    bound = max(flops / top, read / bw) + scores / bw if top else None  # no FLOP/s in the catalog: no bound
    seconds = None if compute is None else max(compute, weights) + moved
    limit = "memory bandwidth" if compute is not None and weights + moved > compute else "compute"
    if not top and not reach:
        limit = "compute (no FLOP/s figure)"
    return Part(hw.key, read + scores, flops, seconds, bound, limit, hw.kind == "cpu")


def ttft(pre: Figure, streams: int = 1) -> Figure:
    """Time to the first token: the prompt's prefill; ``streams`` prompts batched together finish
    together, after all of them."""
    seconds = None if pre.seconds is None else pre.seconds * streams
    bound = None if pre.bound_seconds is None else pre.bound_seconds * streams
    return Figure("ttft", seconds, bound, 1, pre.bound_by, pre.parts, pre.terms,
                  pre.factors, pre.error, pre.why)  # fmt: skip


def _figure(phase: str, parts: Sequence[Part], tokens: int, used: dict, work: Work, depth: int, streams: int) -> Figure:
    """The parts summed: the devices run one after another. A host part (a CPU's, the PCIe copies)
    with no fitted factor is taken at its peak: the estimate says so and carries no error."""
    if not parts:  # nothing placed to run (a plan of weights alone): no figure, and why
        return Figure(phase, None, None, tokens, "nothing", why="no layer is placed on any device to run")
    missing = [p for p in parts if p.seconds is None]
    host_only = missing and all(p.host and p.bound_seconds for p in missing)
    seconds = None if missing and not host_only else sum(p.seconds or p.bound_seconds or 0.0 for p in parts)
    bound = None if any(p.bound_seconds is None for p in parts) else sum(p.bound_seconds for p in parts)
    worst = max(parts, key=lambda p: p.seconds if p.seconds is not None else p.bound_seconds or 0.0)
    binds = worst.limit if worst.device in ("host", "pcie") else f"{worst.limit} ({worst.device})"
    if worst.host and worst.limit == "memory bandwidth":
        binds = f"host memory ({worst.device})"
    names = ", ".join(p.device for p in missing)
    why = f"no factor fitted for {names}: only the bound" if missing else ""
    if any(p.bound_seconds is None for p in missing):
        why = f"no FLOP/s figure for {names} in the catalog and no factor fitted: neither an estimate nor a bound"
    main = max((p for p in parts if p.device in used), key=lambda p: p.bytes + p.flops, default=None)
    f = used.get(main.device) if main else None
    error = f.expected(phase) if f and not missing else None
    families = sorted({used[p.device].family for p in parts if used.get(p.device)})
    if len(families) > 1:  # each part's factors come from single-family runs: none measured the mix
        error = None
        why = why or (
            f"the model is split across {' and '.join(families)}: each part's factors were fitted on runs of one "
            "family, none on such a split, so the estimate's error is unknown"
        )
    if host_only:
        why = f"{names} at its peak (no measurement of it was fitted): the estimate is optimistic, its error unknown"
    return Figure(phase, seconds, bound, tokens, binds, tuple(parts), _terms(work, depth, streams, phase),
                  _factors(used, phase), error, why)  # fmt: skip


def _terms(work: Work, depth: int, streams: int, phase: str) -> dict[str, Any]:
    if phase == "prefill":
        return {"prompt_tokens": depth, "flops": work.prompt_flops(depth), "matmul_params": work.matmul_params}
    kv = work.kv(depth)
    return {
        "context_depth": depth,
        "streams": streams,
        "bytes_read_per_step": {
            "weights": sum(work.weights.values()),
            "kv_cache": sum(kv.values()) * streams,
            "embedding_rows": work.lookup * streams,
        },
        "flops_per_token": work.flops(depth),
        "routed_expert_share_read": str(work.active),
    }


def _factors(used: dict, phase: str) -> tuple[dict[str, Any], ...]:
    names = ("bandwidth", "layer_s", "compute") if phase == "decode" else ("compute", "flop_per_byte")
    out = []
    for key, f in used.items():
        if f is None:
            continue
        for n in names:
            if f.get(n) is not None:
                src = "factors.json (tools/speed_calibration/fit.py) over " + ", ".join(f.sources)
                out.append({"device": key, "term": n, "value": f.get(n), "runtime": f.runtime, "family": f.family,
                            "source": src})  # fmt: skip
    return tuple(out)
