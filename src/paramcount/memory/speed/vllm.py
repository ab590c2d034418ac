"""vLLM's speed: continuous batching of N streams with chunked prefill, fitted on measured serving runs.

vLLM's scheduler (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``) gives every running
request one token a step, in one forward pass over all of them (CUDA graphs replay it), then fills
what is left of the step's token budget (``--max-num-batched-tokens``) with waiting prompts,
chunking the one that does not fit. So, per tensor-parallel rank:

* a **decode step** of N streams at depth T takes ``a·B/bandwidth + b·F/peak + c·L``: B the bytes
  it reads (the weight shard once, each stream's KV at depth T, the embedding rows looked up), F
  the FLOPs of N tokens, L the layers (``c``: what each layer adds beyond its reads and FLOPs: the
  tensor-parallel all-reduces, norms, kernel launches);
* a **prompt** of P tokens does its causal FLOPs at ``g`` × their time at the peaks: the weights'
  matmuls at the scheme's (fp8 weights: the fp8 matrix rate, vLLM's CUTLASS fp8 GEMM; else the
  16-bit one), attention's at the KV cache's (an fp8 cache: fp8, FlashAttention 3 computing in it;
  else 16-bit);
* under a steady load each stream's next prompt is prefilled inside the others' steps, so a
  measured time per output token adds ``(N / output) · prefill(P)``; the decode figure here is the
  step alone (the calibration subtracts that share from each measurement before fitting, with the
  run's own output length), and the time to first token is ``t0 + prefill(P)·(1 + q·(N − 1))``
  (``t0``: the server's own time per request; ``q``: how much of the other streams' prefill work a
  prompt waits behind on average).

``a``, ``b``, ``c``, ``g``, ``t0`` and ``q`` are fitted per hardware family by
``tools/speed_calibration/fit.py`` on AIConfigurator's measured vLLM runs
(``tools/speed_calibration/vllm.csv``); :mod:`.factors` keeps them as ``bandwidth`` (1/a),
``decode_compute`` (1/b), ``layer_s`` (c), ``compute`` (1/g), ``request_s`` (t0) and ``queue`` (q).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .factors import Fitted
from .figures import Figure, Part
from .work import Work

SOURCE = "factors.json (tools/speed_calibration/fit.py) over "


@dataclass(frozen=True)
class Step:
    """One decode step's work on a rank, as seconds at the peaks: its reads at the full bandwidth
    (``memory``), its FLOPs at the scheme's peak (``compute``), and its repeating layers."""

    memory: float
    compute: float
    layers: int
    bytes: int
    flops: int
    ranks: int = 1  # tensor-parallel ranks: each layer's two all-reduces when more than one


def peak(hw: Any, scheme: str) -> float | None:
    """The matrix FLOP/s a scheme's GEMMs run at on ``hw``: fp8 weights on the fp8 units (vLLM's
    Fp8LinearMethod), others on the 16-bit ones."""
    for dtype in (("fp8",) if scheme.startswith("fp8") else ()) + ("bf16", "fp16"):
        if hw.flops.get(dtype):
            return float(hw.flops[dtype])
    return None


def attention_peak(hw: Any, work: Work) -> float | None:
    """The FLOP/s attention's products run at: the fp8 units over an fp8 KV cache (FlashAttention 3
    computes in the cache's fp8, queries quantised too: vLLM's docs, features/quantization/
    quantized_kvcache.md), else the 16-bit ones, whatever the weights' scheme."""
    return peak(hw, "fp8" if work.kv_element_bytes == 1 else "bf16")


def _seconds(flops: int, top: float | None) -> float:
    return flops / top if top else 0.0


def step(work: Work, hw: Any, scheme: str, depth: int, streams: int, ranks: int = 1) -> Step:
    """The work of one decode step of ``streams`` sequences at ``depth`` cells on one of ``ranks``:
    the weights' matmuls at the scheme's peak, attention's at the cache's (:func:`attention_peak`)."""
    read = sum(work.weights.values()) + streams * (sum(work.kv(depth).values()) + work.lookup)
    flops = streams * work.flops(depth)
    attention = streams * (work.flops(depth) - work.flops(0))
    compute = _seconds(flops - attention, peak(hw, scheme)) + _seconds(attention, attention_peak(hw, work))
    return Step(read / hw.bandwidth_bytes_per_s, compute, sum(work.layers.values()), read, flops, ranks)


def prompt_seconds(work: Work, hw: Any, scheme: str, prompt: int) -> float | None:
    """A prompt's causal FLOPs on one rank at their peaks: the matmuls at the scheme's, attention's
    at the cache's (None: no FLOP/s in the catalog)."""
    top, attention = peak(hw, scheme), work.prompt_attention_flops(prompt)
    if not top:
        return None
    return (work.prompt_flops(prompt) - attention) / top + _seconds(attention, attention_peak(hw, work) or top)


def step_seconds(s: Step, terms: dict[str, float]) -> float:
    """``a·memory + b·compute + (c + d)·layers`` with the fitted terms, ``d`` (``allreduce_s``: a
    layer's two all-reduces, RowParallelLinear's) only over several ranks; a term not fitted adds nothing."""
    a = 1 / terms["bandwidth"] if terms.get("bandwidth") else 0.0
    b = 1 / terms["decode_compute"] if terms.get("decode_compute") else 0.0
    per_layer = terms.get("layer_s", 0.0) + (terms.get("allreduce_s", 0.0) if s.ranks > 1 else 0.0)
    return a * s.memory + b * s.compute + per_layer * s.layers


def steady_seconds(prefill: float, streams: int, output: int, terms: dict[str, float]) -> float:
    """What the other streams' prompts add to each output token under a steady load: ``h·(N/output)·P``,
    ``P`` a prompt's seconds at the peak (``steady``: fitted, a prompt's chunks share steps with the decodes)."""
    return terms.get("steady", 0.0) * prefill * streams / output


def ttft_seconds(prefill: float, streams: int, terms: dict[str, float]) -> float:
    """``t0 + g·prefill·(1 + q·(N − 1))``: ``prefill`` the prompt's seconds at the peak."""
    g = 1 / terms["compute"]
    return terms.get("request_s", 0.0) + g * prefill * (1 + terms.get("queue", 0.0) * (streams - 1))


def decode(work: Work, hw: Any, scheme: str, depth: int, streams: int, f: Fitted, ranks: int = 1) -> Figure:
    """A decode step of ``streams`` sequences at ``depth`` over ``ranks`` (tokens/s per stream)."""
    s = step(work, hw, scheme, depth, streams, ranks)
    seconds, bound = step_seconds(s, f.terms), max(s.memory, s.compute)
    a = s.memory / f.terms["bandwidth"] if f.get("bandwidth") else 0.0
    limit = "memory bandwidth" if a >= seconds / 2 else "compute and per-layer overhead"
    part = Part(hw.key, s.bytes, s.flops, seconds, bound, limit)
    kv = sum(work.kv(depth).values())
    read = {"weights": sum(work.weights.values()), "kv_cache": kv * streams, "embedding_rows": work.lookup * streams}
    terms = {"context_depth": depth, "streams": streams, "tensor_parallel_ranks": ranks, "per_rank": True,
             "bytes_read_per_step": read, "flops_per_token": work.flops(depth), "layers": s.layers,
             "routed_expert_share_read": str(work.active)}  # fmt: skip
    names = ("bandwidth", "decode_compute", "layer_s", "allreduce_s")
    return Figure("decode", seconds, bound, 1, f"{limit} ({hw.key})", (part,), terms, _factors(hw, f, names),
                  f.expected("decode"), _STEADY)  # fmt: skip


_STEADY = (
    "the decode step alone: under a steady load each stream's next prompt is prefilled among the others' steps, "
    "which adds (streams / output tokens) x the prompt's prefill to every output token"
)


def prefill(work: Work, hw: Any, scheme: str, prompt: int, chunk: int, f: Fitted) -> Figure:
    """A prompt of ``prompt`` tokens, chunked ``chunk`` tokens a step: its FLOPs at the fitted share
    of the peak (the share fitted on the time to first token: prefill alone was not measured)."""
    at_peak = prompt_seconds(work, hw, scheme, prompt)
    seconds = None if at_peak is None else at_peak / f.terms["compute"]
    flops = work.prompt_flops(prompt)
    part = Part(hw.key, 0, flops, seconds, at_peak, "compute")
    terms = {"prompt_tokens": prompt, "flops": flops, "chunk_tokens": chunk, "matmul_params": work.matmul_params}
    why = "vLLM's prefill alone was not measured: its share of the peak is fitted on the time to first token"
    return Figure("prefill", seconds, at_peak, prompt, f"compute ({hw.key})", (part,), terms,
                  _factors(hw, f, ("compute",)), None, why)  # fmt: skip


def ttft(pre: Figure, streams: int, f: Fitted) -> Figure:
    """The time to first token at ``streams`` streams under a steady load (see the module docstring)."""
    at_peak = pre.bound_seconds
    seconds = None if at_peak is None else ttft_seconds(at_peak, streams, f.terms)
    return Figure("ttft", seconds, at_peak, 1, pre.bound_by, pre.parts, pre.terms,
                  _factors(pre.parts[0].device, f, ("compute", "request_s", "queue")), f.expected("ttft"))  # fmt: skip


def _factors(hw: Any, f: Fitted, names: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    key = hw if isinstance(hw, str) else hw.key
    source = SOURCE + ", ".join(f.sources)
    return tuple(
        {"device": key, "term": n, "value": f.get(n), "runtime": f.runtime, "family": f.family, "source": source}
        for n in names
        if f.get(n) is not None
    )
