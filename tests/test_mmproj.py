"""llama.cpp's multimodal projector files (mmproj-*.gguf, architecture "clip"): their vision
encoder (``v.``), projector (``mm.``) and audio encoder (``a.``) as towers, and a folder holding a
model's GGUF with its mmproj counted as one model."""

from __future__ import annotations

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError

from .test_gguf import LLAMA, META, Q, write

VH = 64
MMPROJ = [
    ("v.patch_embd.weight", (VH, 3, 14, 14), Q.F16),
    ("v.position_embd.weight", (16, VH), Q.F16),
    *[
        t
        for i in range(2)
        for t in (
            (f"v.blk.{i}.attn_q.weight", (VH, VH), Q.F16),
            (f"v.blk.{i}.attn_q.bias", (VH,), Q.F32),
            (f"v.blk.{i}.ffn_up.weight", (128, VH), Q.F16),
        )
    ],
    ("v.post_ln.weight", (VH,), Q.F32),
    ("mm.0.weight", (256, VH), Q.F16),
    ("mm.0.bias", (256,), Q.F32),
    ("mm.2.weight", (256, 256), Q.F16),
    ("a.blk.0.attn_q.weight", (32, 32), Q.F16),
]


def elements(tensors, prefix: str = "") -> int:
    total = 0
    for name, shape, _ in tensors:
        if name.startswith(prefix):
            n = 1
            for d in shape:
                n *= d
            total += n
    return total


@pytest.fixture
def folder(tmp_path):
    write(tmp_path / "tiny.gguf", LLAMA, meta=META)
    write(tmp_path / "mmproj-tiny-f16.gguf", MMPROJ, arch="clip")
    return tmp_path


def test_an_mmproj_file_is_its_towers(folder):
    m = paramcount.load(folder / "mmproj-tiny-f16.gguf")
    assert m.towers() == {
        "vision_encoder": elements(MMPROJ, "v."),
        "audio_encoder": elements(MMPROJ, "a."),
        "projector": elements(MMPROJ, "mm."),
    }
    assert m.total == elements(MMPROJ)


def test_a_model_and_its_mmproj_in_a_folder_are_one_model(folder, capsys):
    both = paramcount.load(folder)
    assert both.total == elements(LLAMA) + elements(MMPROJ)
    assert both.towers()["language_model"] == elements(LLAMA)
    assert any("multimodal projector" in n for n in both.notes)
    import json

    assert main([str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == both.total
    assert main(["memory", str(folder)]) == 0  # planned by llama.cpp's layout of the language model


def test_a_folder_of_two_models_is_refused_in_one_line(folder):
    write(folder / "other.gguf", LLAMA, meta=META)
    with pytest.raises(ParamcountError, match="holds 2 models and 1 projector files"):
        paramcount.load(folder)


def test_a_folder_with_only_a_model_counts_it(tmp_path):
    write(tmp_path / "tiny.gguf", LLAMA, meta=META)
    assert paramcount.load(tmp_path).total == elements(LLAMA)
