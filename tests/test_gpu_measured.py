"""Every plan of the transformers runtime held to what an H100 really held
(tests/fixtures/gpu_h100.json, see tools/record_gpu.py): the plan's total within −3% and
+20% of the card's use at the peak (peak reserved + the CUDA context), the plan's tensors
(weights, KV cache, activations and cuBLAS' workspace) within ±10% of the peak allocation;
``fit`` says "fits" only where the measured run fitted; the README's table is this table."""

import os
import re
from pathlib import Path

import pytest

from paramcount.memory import fit
from paramcount.memory.core.gpus import GPUS

from .gpu_cases import allocated, cases, ratio, table

README = Path(__file__).parent.parent / "README.md"
TABLE = re.compile(r"(<!-- gpu-table -->\n)(.*?)(<!-- /gpu-table -->)", re.S)
# Not yet within the goal, with the figure: issue 22 reports this case's total alone (25.2 GB).
# Read off the source: transformers 5.23's activation_checkpointing_enable defaults to
# torch.utils.checkpoint with use_reentrant=False around each GradientCheckpointingLayer's forward,
# which keeps the layer's input (0.47 GB over 28 layers) and rebuilds one layer at a time in the
# backward (0.59 GB, freed as it is unpacked), after the loss's backward has freed its 12·N·V
# (14.9 GB). So the peak is the loss's backward: 19.1 GB of tensors, the same phase and N = 8,192
# tokens as the 2,048 × 4 case, whose plan is within 0.2% of its peak allocation. The card held
# 24.45 GB beyond the context, 28% over those tensors, where the other training runs reserved
# 0.6-15% over their peak allocation. This case's peak allocation was not kept, so whether the
# 5.4 GB are the allocator's (the loss's N×V buffers in fresh segments after a forward of small
# per-layer blocks) or a tensor the reading misses cannot be told: measure.py's figures for it would.
SHORT = {
    "Qwen/Qwen3-0.6B, train, 4,096 × 2, precision bf16, recompute full": "plan 22.6 GB against 25.2 GB used (−10%)",
}


def _marks(c):
    return [pytest.mark.xfail(reason=SHORT[c.name], strict=True)] if c.name in SHORT else []


CASES = [pytest.param(c, id=c.name, marks=_marks(c)) for c in cases()]


@pytest.mark.parametrize("case", CASES)
def test_plan_total_against_the_card(case):
    plan = case.plan()
    assert -0.03 <= ratio(plan.total, case.used) <= 0.20, (plan.total, case.used)


@pytest.mark.parametrize("case", [p for p in CASES if not p.values[0].reported])
def test_plan_tensors_against_the_peak_allocation(case):
    plan = case.plan()
    assert abs(ratio(allocated(plan), case.peak_alloc)) <= 0.10, (allocated(plan), case.peak_alloc)


CARDS = ("h100", "a100-40gb", "l40s", "rtx4090", "rtx3090", "l4", "rtx4080", "a10")


def _fits(case, card: str) -> bool:
    o, kind = case.raw["options"], case.raw["kind"]
    T, B = case.raw["T"] + o.get("new_tokens", 0), case.raw["B"]
    if kind in ("infer", "generate"):
        scheme = o.get("dtype", "bf16")
        return fit(case.model(), card, context=T, batch=B, only=(scheme,)).row(scheme).fits
    precision = o.get("precision", "bf16")
    extra = {"recompute": o.get("recompute", "none")}
    if kind == "lora":
        extra.update(lora=o["r"], lora_targets=o.get("targets"))
    rows = fit(case.model(), card, context=T, batch=B, mode="training", only=(precision,), **extra)
    return rows.row(precision).fits


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in cases()])
def test_fit_says_fits_only_where_the_run_fitted(case):
    for key in (k for k in CARDS if k in GPUS):
        if _fits(case, key):
            assert case.used <= GPUS[key].usable, (key, case.used, GPUS[key].usable)
    assert _fits(case, "h100")  # it ran there


def test_readme_shows_the_table():
    text = README.read_text(encoding="utf-8")
    m = TABLE.search(text)
    assert m, "README.md has no <!-- gpu-table --> block"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        README.write_text(TABLE.sub(lambda m: m.group(1) + table() + "\n" + m.group(3), text), encoding="utf-8")
    else:
        assert m.group(2) == table() + "\n"
