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
