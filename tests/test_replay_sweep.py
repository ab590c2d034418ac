"""The closed-form plan held to the replay over a sweep of (model, context, batch, precision, mode).

tests/fixtures/replay_sweep.jsonl is what ``python tools/replay_sweep.py`` wrote: for each case,
the step traced on the meta device and replayed through the CUDA caching allocator's rules as
``paramcount memory --replay`` does it (its peak allocated, and its peak reserved under eight
placements of the segments). The plan's total must be within −3% and +20% of the most the
replay reserved plus the CUDA context, as tests/test_gpu_measured.py holds it to the GPU runs;
the replay came within −1.2% to +3.3% of the 15 H100 runs whose peaks were kept. Two cases are
traced again here, so a fixture made by another tracer fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paramcount.memory.core.overhead import CUDA_CONTEXT

from .gpu_cases import Case, ratio

FIXTURE = Path(__file__).parent / "fixtures" / "replay_sweep.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
# The plan outside the goal, with its figures (plan against the replay): an xfail that passes fails.
# Under, on the unsafe side: training without checkpointing where the first optimizer step's states
# fit in the activations' blocks and the next step allocates them anew (Qwen2.5 1.5B at 2,048 tokens
# in bf16, and × 2 in mixed precision; not yet modelled) and LoRA. Over: eager
# attention's three blocks (the replay holds one U for Qwen2.5 0.5B at 4,096 × 2 where the H200 held
# 3U at 8,192 × 2), and checkpointed steps whose states the plan packs into a loss block the replay
# leaves whole (Qwen2.5 0.5B at 4,096 × 2: 0.07 GB of spill; pythia-410m at 2,048 × 2: three blocks
# planned, two replayed). Pythia's mixed steps and Qwen3 0.6B's at 512 × 1 are within the goal since
# LayerNorms' saved inputs and the largest gradient's segments; fp32 inference at 8,192 tokens (+22%,
# +23%) since the math kernel's blocks left the reserve's share; Qwen2.5 0.5B checkpointed at
# 2,048 × 1 (+22%) since the first step's larger phase (overhead.first_step_again); LoRA with eager
# attention on GPT-Neo and GPT-J at 2,048 × 1 (-12%, -3.2%) since one call's T×T blocks cached.
# Issue 36's two held-out misses (Qwen2.5 1.5B mixed at 2,048 × 1, Gemma 3 1B bf16 at 2,048 × 2)
# are within the goal since the optimizer step's cached activation blocks and Gemma's norms. Eager
# SmolLM3 3B at 2,048 × 1 (-3.2%, now -0.1%) and BLOOM 560M in bf16 at 2,048 × 1 (-4.6%, now +2.6%)
# are within it since eval's dropout hands its input back uncopied, as at::dropout does (trace.py).
KNOWN: dict[str, str] = {
    "H100: Qwen/Qwen2.5-0.5B, 4,096 × 2, dtype bf16, attn eager": "plan 9.74 GB against the replay's 7.74 GB (+26%)",
    "H100: Qwen/Qwen2.5-1.5B, lora, 512 × 1, r 16, recompute full": "plan 5.26 GB against the replay's 5.51 GB (-4%)",
    "H100: Qwen/Qwen2.5-1.5B, train, 2,048 × 1, precision bf16, recompute none": (
        "plan 22.19 GB against the replay's 25.17 GB (-12%)"
    ),
    "H100: Qwen/Qwen2.5-1.5B, train, 2,048 × 2, precision mixed, recompute none": (
        "plan 49.11 GB against the replay's 54.95 GB (-11%)"
    ),
    "H100: EleutherAI/pythia-410m, train, 2,048 × 2, precision bf16, recompute full": (
        "plan 7.87 GB against the replay's 6.54 GB (+20.3%)"
    ),
    "H100: Qwen/Qwen2.5-0.5B, train, 4,096 × 2, precision bf16, recompute full": (
        "plan 27.33 GB against the replay's 19.97 GB (+37%)"
    ),
    "H100: Qwen/Qwen2.5-0.5B, train, 8,192 × 1, precision bf16, recompute full": (
        "plan 27.33 GB against the replay's 19.97 GB (+37%)"
    ),
    "H100: microsoft/phi-2, lora, 512 × 1, r 16, recompute full": "plan 7.21 GB against the replay's 7.48 GB (-3.5%)",
}


def case(row: dict) -> Case:
    kind, model_id, T, B, options = row["case"]
    options = {k: v for k, v in options.items() if v is not None}  # targets None: peft's default
    raw = {"kind": kind, "id": model_id, "T": T, "B": B, "options": options, "measured": {}}
    return Case({**raw, "from": "tools/replay_sweep.py (H100)", "context_used": CUDA_CONTEXT})


def _param(row: dict):
    c = case(row)
    marks = [pytest.mark.xfail(reason=KNOWN[c.name], strict=True)] if c.name in KNOWN else []
    return pytest.param(row, id=c.name, marks=marks)


def test_the_sweep_is_hundreds_of_cases():
    models = {r["case"][1] for r in ROWS}
    modes = {(r["case"][0], json.dumps(r["case"][4], sort_keys=True)) for r in ROWS}
    assert len(ROWS) >= 250 and len(models) >= 8 and len(modes) >= 7, (len(ROWS), len(models), len(modes))


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_plan_within_the_goal_of_the_replay(row):
    plan = case(row).plan()
    replayed = max(row["reserved"].values()) + CUDA_CONTEXT
    assert -0.03 <= ratio(plan.total, replayed) <= 0.20, (plan.total, replayed)


LIVE = [0, len(ROWS) - 1]  # the first (inference) and the last case the tool wrote


@pytest.mark.parametrize("index", LIVE)
def test_the_fixture_is_the_tracer_of_today(index):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tools.alloc_trace import config

    from paramcount.memory.runtimes.transformers.replay.worker import replay_case

    row = ROWS[index]
    kind, model_id, T, B, options = row["case"]
    now = replay_case({"kind": kind, "config": config(model_id), "T": T, "B": B, "options": options})
    assert (now["allocated_peak"], now["reserved"]) == (row["allocated_peak"], row["reserved"])
