"""``paramcount memory … --replay``: the transformers step replayed in a child process, bounded,
and every refusal one line (src/paramcount/memory/runtimes/transformers/replay/).

The child's figures are those of the tracer and the allocator run here in the test's own process
on the same step; tests/test_alloc_trace.py holds that tracer and allocator to the GPU runs.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from dataclasses import replace

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.memory.core.overhead import CUDA_CONTEXT
from paramcount.memory.runtimes.transformers import replay

# A two-layer Llama: the child's run takes seconds, most of them torch's import.
TINY = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 4096,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("replay") / "config.json"
    path.write_text(json.dumps(TINY))
    return str(path)


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_the_json_is_the_childs_replay_of_the_step(tiny, capsys):
    """total = the peak reserved + the CUDA context; the figures are the tracer's and the
    allocator's on the same step, run here."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from paramcount.memory.runtimes.transformers.replay import allocator, trace

    assert main(["memory", tiny, "--context", "512", "--batch", "2", "--replay", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    terms = {t["key"]: t for t in doc["terms"]}
    assert set(terms) == {"reserved_peak", "cuda_context", "allocated_peak", "peak_op"}
    assert doc["total"]["bytes"] == terms["reserved_peak"]["bytes"] + terms["cuda_context"]["bytes"]
    assert terms["cuda_context"]["bytes"] == CUDA_CONTEXT
    assert doc["exact"] is False and "94 H100/H200 runs" in doc["estimate"]
    assert [t["key"] for t in doc["terms"] if t.get("in_total") is False] == ["allocated_peak", "peak_op"]
    assert doc["peak_op"].startswith("aten.") or doc["peak_op"] in ("weights", "cuBLAS workspace")
    events, marks = trace.trace("infer", TINY, 512, 2, {"dtype": "bf16"})
    places = (allocator.upward, allocator.downward, *(functools.partial(allocator.shuffled, s) for s in range(6)))
    reserved = max(allocator.replay(events, None, place())[0]["peak_reserved"] for place in places)
    allocated = allocator.replay(events, marks)[1]["peak_alloc"]  # the forward's, after the build
    assert (terms["allocated_peak"]["bytes"], terms["reserved_peak"]["bytes"]) == (allocated, reserved)
    assert torch.__version__ in " ".join(doc["notes"])


def test_the_text_names_the_peak_op_and_what_the_replay_is(tiny, capsys):
    pytest.importorskip("torch")
    argv = ["memory", tiny, "--context", "256", "--train", "--precision", "bf16", "--replay", "--gpu", "0.5GB"]
    assert main(argv) == 1  # as memory --gpu does: exit 1 where it does not fit
    out = capsys.readouterr().out
    assert "does not fit on" in out
    assert "training replayed" in out and "op that set the peak reserved" in out
    assert "a model of the allocator, not a GPU run" in out


def test_without_torch_one_line_names_the_extra(tiny, capsys, monkeypatch):
    monkeypatch.setattr(replay, "find_spec", lambda name: None)
    err = one_line(capsys, ["memory", tiny, "--replay"])
    assert "pip install 'paramcount[replay]'" in err and "--replay" in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--dtype", "int4"], "--dtype: --replay runs bf16, fp16 or fp32 weights, not 'int4'"),
        (["--attn", "flash_attention_2"], "--replay runs sdpa or eager attention"),
        (["--kv-dtype", "fp8"], "--kv-dtype: --replay does not model this flag"),
        (["--runtime", "vllm"], "--runtime: --replay models the transformers runtime only"),
        (["--train", "--qlora"], "--qlora: --replay does not model --qlora"),
        (["--train", "--recompute", "selective"], "--replay runs --recompute none or full"),
        (["--train", "--lora-rank", "8", "--precision", "fp32"], "--replay runs LoRA on bf16 weights"),
        (["--train", "--zero", "2"], "--zero: --replay does not model --zero"),
        (["--overhead", "1GiB"], "--overhead: --replay does not model this flag"),
        (["--ram", "64GB"], "--ram: --replay does not model this flag"),
        (["--gpu", "auto"], "--gpu: --replay takes a GPU by name or size, not auto"),
    ],
)
def test_what_the_replay_cannot_model_is_refused(tiny, capsys, flags, said):
    assert said in one_line(capsys, ["memory", tiny, "--replay", *flags])


def test_a_source_without_a_config_is_refused(capsys):
    model = paramcount.load("Qwen/Qwen3-0.6B")
    with pytest.raises(ParamcountError, match=r"builds the model from its config\.json"):
        replay.run(replace(model, config={}), replay.case(model, 128))


def test_a_model_type_transformers_does_not_know_is_refused(tiny):
    model = paramcount.load(tiny)
    unknown = replace(model, config={**TINY, "model_type": "nonesuch"})
    with pytest.raises(ParamcountError, match="model_type: transformers has no model_type 'nonesuch', and --replay"):
        replay.run(unknown, replay.case(model, 128))


def test_remote_code_is_never_run(tiny):
    """Refused before the child starts, and by the child itself (against the installed transformers)."""
    pytest.importorskip("transformers")
    from paramcount.memory.runtimes.transformers.replay.worker import known

    model = paramcount.load(tiny)
    remote = {**TINY, "auto_map": {"AutoModelForCausalLM": "modeling_x.X"}}
    with pytest.raises(ParamcountError, match="auto_map: --replay never runs the repository's own code"):
        replay.run(replace(model, config=remote), replay.case(model, 128))
    with pytest.raises(ValueError, match="auto_map"):
        known(remote)
    with pytest.raises(ValueError, match="transformers has no model_type 'nonesuch'"):
        known({**TINY, "model_type": "nonesuch"})


def test_past_the_time_limit_the_child_is_stopped(tiny):
    model = paramcount.load(tiny)
    with pytest.raises(ParamcountError, match=r"took longer than its limit of 0\.2 s and was stopped"):
        replay.run(model, replay.case(model, 128), limit=0.2)


def test_past_the_memory_limit_one_line(tiny):
    pytest.importorskip("torch")
    model = paramcount.load(tiny)
    with pytest.raises(ParamcountError, match=r"memory limit.{0,4}0\.0977 GiB") as e:
        replay.run(model, replay.case(model, 128), memory=100 << 20)
    assert "\n" not in str(e.value)


def test_the_steps_flags_as_the_tracer_takes_them():
    model = paramcount.load("Qwen/Qwen3-0.6B")
    assert replay.case(model, 1024, 2).options == {"dtype": "bf16"}
    lora = replay.case(model, 1024, train=True, lora_rank=16, lora_targets="q_proj,v_proj")
    assert (lora.kind, lora.options) == ("lora", {"r": 16, "targets": ["q_proj", "v_proj"], "recompute": "full"})
    assert replay.case(model, 1024, train=True).options == {"precision": "mixed", "recompute": "none"}
    assert replay.case(model, 1024, train=True, lora_rank=8, lora_targets=".*proj").options["targets"] == ".*proj"


def test_importing_the_replay_imports_no_torch():
    code = (
        "import sys; import paramcount.memory.runtimes.transformers.replay as r; import paramcount.cli;"
        "print([m for m in ('torch', 'transformers', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
