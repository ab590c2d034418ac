"""The fused-MoE kernel's buffers in vLLM's profiling pass (paramcount.memory.runtimes.vllm.moe),
worked out by hand from Qwen3-30B-A3B's dimensions (h 2,048; 128 experts of I 768, 8 a token; 32
query heads and 4 KV heads of 128) and vLLM's source:

- up to 0.10, fused_experts_impl: cache13 M·k·max(N, K) and intermediate_cache2 M·k·N/2;
- from 0.11, TritonExperts.workspace_shapes: (M, k, max(N/2, K)), (M, k, max(N, K)) and (M, K);

N = 2·I/TP (the gate-up rows on a rank), K = h, M ≤ VLLM_FUSED_MOE_CHUNK_SIZE (32,768, then 16,384).
"""

from __future__ import annotations

import pytest

import paramcount
from paramcount.memory.runtimes import planner

H, INNER, K_ACTIVE, ATTN = 2048, 768, 8, 32 * 128 + 2 * 4 * 128 + 32 * 128  # attention: q + k + v + output
V, B = 151936, 2


def qwen3_moe(**given):
    return planner(paramcount.load("Qwen/Qwen3-30B-A3B"), "bf16", "vllm", **given)


def sampler(rows: int, vocab: int = V) -> int:
    """_dummy_sampler_run: rows × V fp32 logits, probabilities and log-probabilities."""
    return rows * vocab * 4 * 3


def old_buffers(tokens: int, tp: int) -> int:
    n = 2 * INNER // tp
    return min(tokens, 32768) * K_ACTIVE * (max(n, H) + n // 2) * B


def new_buffers(tokens: int, tp: int) -> int:
    n = 2 * INNER // tp
    m = min(tokens, 16384)
    return (m * K_ACTIVE * (max(n // 2, H) + max(n, H)) + m * H) * B


@pytest.mark.parametrize("tp", [1, 4])
def test_up_to_0_10_the_profile_holds_fused_experts_impl_caches(tp):
    """0.10 on an H100: 8,192 tokens, 1,024 sampler rows; the hidden-wide tensors beside the larger
    of the split attention and the unsplit MoE buffers."""
    p = qwen3_moe(tp=tp, vllm_version="0.10")
    t = 8192
    layer = t * 4 * H * B + max(t * -(-ATTN // tp) * B, old_buffers(t, tp))
    assert p.peak(8192).bytes == layer + sampler(1024)
    assert "cache13" in p.peak(8192).assumption and "fused_experts_impl" in p.peak(8192).source


@pytest.mark.parametrize("tp", [1, 4])
def test_the_latest_profile_holds_the_modular_kernel_workspaces(tp):
    p = qwen3_moe(tp=tp)
    t = 8192
    layer = t * 4 * H * B + max(t * -(-ATTN // tp) * B, new_buffers(t, tp))
    assert p.peak(8192).bytes == layer + sampler(1024)
    assert "workspace_shapes" in p.peak(8192).source


def test_a_profile_past_one_chunk_holds_one_chunk_of_buffers():
    """--max-num-batched-tokens 65,536: the kernel loops over chunks of 16,384 tokens (latest)."""
    p = qwen3_moe(max_batched_tokens=65536, max_num_seqs=256)
    t = 65536
    layer = t * 4 * H * B + max(t * ATTN * B, new_buffers(t, 1))
    assert p.peak(8192).bytes == layer + sampler(256)


def test_expert_parallel_keeps_every_expert_row():
    """--ep 4 (--enable-expert-parallel): each rank's experts are whole, N = 2·I."""
    p = qwen3_moe(tp=4, ep=4)
    t = 8192
    layer = t * 4 * H * B + max(t * (ATTN // 4) * B, new_buffers(t, 1))
    assert p.peak(8192).bytes == layer + sampler(1024)


def test_fp8_moe_adds_the_quantised_inputs():
    """moe_kernel_quantize_input: the hidden states (M·K) and the product (M·k·N/2) in fp8."""
    t, n = 8192, 2 * INNER
    bf16 = qwen3_moe(vllm_version="0.10").peak(8192).bytes
    fp8 = planner(paramcount.load("Qwen/Qwen3-30B-A3B"), "fp8", "vllm", vllm_version="0.10").peak(8192).bytes
    assert fp8 - bf16 == t * H + t * K_ACTIVE * (n // 2)


def test_graphs_take_an_moe_layer_per_captured_token():
    p = qwen3_moe(tp=1)
    per_token = 4 * H * B + max(ATTN * B, new_buffers(1, 1))
    from paramcount.memory.runtimes.vllm.plan import capture_sizes

    sizes = capture_sizes(p.o, 8192)
    full = [s for s in sizes if s <= p.o.seqs]
    assert p.graphs(8192).bytes == (sum(sizes) + sum(full)) * per_token


def test_a_dense_model_keeps_the_dense_estimate():
    p = planner(paramcount.load("meta-llama/Meta-Llama-3-8B"), "bf16", "vllm")
    w = p.widths
    assert p.peak(8192).bytes == 8192 * (4 * w.hidden + max(w.attention, w.ffn)) * B + sampler(1024, 128256)
    assert "fused" not in p.peak(8192).source


def test_an_encoder_tower_left_out_of_the_profile_says_so():
    """profile_run runs the vision encoder over dummy images before the pass (MultiModalBudget); the
    plan does not model it and says so in the term, for image+text models only."""
    vl = planner(paramcount.load("Qwen/Qwen2.5-VL-72B-Instruct"), "bf16", "vllm", tp=4).plan(8192)
    text = qwen3_moe().plan(8192)
    assert "not counted" in vl.term("activations").assumption
    assert "vision encoder" in vl.term("activations").assumption and vl.term("activations").estimate
    assert "not counted" not in text.term("activations").assumption
