"""A GGUF file's family from its metadata (paramcount.family.gguf), held to files llama.cpp's
converter wrote: tests/fixtures/llamacpp_hybrid.json (each family's small config and the spec
of its converted file) and llamacpp_quant.json / llamacpp_buffers.json (llama, Mixtral-style
MoE, Gemma 3). A mapped architecture gives the family's tree, and compute the config route's
figures; a file its metadata does not describe, or an architecture not mapped, says why not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paramcount
from paramcount.compute_report import report
from paramcount.family import GGUF, resolve

from . import gguf_files

pytest.importorskip("gguf")

FIXTURES = Path(__file__).parent / "fixtures"
HYBRID = json.loads((FIXTURES / "llamacpp_hybrid.json").read_text())["families"]
MAPPED = ["mamba", "mamba2", "jamba", "granitemoehybrid", "lfm2"]
NOT_MAPPED = sorted(set(HYBRID) - set(MAPPED))
SPECS = {
    name: spec
    for file in ("llamacpp_quant.json", "llamacpp_buffers.json")
    for name, spec in json.loads((FIXTURES / file).read_text())["models"].items()
}
LLAMA = gguf_files.llama_spec("tiny", 2, 64, 4, 2, 128, 64, context=128)


def test_the_class_name_is_the_readers():
    from paramcount.gguf.meta import GGUF as READERS

    assert GGUF == READERS


@pytest.mark.parametrize("family", MAPPED)
def test_a_converted_hybrid_file_is_its_configs_model(tmp_path, family):
    small = HYBRID[family]["small"]
    r = resolve(paramcount.load(gguf_files.write(small["spec"], tmp_path / "m.gguf")))
    config = paramcount.load(small["config"])
    assert r.is_family and r.model.total == config.total and r.model.active_total == config.active_total
    mine, theirs = report(r.model, 64).to_dict(), report(config, 64).to_dict()
    assert mine["parameters"] == theirs["parameters"] and mine["forward"] == theirs["forward"]
    assert mine["attention_exact"] == theirs["attention_exact"]


@pytest.mark.parametrize("family", NOT_MAPPED)
def test_an_architecture_not_mapped_says_so(tmp_path, family):
    spec = HYBRID[family]["small"]["spec"]
    r = resolve(paramcount.load(gguf_files.write(spec, tmp_path / "m.gguf")))
    assert not r.is_family and f"{spec['arch']!r} is not mapped" in r.why


@pytest.mark.parametrize("name", sorted(SPECS))
def test_recorded_llama_moe_and_gemma3_files_have_their_family(tmp_path, name):
    r = resolve(paramcount.load(gguf_files.write(SPECS[name], tmp_path / "m.gguf")))
    assert r.is_family and "every tensor's shape agrees" in r.checked
    assert r.model.total == paramcount.load(tmp_path / "m.gguf").total


def test_a_file_whose_tensors_are_not_its_metadata_is_not_derived(tmp_path):
    spec = {**LLAMA, "meta": {**LLAMA["meta"], "feed_forward_length": 96}}  # the tensors say 128
    r = resolve(paramcount.load(gguf_files.write(spec, tmp_path / "wrong.gguf")))
    assert not r.is_family and "differ" in r.why and "128×64" in r.why


def test_a_bad_metadata_value_is_said_not_used(tmp_path):
    spec = {**LLAMA, "meta": {**LLAMA["meta"], "attention.head_count": "four"}}
    r = resolve(paramcount.load(gguf_files.write(spec, tmp_path / "bad.gguf")))
    assert not r.is_family and "llama.attention.head_count: expected a whole number, got 'four'" in r.why


def test_jamba_layers_that_follow_no_schedule_are_said(tmp_path):
    spec = json.loads(json.dumps(HYBRID["jamba"]["small"]["spec"]))
    kv = spec["meta"]["attention.head_count_kv"]
    spec["meta"]["attention.head_count_kv"] = [2 if i in (1, 2) else 0 for i in range(len(kv))]
    r = resolve(paramcount.load(gguf_files.write(spec, tmp_path / "j.gguf")))
    assert not r.is_family and "follow no period and offset" in r.why


def test_a_gguf_folder_with_its_mmproj_says_why_it_has_no_family(tmp_path):
    from .test_gguf import LLAMA as TENSORS
    from .test_gguf import META, write
    from .test_mmproj import MMPROJ

    write(tmp_path / "tiny.gguf", TENSORS, meta=META)
    write(tmp_path / "mmproj-tiny-f16.gguf", MMPROJ, arch="clip")
    for source in (tmp_path, tmp_path / "mmproj-tiny-f16.gguf"):
        r = resolve(paramcount.load(source))
        assert not r.is_family and "mmproj" in r.why
    assert resolve(paramcount.load(tmp_path / "tiny.gguf")).is_family  # the language model alone has one


def test_a_key_the_file_does_not_state_is_named(tmp_path):
    meta = {k: v for k, v in LLAMA["meta"].items() if k != "block_count"}
    r = resolve(paramcount.load(gguf_files.write({**LLAMA, "meta": meta}, tmp_path / "m.gguf")))
    assert not r.is_family and "llama.block_count is needed to build the family's tree" in r.why


CONVERTED = json.loads((FIXTURES / "llamacpp_mmproj.json").read_text())["models"]


def converted_text(hub: str, arch: str) -> dict:
    """The language model's GGUF as llama.cpp's converter wrote it (tensors recorded in
    llamacpp_mmproj.json, ``blk.{}`` over a range of layers), its metadata from the catalog config."""
    config = paramcount.load(hub).config
    tc = config.get("text_config") or config  # Qwen2.5-VL's config keeps its text fields at the top
    tensors = []
    for name, shape, qtype, layers in CONVERTED[hub]["text"]["tensors"]:
        first, _, last = layers.partition("-")
        tensors += [[name.format(i), shape, qtype] for i in range(int(first), int(last) + 1)] if layers else []
        tensors += [] if layers else [[name, shape, qtype]]
    keys = ("block_count", "num_hidden_layers"), ("embedding_length", "hidden_size")
    keys += ("feed_forward_length", "intermediate_size"), ("attention.head_count", "num_attention_heads")
    keys += ("attention.head_count_kv", "num_key_value_heads"), ("attention.key_length", "head_dim")
    meta = {k: tc[f] for k, f in keys if f in tc}
    return {"name": hub, "arch": arch, "meta": meta, "tensors": tensors, "vocab": 16}


VL = [("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2vl"), ("Qwen/Qwen3-VL-8B-Instruct", "qwen3vl")]


@pytest.mark.parametrize(("hub", "arch"), VL)
def test_an_image_text_models_language_file_is_its_language_tower(tmp_path, hub, arch):
    """The GGUF of Qwen2.5-VL's or Qwen3-VL's language model (the vision tower goes to an mmproj)
    is Qwen2's or Qwen3's decoder: exactly the catalog model's language_model tower."""
    r = resolve(paramcount.load(gguf_files.write(converted_text(hub, arch), tmp_path / "m.gguf")))
    assert r.is_family and r.model.total == paramcount.load(hub).towers()["language_model"]


@pytest.mark.parametrize(
    ("indices", "n", "schedule"),
    [({4}, 8, (8, 4)), ({1, 3, 5, 7}, 8, (2, 1)), ({0}, 1, (1, 0)), (set(), 4, (5, 4)), ({3}, 4, (4, 3))],
)
def test_a_jamba_schedule_is_read_back(indices, n, schedule):
    from paramcount.family.gguf import _every

    assert _every(indices, n, "attention") == schedule
    period, offset = schedule
    assert {i for i in range(n) if i % period == offset} == indices and offset < period


def test_a_jamba_schedule_is_linear_in_the_layers():
    """1,024 layers (the longest per-layer array a GGUF file's reader keeps) in one pass, not n³."""
    from paramcount.family.gguf import _every

    assert _every(set(range(5, 1024, 7)), 1024, "expert") == (7, 5)
    with pytest.raises(paramcount.ParamcountError, match=r"follow no period and offset"):
        _every({*range(5, 1024, 7), 6}, 1024, "expert")


def test_a_vocabulary_table_that_is_no_matrix_is_said(tmp_path):
    tensors = [["token_embd.weight", [64 * 64], "F16"], *LLAMA["tensors"][1:]]
    r = resolve(paramcount.load(gguf_files.write({**LLAMA, "tensors": tensors}, tmp_path / "m.gguf")))
    assert not r.is_family and "no token_embd.weight matrix" in r.why
