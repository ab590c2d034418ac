"""Every plan of the transformers runtime held to what an H100 really held
(tests/fixtures/gpu_h100.json, see benchmarks/record_gpu.py): the plan's total within −3% and
+20% of the card's use at the peak (peak reserved + the CUDA context), the plan's tensors
(weights, KV cache, activations and cuBLAS' workspace) within ±10% of the peak allocation;
``fit`` says "fits" only where the measured run fitted; the README's table is this table."""

import os
import re
from pathlib import Path

import pytest

from paramcount.memory import fit
from paramcount.memory.gpus import GPUS

from .gpu_cases import allocated, cases, ratio, table

README = Path(__file__).parent.parent / "README.md"
TABLE = re.compile(r"(<!-- gpu-table -->\n)(.*?)(<!-- /gpu-table -->)", re.S)
# Not yet within the goal: training (issue 22, item 2): the activations are still Korthikanti et
# al.'s fused-kernel estimate, not what transformers' eager modules save, and no loss, autocast
# copies, optimizer temporaries or the allocator's training reserve are counted.
TRAINING = "training as transformers runs it is not modelled yet (issue 22 item 2)"


def _marks(c):
    return [pytest.mark.xfail(reason=TRAINING, strict=True)] if c.raw["kind"] in ("train", "lora") else []


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


@pytest.mark.parametrize("case", [p for p in CASES if p.values[0].raw["kind"] in ("infer", "generate")])
def test_fit_says_fits_only_where_the_run_fitted(case):
    o = case.raw["options"]
    scheme = o.get("dtype", "bf16")
    T, B = case.raw["T"] + o.get("new_tokens", 0), case.raw["B"]
    for key in (k for k in CARDS if k in GPUS):
        card = GPUS[key]
        row = fit(case.model(), key, context=T, batch=B, only=(scheme,)).row(scheme)
        if row.fits:
            assert case.used <= card.usable, (key, case.used, card.usable)
    assert fit(case.model(), "h100", context=T, batch=B, only=(scheme,)).row(scheme).fits  # it ran there


def test_readme_shows_the_table():
    text = README.read_text(encoding="utf-8")
    m = TABLE.search(text)
    assert m, "README.md has no <!-- gpu-table --> block"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        README.write_text(TABLE.sub(lambda m: m.group(1) + table() + "\n" + m.group(3), text), encoding="utf-8")
    else:
        assert m.group(2) == table() + "\n"
