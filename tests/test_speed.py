"""Speed: what a token reads and computes, the bounds, the estimates and their calibration."""

from __future__ import annotations

import pytest

import paramcount
from paramcount.memory import speed
from paramcount.memory.core.gpus import gpu
from paramcount.memory.runtimes import planner
from paramcount.memory.speed.lookups import lookups

BF16 = 2


def test_decode_bound_reads_the_embedding_rows_looked_up_not_the_table():
    p = planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bf16", "vllm")
    table, row = 128256 * 4096 * BF16, 4096 * BF16
    assert lookups(p.weights.rows).table == table and lookups(p.weights.rows).row == row
    assert speed.weights_read(p, 1) == p.stages[0].share.bytes - table + row
    assert speed.weights_read(p, 3) == p.stages[0].share.bytes - table + 3 * row
    d = speed.decode(p, gpu("h100"), 1, 1)
    assert 221 <= d.tokens_per_s <= 224  # 15.01 GB a step at 3.35 TB/s; 207 when it read the whole table


def test_a_tied_table_is_read_whole_by_the_head():
    p = planner(paramcount.load("meta-llama/Llama-3.2-1B"), "bf16", "vllm")
    assert lookups(p.weights.rows).table == 0
    assert speed.weights_read(p, 1) == p.stages[0].share.bytes


def test_positions_are_looked_up_too():
    found = lookups(planner(paramcount.load("gpt2"), "bf16", "vllm").weights.rows)  # wte tied, wpe not
    assert (found.table, found.row) == (1024 * 768 * BF16, 768 * BF16)
    assert found.read(5000) == found.table  # no more than the table


@pytest.mark.parametrize("context", [1, 4096])
def test_the_bound_is_memory_bound_for_one_sequence(context):
    p = planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bf16", "vllm")
    assert speed.decode(p, gpu("h100"), context, 1).limit == "memory"


# ---- calibration ------------------------------------------------------------------------------


def _fit_module():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "speed_calibration" / "fit.py"
    spec = importlib.util.spec_from_file_location("speed_fit", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_committed_factors_are_what_the_script_fits_from_the_committed_data():
    from importlib import resources

    fit = _fit_module()
    rows, left = fit.read()
    assert len(rows) >= 90 and left > 0  # rows of cards not in the catalog stay in the data, unfitted
    committed = resources.files("paramcount.memory.speed").joinpath("factors.json").read_text(encoding="utf-8")
    assert committed == fit.text(fit.factors(rows))


def test_every_calibration_row_cites_its_source():
    import csv
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "tools" / "speed_calibration"
    for path in folder.glob("*.csv"):
        for row in csv.DictReader(path.open(encoding="utf-8")):
            assert row["source"].startswith("https://github.com/ggml-org/llama.cpp/discussions/"), row
            assert float(row["tokens_per_s"]) > 0
