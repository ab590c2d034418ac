"""The allocator replayed on a step's own allocations, held to the H100 and H200 runs.

tools/alloc_trace.py runs each measured case's step on the meta device (transformers as
installed, the attention kernel chosen as on an H100/H200) and writes every storage it
allocates and frees, the model's construction included; tools/alloc_sim.py replays them
through the CUDA caching allocator's rules (both are the package's own, what
``paramcount memory --replay`` runs). The replay's peak allocation must match the run's within 3%, and its peak reserved
must reach the run's: the driver places each new segment at a virtual address a plan cannot
know, and where best-fit then splits depends on it, so the replay is run with segments going
up, going down and in six seeded orders, and the run must lie within that range (3% or
0.3 GB either side). ``mixed`` runs are replayed with autocast's casts made by hand
(``torch.autocast("cuda")`` passes meta tensors by; tools/alloc_trace.py ``Autocast``).

This is what checks the plans' allocator terms (overhead.again, overhead.logits and the
reserve's share) on
configurations no GPU has run: test_plans_hold_against_the_replay below.
"""

from __future__ import annotations

import functools
import json

import pytest

from .gpu_cases import H200, Case, allocated, cases, ratio

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from tools import alloc_sim as sim  # noqa: E402
from tools import alloc_trace as trace  # noqa: E402

GB = 10**9
# Not reproduced, with the figures (replay against the run): an xfail that passes fails.
KNOWN = {
    # The run held more or less than any placement of the replay gives. (Five more were here until the
    # trace saw the model's construction and cuBLAS' workspace: a tied output layer's freed block.)
    "H200: microsoft/Phi-3-mini-4k-instruct, 2,048 × 16": "held 2.8 GB, replay 4.3 to 5.0",
}
# Not replayed as it ran: transformers 5.17 ran Gemma 2 with sdpa, 5.23 runs it eager.
SKIP = {"H200: google/gemma-2-2b, 8,192 × 1"}
PLACES = (sim.upward, sim.downward, *(functools.partial(sim.shuffled, s) for s in range(6)))


def replayable(c: Case) -> bool:
    o = c.raw["options"]
    measured = not c.reported and c.raw["kind"] in ("infer", "train", "lora")
    return measured and "cache" not in o and c.name not in SKIP


def replays(kind: str, model_id: str, T: int, B: int, options: dict) -> list[list[dict]]:
    """Each placement's phases (one for inference, one a step for training)."""
    return _replays(json.dumps([kind, model_id, T, B, options]))


@functools.cache  # tests share cases: trace each once
def _replays(case: str) -> list[list[dict]]:
    kind, model_id, T, B, options = json.loads(case)
    events, marks = trace.trace(kind, model_id, T, B, options)
    phases = [sim.replay(events, marks, place()) for place in PLACES]
    return [p[-1:] if kind == "infer" else p[1:] for p in phases]


def _param(c: Case):
    marks = [pytest.mark.xfail(reason=KNOWN[c.name], strict=True)] if c.name in KNOWN else []
    return pytest.param(c, id=c.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in cases() if replayable(c)])
def test_replay_reaches_what_the_card_held(case):
    r = case.raw
    runs = replays(r["kind"], r["id"], r["T"], r["B"], r["options"])
    for step, measured in enumerate(case.steps):
        alloc = runs[0][step]["peak_alloc"]
        assert abs(ratio(alloc, measured["peak_alloc"])) <= 0.03, (step, alloc, measured["peak_alloc"])
        reserved = [r[step]["peak_reserved"] for r in runs]
        lo, hi = min(reserved), max(reserved)
        got = measured["peak_reserved"]
        assert lo - max(0.03 * lo, 0.3 * GB) <= got <= hi + max(0.03 * hi, 0.3 * GB), (step, got, lo, hi)


# Configurations no GPU has run (models, contexts, batches and steps beside the measured ones):
# kind, model, T, B, options, as tools/gpu_cases.json writes them.
SWEEP = [
    ("infer", "meta-llama/Llama-3.2-1B", 2048, 8, {}),
    ("infer", "Qwen/Qwen3-0.6B", 16384, 2, {}),
    ("infer", "Qwen/Qwen2.5-1.5B", 8192, 4, {}),
    ("infer", "HuggingFaceTB/SmolLM3-3B", 4096, 8, {}),
    ("infer", "google/gemma-3-1b-pt", 4096, 8, {}),
    ("infer", "allenai/OLMo-1B-hf", 2048, 4, {}),
    ("infer", "EleutherAI/pythia-410m", 2048, 16, {}),
    ("infer", "meta-llama/Llama-3.2-1B", 4096, 4, {"attn": "eager"}),
    ("infer", "Qwen/Qwen3-0.6B", 2048, 8, {"attn": "eager"}),
    ("infer", "HuggingFaceTB/SmolLM3-3B", 2048, 2, {"attn": "eager"}),
    ("infer", "Qwen/Qwen2.5-0.5B", 2048, 8, {"attn": "eager"}),
    ("infer", "Qwen/Qwen3-0.6B", 8192, 1, {"dtype": "fp16"}),
    ("infer", "meta-llama/Llama-3.2-1B", 4096, 2, {"dtype": "fp32"}),
    ("infer", "Qwen/Qwen3-0.6B", 4096, 4, {"dtype": "fp32"}),
    ("infer", "HuggingFaceTB/SmolLM3-3B", 2048, 2, {"dtype": "fp32"}),
    ("train", "meta-llama/Llama-3.2-1B", 2048, 4, {"precision": "bf16"}),
    ("train", "Qwen/Qwen2.5-0.5B", 2048, 4, {"precision": "bf16"}),
    ("train", "Qwen/Qwen3-0.6B", 1024, 8, {"precision": "bf16"}),
    ("train", "allenai/OLMo-1B-hf", 1024, 4, {"precision": "bf16"}),
    ("train", "EleutherAI/pythia-1b", 2048, 2, {"precision": "bf16"}),
    ("train", "Qwen/Qwen3-0.6B", 8192, 2, {"precision": "bf16", "recompute": "full"}),
    ("train", "Qwen/Qwen2.5-1.5B", 4096, 2, {"precision": "bf16", "recompute": "full"}),
    ("train", "HuggingFaceTB/SmolLM3-3B", 4096, 1, {"precision": "bf16", "recompute": "full"}),
    ("train", "allenai/OLMo-1B-hf", 4096, 4, {"precision": "bf16", "recompute": "full"}),
    ("train", "meta-llama/Llama-3.2-1B", 2048, 4, {"precision": "mixed"}),
    ("train", "Qwen/Qwen2.5-0.5B", 4096, 2, {"precision": "mixed"}),
    ("train", "allenai/OLMo-1B-hf", 2048, 2, {"precision": "mixed"}),
    ("train", "allenai/OLMoE-1B-7B-0924", 1024, 2, {"precision": "mixed"}),
    ("train", "Qwen/Qwen3-0.6B", 4096, 2, {"precision": "mixed", "recompute": "full"}),
    ("train", "meta-llama/Llama-3.2-1B", 8192, 1, {"precision": "mixed", "recompute": "full"}),
    ("lora", "Qwen/Qwen2.5-1.5B", 4096, 2, {"r": 16}),
    ("lora", "meta-llama/Llama-3.2-1B", 2048, 4, {"r": 8, "targets": "all-linear"}),
    ("lora", "Qwen/Qwen3-0.6B", 4096, 4, {"r": 16, "recompute": "full"}),
]
CONTEXT = next(iter(H200["runs"].values()))["context_used"]


def swept(kind: str, model_id: str, T: int, B: int, options: dict) -> Case:
    raw = {"kind": kind, "id": model_id, "T": T, "B": B, "options": options, "measured": {}}
    return Case({**raw, "from": "tools/alloc_sim.py replay (H200)", "context_used": CONTEXT})


@pytest.mark.parametrize("case", [pytest.param(swept(*s), id=swept(*s).name) for s in SWEEP])
def test_plans_hold_against_the_replay(case):
    """On configurations never measured, the plan's tensors are the replay's peak allocation
    within ±10%, and its total is not under the most the replay reserved (+ the CUDA context)
    by more than 3%: "fits" holds wherever the driver puts the segments."""
    r, plan = case.raw, case.plan()
    runs = replays(r["kind"], r["id"], r["T"], r["B"], r["options"])
    alloc = max(p["peak_alloc"] for p in runs[0])
    used = max(p["peak_reserved"] for run in runs for p in run) + CONTEXT
    assert abs(ratio(allocated(plan), alloc)) <= 0.10, (allocated(plan), alloc)
    assert ratio(plan.total, used) >= -0.03, (plan.total, used)


EAGER = [c for c in cases() if replayable(c) and c.raw["options"].get("attn") == "eager" and c.name not in KNOWN]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in EAGER])
def test_eager_plans_meet_the_replays_larger_end(case):
    """Eager bf16 attention holds under one cached score block or two to three, by where the
    segments lie; the plan is the larger end's within the goal (−3% to +20%), whichever end the
    run reached (test_gpu_measured.py: Qwen2.5 1.5B at 4,096 × 4 reached the smaller)."""
    r = case.raw
    runs = replays(r["kind"], r["id"], r["T"], r["B"], r["options"])
    hi = max(run[-1]["peak_reserved"] for run in runs) + CONTEXT
    assert -0.03 <= ratio(case.plan().total, hi) <= 0.20, (case.plan().total, hi)


def test_the_recorder_sees_each_storage_born_and_dying():
    """A storage is allocated when an op makes it and freed when its last holder lets go,
    autograd's saved tensors included."""
    rec = trace.Recorder()
    w = torch.empty(64, 64, device="meta", requires_grad=True)
    x = torch.empty(8, 64, device="meta")
    rec.allocate(w)
    rec.allocate(x)
    with rec:
        y = torch.tanh(x @ w)  # the product dies once tanh has it; tanh keeps its output
        loss = y.sum()
    del y
    born = [e[2] if e[0] == "A" else "F" for e in rec.events[2:]]
    assert born == [8 * 64 * 4, 8 * 64 * 4, "F", 4]
    with rec:
        loss.backward()
    assert w.grad.untyped_storage()._cdata in rec.live  # the gradient stays
    assert len(rec.live) == 2 + 2  # w, x, the loss and w's gradient: tanh's output died with the graph


# A two-layer BLOOM: eager by default, its probabilities through ``attention_dropout`` in eval.
BLOOM = {"model_type": "bloom", "hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": 1024}


@pytest.mark.parametrize(("p", "train"), [(0.1, False), (0.0, False), (0.0, True)])
def test_a_dropout_that_drops_nothing_hands_its_input_back(p, train):
    """As at::dropout does (aten Dropout.cpp ``_dropout_impl``: ``if (p == 0 || !train) return
    input``): CPU torch's real tensors keep their storage, and the recorder sees no new one where
    PyTorch's Python decomposition (``func.decompose``) would have cloned it."""
    real = torch.randn(4, 8)
    with torch.inference_mode():
        assert torch.dropout(real, p, train).data_ptr() == real.data_ptr()
    rec = trace.Recorder()
    x = torch.empty(4, 8, device="meta")
    rec.allocate(x)
    with torch.inference_mode(), rec:
        y = torch.dropout(x, p, train)
    assert y.untyped_storage()._cdata == x.untyped_storage()._cdata and len(rec.events) == 1


def test_a_dropout_that_drops_still_allocates_cudas_output_and_mask():
    rec = trace.Recorder()
    x = torch.empty(4, 8, device="meta", dtype=torch.bfloat16)
    with torch.inference_mode(), rec:
        torch.dropout(x, 0.1, True)
    assert [e[2] for e in rec.events if e[0] == "A"] == [4 * 8 * 2, 4 * 8]  # output, bool mask


def test_bloom_in_eval_holds_no_copy_of_its_probabilities():
    """fp32 BLOOM in eval: per layer the ALiBi scores, the masked scores and the softmax are
    B·H·T²·4 bytes each, and no dropout copy beside them (it had set the peak)."""
    from paramcount.memory.runtimes.transformers.replay.trace import trace as from_config

    T, B = 256, 2
    events, mark = from_config("infer", BLOOM, T, B, {"dtype": "fp32"})
    square = [e[3] for e in events[mark:] if e[0] == "A" and e[2] == B * BLOOM["n_head"] * T * T * 4]
    assert sorted(square) == sorted(["aten.baddbmm.default", "aten.add.Tensor", "aten._softmax.default"] * 2)
