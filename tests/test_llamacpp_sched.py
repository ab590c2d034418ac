"""llama.cpp's compute and host buffers as ggml-backend's scheduler allocates them (issue 35, item 1).

The rules are read from llama.cpp's source and held to llama.cpp run over two RPC devices
(tests/fixtures/llamacpp_multidev.json, tests/test_llamacpp_multidev.py): ``build_inp_embd``
(src/llama-graph.cpp) makes ``inp_embd`` a graph input, which
``ggml_backend_sched_backend_id_from_cur`` places on the CPU; ``ggml_backend_sched_split_graph``
makes each split's inputs ordinary graph nodes with one copy (freed after their split) and keeps
``GGML_SCHED_MAX_COPIES`` = 4 of them, never freed, with pipeline parallelism
(``llama_context::llama_context``: several devices, every layer, -sm layer, the KV offloaded,
no -ot). Where issue 35 gives a measured figure (the partial offloads equal to the every-layer
buffer, -nkvo's host buffer equal to the one without it), the test holds to it.
"""

from __future__ import annotations

import pytest

import paramcount
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.placement import n_cpu_moe, overrides
from paramcount.memory.runtimes.llamacpp.plan import LlamaCppPlanner

CONTEXT = 4096
T = 512  # the reserved micro-batch: min(n_ctx, n_ubatch)
NOOP = overrides("token_embd=CPU")  # where llama.cpp puts it anyway: an override all the same


def plan(model, scheme="q4_k_m", **given):
    return inference(model, scheme, context=CONTEXT, runtime="llama.cpp", **given)


def test_inp_embd_is_on_the_cpu_not_the_gpu():
    """A 1536-wide model whose peak is the output (issue 35: the plan booked inp_embd on the
    GPU): the GPU's buffer is the one-device graph's less n_embd × ubatch F32, and less the token
    ids and positions, freed by then; the CPU backend's holds inp_embd and the input layer's rows
    beside the inputs, masks, KV indices and output ids."""
    model = paramcount.load("Qwen/Qwen2.5-1.5B")
    gpu, cpu = plan(model), plan(model, device="cpu")
    embd = 1536 * T * 4
    assert embd == 3_145_728
    # on one CPU the dense graph is replayed (replay.py); the GPU's term is the closed form's
    closed = LlamaCppPlanner(model, "q4_k_m", device="cpu")
    closed.dense = None
    one_device = closed.plan(CONTEXT).term("compute").bytes
    assert one_device - gpu.term("compute").bytes == embd + 2 * T * 4
    assert abs(cpu.term("compute").bytes / one_device - 1) < 0.001
    masks = CONTEXT * T * 2  # one cache kind, flash attention on: f16
    assert gpu.term("host_compute").bytes == 2 * T * 4 + masks + 2 * embd + 2 * T * 8 + T * 4
    assert gpu.term("host_compute").host and gpu.term("host_compute").estimate
    assert "CUDA_Host" in gpu.term("host_compute").label and "build_inp_embd" in gpu.term("host_compute").source
    assert all(t.key != "host_compute" for t in cpu.terms)  # one CPU device: one buffer
    assert plan(model, gpu_layers=99).term("compute").bytes == gpu.term("compute").bytes


@pytest.mark.parametrize(
    "given",
    [
        {"gpu_layers": 10},
        {"overrides": overrides("ffn=CPU")},
        {"overrides": n_cpu_moe(4)},
        {"overrides": n_cpu_moe(48)},  # --cpu-moe: every layer's experts
    ],
    ids=["ngl10", "ot-ffn", "n-cpu-moe-4", "cpu-moe"],
)
def test_partial_offload_frees_the_copied_weights_after_their_split(given):
    """The copies of host weights (and K/V) a GPU makes for a split are freed after it: with
    -ngl 10, -ot ffn=CPU, --n-cpu-moe 4 and --cpu-moe the GPU's buffer equals the every-layer
    one (issue 35's measurement; the plan added the largest host weight and one layer's K/V)."""
    model = paramcount.load("Qwen/Qwen3-30B-A3B")
    every, partial = plan(model, gpu_layers=99), plan(model, **given)
    assert partial.term("compute").bytes == every.term("compute").bytes
    assert partial.term("host_compute").bytes == every.term("host_compute").bytes


def test_no_pipeline_copies_where_llama_cpp_keeps_one():
    """Pipeline parallelism needs several GPUs, every layer on them, -sm layer and no -ot: with
    -ngl 20 or an override on two GPUs each buffer is its own largest moment; with it each GPU
    keeps 4 copies of its split inputs (the first: inp_embd, positions, KV indices, masks; the
    last: two n_embd blocks, the same small inputs and the output ids), less the one its peak
    held, and the host 3 more of every graph input."""
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    one = plan(model, gpu_layers=33)
    for given in ({"gpu_layers": 20}, {"overrides": NOOP}):
        two = plan(model, tensor_split=(3.0, 1.0), **given)
        parts = {p.key: p.bytes for p in two.term("compute").parts}
        assert parts["compute.CUDA1"] == one.term("compute").bytes, given  # the output's moment
        assert two.term("host_compute").bytes == one.term("host_compute").bytes, given
        assert "GGML_SCHED_MAX_COPIES" not in two.term("compute").assumption
    piped, plain = plan(model, tensor_split=(1.0, 1.0)), plan(model, tensor_split=(1.0, 1.0), overrides=NOOP)
    assert "GGML_SCHED_MAX_COPIES = 4" in piped.term("compute").assumption
    embd, masks, positions, idxs = 4096 * T * 4, CONTEXT * T * 2, T * 4, 2 * T * 8
    split = {p.key: p.bytes for p in piped.term("compute").parts}
    plain_split = {p.key: p.bytes for p in plain.term("compute").parts}
    small = positions + idxs + masks
    assert split["compute.CUDA0"] - plain_split["compute.CUDA0"] == 4 * embd + 3 * small  # a layer's peak
    assert split["compute.CUDA1"] - plain_split["compute.CUDA1"] == 4 * (2 * embd + small + T * 4)  # the output's
    inputs = 2 * T * 4 + masks + embd + idxs + T * 4  # token ids, positions, masks, inp_embd, indices, output ids
    assert piped.term("host_compute").bytes - plain.term("host_compute").bytes == 3 * inputs
