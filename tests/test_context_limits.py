"""A context past the model's limit: refused where positions are a learned table, planned with
a warning naming what extends it where the runtime runs it (src/llama-context.cpp warns
"n_ctx_seq > n_ctx_train"; rotary positions have no table in transformers)."""

from __future__ import annotations

from pathlib import Path

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory import inference

FIXTURE = Path(__file__).parent / "fixtures" / "tiny-llama.gguf"


@pytest.mark.parametrize(
    ("model", "context", "field"),
    [("bert-base-uncased", 32768, "max_position_embeddings"), ("gpt2", 2000, "n_positions")],
)
def test_learned_positions_refuse_a_longer_context(capsys, model, context, field):
    assert main(["memory", model, "--context", str(context)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "learned positions" in err and field in err and "--context" in err
    with pytest.raises(ParamcountError, match="no runtime can run it"):
        inference(paramcount.load(model), context=context, runtime="llama.cpp")


def test_at_the_limit_nothing_is_said():
    plan = inference(paramcount.load("gpt2"), context=1024)
    assert not any("past the model" in n for n in plan.notes)


def test_rotary_models_are_planned_with_a_warning_per_runtime():
    torch_plan = inference(paramcount.load("google/gemma-2-2b"), context=16384)
    said = next(n for n in torch_plan.notes if "past the model" in n)
    assert "max_position_embeddings of 8,192" in said and "rope_scaling" in said and '"factor": 2' in said
    llama_plan = inference(paramcount.load("google/gemma-2-2b"), context=16384, runtime="llama.cpp")
    said = next(n for n in llama_plan.notes if "past the model" in n)
    assert "n_ctx_train" in said and "--rope-scaling yarn --rope-scale 2 --yarn-orig-ctx 8192" in said


def test_a_gguf_files_context_length():
    plan = inference(paramcount.load(str(FIXTURE)), context=5000)
    said = next(n for n in plan.notes if "past the model" in n)
    assert "context_length of 2,048" in said and "--yarn-orig-ctx 2048 " in said and "--rope-scale 3" in said
