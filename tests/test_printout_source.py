"""Printouts of transformers classes no family defines: raw parameters named from the source
(frontends/printout_source), so such a count is a lower bound, never silently short."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paramcount.frontends.printout import from_text


def _printed(model_type: str, cls: str, **fields):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return str(model), sum(p.numel() for p in model.parameters())


def test_position_table_of_an_unknown_vision_family_is_named():
    text, real = _printed(
        "ijepa", "IJepaModel", hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        image_size=32, patch_size=8,
    )  # fmt: skip
    m = from_text(text, "ijepa").model
    assert m.total < real and m.inexact
    # mask_token is made only with use_mask_token: the source names it all the same (at least ...)
    assert "embeddings: mask_token, position_embeddings" in m.inexact


def test_an_unknown_family_without_raw_parameters_stays_exact():
    text, real = _printed(
        "xglm", "XGLMModel", d_model=32, num_layers=1, attention_heads=2, ffn_dim=64, vocab_size=100,
        max_position_embeddings=16,
    )  # fmt: skip
    m = from_text(text, "xglm").model
    assert m.inexact is None and m.total == real


def test_a_root_transformers_would_not_name_never_imports_it():
    code = (
        "import sys; from paramcount.frontends.printout import from_text;"
        "m = from_text('Net(\\n  (fc): Linear(in_features=2, out_features=3, bias=True)\\n)').model;"
        "print(m.total, 'transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["9", "False", "False"]
