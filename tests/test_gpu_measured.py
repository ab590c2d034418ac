"""Every plan of the transformers runtime held to what an H100 and an H200 really held
(tests/fixtures/gpu_h100.json and gpu_h200.json, see tools/record_gpu.py): the plan's total
within −3% and +20% of the card's use at the peak (peak reserved + the CUDA context), the plan's
tensors (weights, KV cache, activations and cuBLAS' workspace) within ±10% of the peak
allocation; ``fit`` says "fits" only where the measured run fitted; docs/memory.md's table is
this table."""

import os
import re
from pathlib import Path

import pytest

from paramcount.memory import fit
from paramcount.memory.core.gpus import GPUS

from .gpu_cases import allocated, cases, ratio, summary, table

PAGE = Path(__file__).parent.parent / "docs" / "memory.md"
README = Path(__file__).parent.parent / "README.md"
TABLE = re.compile(r"(<!-- gpu-table -->\n)(.*?)(<!-- /gpu-table -->)", re.S)
SUMMARY = re.compile(r"(<!-- gpu-summary -->\n)(.*?)(<!-- /gpu-summary -->)", re.S)
# Not within the goal, with the figures: over, on the safe side ("fits" holds).
SHORT = {
    # Eager bf16 attention: 3 score blocks planned cached beyond the peak. The allocator replayed
    # on this forward's own allocations (tests/test_alloc_trace.py) holds 0.9 of a block or 2.9,
    # by where the driver puts the segments (best-fit splits the lowest address of equal sizes):
    # this run got 0.9; eight other eager bf16 runs held 1.6 to 3.0. No plan can tell which.
    "H200: Qwen/Qwen2.5-1.5B, 4,096 × 4, attn eager": "plan 18.2 GB against 14.3 GB used (+27%)",
}
# Not planned as it ran: transformers 5.17 ran Gemma 2 with sdpa, which 5.23 (whose defaults
# paramcount models) no longer offers it (Gemma2PreTrainedModel._supports_sdpa = False); run 2
# measured the same case with eager attention, as 5.23 runs it.
SKIP = {"H200: google/gemma-2-2b, 8,192 × 1": "measured with sdpa under transformers 5.17; 5.23 runs eager"}


def _marks(c, short: dict[str, str]):
    if c.name in SKIP:
        return [pytest.mark.skip(reason=SKIP[c.name])]
    return [pytest.mark.xfail(reason=short[c.name], strict=True)] if c.name in short else []


CASES = [pytest.param(c, id=c.name, marks=_marks(c, SHORT)) for c in cases()]
MEASURED = [pytest.param(c, id=c.name, marks=_marks(c, {})) for c in cases() if not c.reported]


@pytest.mark.parametrize("case", CASES)
def test_plan_total_against_the_card(case):
    plan = case.plan()
    assert -0.03 <= ratio(plan.total, case.used) <= 0.20, (plan.total, case.used)


@pytest.mark.parametrize("case", MEASURED)
def test_plan_tensors_against_the_peak_allocation(case):
    plan = case.plan()
    assert abs(ratio(allocated(plan), case.peak_alloc)) <= 0.10, (allocated(plan), case.peak_alloc)


CARDS = ("h200", "h100", "a100-40gb", "l40s", "rtx4090", "rtx3090", "l4", "rtx4080", "a10")


def _fits(case, card: str) -> bool:
    o, kind = case.raw["options"], case.raw["kind"]
    T, B = case.tokens, case.raw["B"]
    if kind in ("infer", "generate"):
        scheme = o.get("dtype", "bf16")
        rows = fit(case.model(), card, context=T, batch=B, only=(scheme,), attn=o.get("attn"), cache=o.get("cache"))
        return rows.row(scheme).fits
    precision = o.get("precision", "bf16")
    extra = {"recompute": o.get("recompute", "none")}
    if kind == "lora":
        extra.update(lora=o["r"], lora_targets=o.get("targets"))
    rows = fit(case.model(), card, context=T, batch=B, mode="training", only=(precision,), **extra)
    return rows.row(precision).fits


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c, {})) for c in cases()])
def test_fit_says_fits_only_where_the_run_fitted(case):
    for key in (k for k in CARDS if k in GPUS):
        if _fits(case, key):
            assert case.used <= GPUS[key].usable, (key, case.used, GPUS[key].usable)
    assert _fits(case, case.gpu.lower())  # it ran there


def _shows(page: Path, block: re.Pattern, text: str) -> None:
    page_text = page.read_text(encoding="utf-8")
    m = block.search(page_text)
    assert m, f"{page.name} has no {block.pattern[1:20]} block"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        page.write_text(block.sub(lambda m: m.group(1) + text + "\n" + m.group(3), page_text), encoding="utf-8")
    else:
        assert m.group(2) == text + "\n"


def test_docs_show_the_table():
    _shows(PAGE, TABLE, table(SKIP))


def test_readme_shows_the_summary():
    _shows(README, SUMMARY, summary(frozenset(SKIP)))
