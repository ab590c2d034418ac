"""llama.cpp mixes from a config for language models whose converter writes tensors the counted
model lacks (Gemma 4's generated rope table and layer scalars, multi-token-prediction layers),
held to llama.cpp's own converter.

Oracle: tests/fixtures/llamacpp_mmproj.json, recorded by benchmarks/record_converter.py (its
text-only entries): the tensors llama.cpp's ``convert_hf_to_gguf.py`` classes
(llama-cpp-python 0.3.36) write for each config with ``--outtype auto`` from a sparse BF16
checkpoint named as the published checkpoints name their tensors, with the checkpoint's buffers
and MTP layers. The plan's rows are mapped to GGUF names through gguf-py's tensor_mapping after
each converter's own renames (listed below, from its class); llama-quantize's type for each
tensor under q4_k_m and q4_0 is derived from llama-quant.cpp's rules on the recorded names and
shapes (test_quant_mix_vl.quantised), not from paramcount's tables.
"""

from __future__ import annotations

import re

import pytest

import paramcount
from paramcount.memory.weights import weights

from .test_quant_mix_vl import MODELS, _bytes, expand, gemma4_name, plan_tensors, quantised

gguf = pytest.importorskip("gguf")
TEXT_ONLY = [m for m, v in MODELS.items() if "class" in v.get("text", {}) and "mmproj" not in v]
TEXT_ONLY = ["gemma4-moe"]


def load(name: str) -> paramcount.Model:
    return paramcount.load(MODELS[name]["config"] or dict(paramcount.load(name).config))


def _mapped(tmap, name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    gname = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
    assert gname is not None, name
    return [(gname, shape)]


def gemma4(tmap, config: dict):
    """Gemma4Model: gemma4_name's renames; the router's scales by modify_tensors."""

    def names(name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if name == "rope_freqs.weight":
            return [(name, shape)]
        if m := re.fullmatch(r"model\.layers\.(\d+)\.router\.(scale|per_expert_scale)", name):
            return [(f"blk.{m[1]}.{'ffn_gate_inp' if m[2] == 'scale' else 'ffn_down_exps'}.scale", shape)]
        return _mapped(tmap, gemma4_name(name), shape)

    return names


NAMES = {"gemma4": gemma4}


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0"])
@pytest.mark.parametrize("name", TEXT_ONLY)
def test_the_file_tensor_by_tensor(name, ftype):
    """Every tensor of the language-model file, named, shaped and typed as the converter and
    llama-quantize write them; the plan's bytes are the file's tensor bytes."""
    rec = MODELS[name]["text"]
    m = load(name)
    config = dict(m.config)
    arch = getattr(gguf.MODEL_ARCH, rec["gguf_arch"].upper())
    names = NAMES[rec["gguf_arch"]](gguf.get_tensor_name_map(arch, 200), config)
    want = quantised(ftype, expand(rec["tensors"]), config)
    w = weights(m, ftype)
    got = plan_tensors(w, config, rec["gguf_arch"], names)
    assert set(got) == set(want), (sorted(set(got) - set(want))[:6], sorted(set(want) - set(got))[:6])
    assert {k: (v, want[k]) for k, v in got.items() if v != want[k]} == {}
    assert w.bytes == _bytes(want)
    assert rec["class"] in w.term().assumption
