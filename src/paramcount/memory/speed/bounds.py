"""How fast a served model can go at best: decode bounded by memory bandwidth, prefill by compute.

Each decode step reads every weight a token uses once (for a mixture of experts, the shared
weights and k of the E routed experts: the fewest bytes any step can read; of an untied input
embedding, only the rows its tokens look up, :mod:`.lookups`) and each running sequence's KV
cache; it also does 2 FLOPs per weight per token plus the attention over the context. Pipeline
stages run one after another for a token, so their times add; tensor-parallel ranks read their
shards at the same time. So, for B sequences of T tokens,

    step ≥ max( Σ_stages (W_active + B·KV(T)) / bandwidth ,  B·F(T) / (TP·peak) )

and decode runs at most B / step tokens per second in all (1 / step per sequence). Prefill of
one prompt of T tokens does T·F̄ FLOPs (F̄: the causal average per token), so it takes at least
T·F̄ / (TP·peak). These are upper bounds on speed, never predictions: kernels reach a share of
the peaks, and the bound that holds (memory or compute) says which share matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.gpus import GPU
from ..flops import forward_flops
from .lookups import lookups


@dataclass(frozen=True)
class Bound:
    """An upper bound on speed, with the figures behind it."""

    tokens_per_s: float  # all sequences together
    seconds: float  # decode: one step (a token for every sequence); prefill: the whole prompt
    limit: str  # "memory" or "compute": the bound that holds
    formula: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_per_s": round(self.tokens_per_s, 1),
            "seconds": round(self.seconds, 6),
            "bound_by": self.limit,
            "formula": self.formula,
            "upper_bound": True,
        }


def decode(planner: Any, gpu: GPU, context: int, batch: int) -> Bound | None:
    """The decode bound of a vLLM plan (see the module docstring); None without the GPU's figures."""
    if not gpu.bandwidth or not gpu.tflops:
        return None
    o, bw, peak = planner.o, gpu.bandwidth * 1e9, gpu.tflops * 1e12
    weights = weights_read(planner, batch)
    kv = sum(s.pages.decode_bytes(batch, context, o.in_flight(context)) for s in planner.stages)
    flops = forward_flops(planner.model, context).per_token * batch
    memory_s, compute_s = (weights + kv) / bw, flops / (o.tp * peak)
    step = max(memory_s, compute_s)
    limit = "memory" if memory_s >= compute_s else "compute"
    formula = (
        f"step ≥ max(({weights:,} B weights + {kv:,} B KV) / {gpu.bandwidth:g} GB/s, "
        f"{batch}·{flops // batch:,} FLOPs / ({o.tp}·{gpu.tflops:g} TFLOPS)) = max({memory_s * 1e3:.3f}, "
        f"{compute_s * 1e3:.3f}) ms; {batch} / step = {batch / step:,.0f} tokens/s"
    )
    return Bound(batch / step, step, limit, formula)


def weights_read(planner: Any, batch: int) -> int:
    """Weight bytes one decode step of ``batch`` sequences reads on the busiest rank of each stage:
    k of E routed experts, and of each untied embedding table the rows looked up (vLLM's
    VocabParallelEmbedding holds 1/TP of the rows on each rank; a row is on one of them)."""
    whole = sum(s.share.bytes - s.share.experts * (1 - planner.active) for s in planner.stages)
    found = lookups(planner.weights.rows)
    return round(whole - found.table / planner.o.tp + found.read(batch))


def prefill(planner: Any, gpu: GPU, context: int) -> Bound | None:
    """The prefill bound of one prompt of ``context`` tokens: compute over TP ranks at their peak."""
    if not gpu.tflops:
        return None
    o, peak = planner.o, gpu.tflops * 1e12
    per_token = forward_flops(planner.model, context).per_token_causal
    seconds = context * per_token / (o.tp * peak)
    formula = (
        f"{context:,} tokens × {per_token:,} FLOPs / ({o.tp}·{gpu.tflops:g} TFLOPS) = {seconds * 1e3:,.1f} ms; "
        f"{context / seconds:,.0f} tokens/s"
    )
    return Bound(context / seconds, seconds, "compute", formula)
