"""The fused-MoE kernel's buffers in vLLM's profiling pass: what one MoE layer allocates per token.

vLLM runs routed experts through one fused kernel that takes its intermediate buffers from the
caching allocator at the call, so the profiling forward pass over ``max_num_batched_tokens``
tokens peaks in the MoE layer at those buffers, not at the layer a dense transformers model
would hold. Two layouts, by release line:

- up to 0.10, ``fused_experts_impl`` (vllm/model_executor/layers/fused_moe/fused_moe.py; the
  unquantised, FP8 and Marlin paths alike): ``cache13`` of M·k·max(N, K) (the gate-up output and,
  reused, the down output) and ``intermediate_cache2`` of M·k·N/2 (the activated product), in
  the model's dtype, the output written in place;
- from 0.11, the modular kernel (``FusedMoEModularKernel``, fused_moe/modular_kernel.py) asks
  ``TritonExperts.workspace_shapes`` (fused_moe/fused_moe.py): workspace13 (M, k, max(N/2, K)),
  workspace2 (M, k, max(N, K)) and the output (M, K).

N is the gate-up projection's rows on the rank (2·I/TP, or 2·I with expert parallelism), K
the hidden size, k the experts per token and M the tokens of one chunk: min(tokens,
``VLLM_FUSED_MOE_CHUNK_SIZE``), 32,768 up to 0.10 and 16,384 after (vllm/envs.py). An FP8
(w8a8) MoE also quantises each input: the hidden states (M·K bytes) and the product
(M·k·N/2 bytes) in fp8 (``moe_kernel_quantize_input``).

The attention and a dense layer's projections are split over TP as before; the MoE buffers
are not (K is the whole hidden size on every rank), which is why a wide MoE's profile does not
shrink with TP the way the transformers-shaped estimate did. Which kernel a backend picks
(DeepGEMM, FlashInfer, MXFP4's Triton kernels) changes its scratch; the plan takes the
Triton layout for all of them, and the activations term stays an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SRC_MOE = {
    "old": "vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts_impl (cache13 = M·k·max(N, K), "
    "intermediate_cache2 = M·k·N/2; CHUNK_SIZE = VLLM_FUSED_MOE_CHUNK_SIZE, 32,768)",
    "new": "vllm/model_executor/layers/fused_moe/fused_moe.py TritonExperts.workspace_shapes (workspace13 "
    "(M, k, max(N/2, K)), workspace2 (M, k, max(N, K)), output (M, K)), allocated by modular_kernel.py "
    "FusedMoEModularKernel; vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE (16,384)",
}
OLD_LINES = ("0.6", "0.8", "0.10")
CHUNK_OLD = 32 * 1024
CHUNK_NEW = 16 * 1024


@dataclass(frozen=True)
class Layers:
    """Per-token widths of the model's widest layers as vLLM runs them (elements): the hidden
    size, the widest attention (q + k + v + output) and dense feed-forward (ups + inner), and the
    widest routed experts (k, ups, inner); ``held`` is the h-wide outputs of the other
    feed-forwards a layer holds until it sums them (a shared expert beside the routed ones)."""

    hidden: int
    attention: int
    dense: int
    routed: tuple[int, int, int] | None
    held: int


def read(model: Any) -> Layers | None:
    """The widths of ``model``'s layers, or None where the model has no routed experts (the
    dense estimate is kept) or its tree gives no layers (a GGUF file)."""
    from ....gguf.meta import is_gguf
    from ...tree.layers import layers
    from ...tree.widths import shape_model

    if is_gguf(model):
        return None
    groups = layers(shape_model(model))
    routed = [(f.times, f.ups, f.inner) for g in groups for f in g.ffn if f.times > 1]
    if not routed:
        return None
    return Layers(
        hidden=max(g.hidden for g in groups),
        attention=max((a.qkv + a.width for g in groups for a in g.attention), default=0),
        dense=max((f.ups + f.inner for g in groups for f in g.ffn if f.times == 1), default=0),
        routed=max(routed, key=lambda r: r[0] * (r[1] + r[2])),
        held=max((g.hidden * (len(g.ffn) - 1) for g in groups), default=0),
    )


def chunk(version: str) -> int:
    return CHUNK_OLD if version in OLD_LINES else CHUNK_NEW


def workspace(lay: Layers, version: str, experts_tp: int, tokens: int, b: int, fp8: bool) -> int:
    """Bytes of one MoE layer's kernel buffers over ``tokens`` tokens (one chunk at most), with
    the gate-up rows N split over ``experts_tp`` ranks."""
    assert lay.routed is not None
    k, ups, _ = lay.routed
    n = -(-ups // experts_tp)
    h, m = lay.hidden, min(tokens, chunk(version))
    old = m * k * (max(n, h) + n // 2)
    elements = old if version in OLD_LINES else m * k * (max(n // 2, h) + max(n, h)) + m * h
    quantised = m * h + m * k * (n // 2) if fp8 else 0
    return elements * b + quantised


def describe(lay: Layers, version: str, experts_tp: int) -> str:
    assert lay.routed is not None
    k, ups, _ = lay.routed
    n = -(-ups // experts_tp)
    layout = (
        f"cache13 M·{k}·max({n:,}, {lay.hidden:,}) + cache2 M·{k}·{n // 2:,}"
        if version in OLD_LINES
        else f"M·{k}·(max({n // 2:,}, {lay.hidden:,}) + max({n:,}, {lay.hidden:,})) + M·{lay.hidden:,}"
    )
    return f"the fused-MoE kernel's buffers ({layout}, M ≤ {chunk(version):,} tokens a chunk)"
