"""-sm none -mg N without -ts (issue 35): llama.cpp runs the model on GPU N alone."""

from __future__ import annotations

import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.placement import placement


def plan(model, scheme="q4_k_m", **given):
    return inference(model, scheme, context=4096, runtime="llama.cpp", **given)


def test_split_mode_none_takes_a_main_gpu_without_a_tensor_split():
    """-sm none -mg 1 on two devices without -ts: llama.cpp runs it (common/arg.cpp takes
    --main-gpu as given; llama_model_load checks it against the devices found)."""
    p = placement(split_mode="none", main_gpu=1)
    assert p.names() == ("CUDA1",) and p.devices == 1
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    one, other = plan(model, gpu_layers=33), plan(model, split_mode="none", main_gpu=1)
    assert other.settings["devices"]["CUDA1"] == one.settings["devices"]["CUDA0"]
    for bad in ({"main_gpu": 1}, {"split_mode": "none", "main_gpu": 16}):
        with pytest.raises(ParamcountError) as e:
            placement(**bad)
        assert e.value.field == "--main-gpu" and "no GPU" in str(e.value)
