"""The host model buffer as llama.cpp maps and logs it (issue 35, item 1)."""

from __future__ import annotations

import pytest

import paramcount
from paramcount.memory import inference

from .gguf_files import gemma3_spec, write


def plan(model, scheme="q4_k_m", **given):
    return inference(model, scheme, context=4096, runtime="llama.cpp", **given)


def test_a_tied_head_is_mapped_once_at_ngl_zero(tmp_path):
    """Gemma 3 without output.weight at -ngl 0: token_embd, loaded again as the output head
    (TENSOR_DUPLICATED), is the same file data, mapped once (issue 35: +13.4% before)."""
    pytest.importorskip("gguf")
    spec = gemma3_spec("g3", 2, 256, 4, 1, 64, 512, 2048, ftype="F16")
    model = paramcount.load(str(write(spec, tmp_path / "g3.gguf")))
    host = plan(model, None, gpu_layers=0).term("host_weights")
    every = sum(r.bytes for r in plan(model, None, device="cpu").planner.every.rows)
    assert host.bytes == every  # F16 rows of 256 values: the span has no padding
    config = paramcount.load("google/gemma-3-1b-pt")
    rows = plan(config, gpu_layers=0).planner.loaded.rows
    assert plan(config, gpu_layers=0).term("host_weights").bytes == sum(r.bytes for r in rows)
