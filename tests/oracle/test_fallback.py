"""The transformers fallback: model_types with no native family, counted by transformers itself.

The count is read back from a meta-device model, so the oracle holds it tensor by tensor like a
native family; the rest of the tool (tree, JSON, memory, fit, compute, compare, diff) must work
on it, and what needs a native family (a derivation, a slip check) must say so in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.arch import supported
from paramcount.cli import main
from paramcount.frontends import fallback

from .oracle import differences, ours, truth

# Five families with no native module, of different shapes: a Mamba, a GPT-J-like, a
# partial-rotary decoder, an encoder-decoder-era decoder with sinusoidal positions, an RNN.
TINY = {
    "falcon_mamba": {"hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300, "state_size": 8},
    "codegen": {"n_embd": 64, "n_layer": 3, "n_head": 4, "vocab_size": 300, "rotary_dim": 8},
    "persimmon": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300},
    "xglm": {"d_model": 64, "num_layers": 2, "attention_heads": 4, "ffn_dim": 96, "vocab_size": 300},
    "rwkv": {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 300, "attention_hidden_size": 64},
    "biogpt": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300},
}
CLASSES = {
    "falcon_mamba": "FalconMambaForCausalLM",
    "codegen": "CodeGenForCausalLM",
    "persimmon": "PersimmonForCausalLM",
    "xglm": "XGLMForCausalLM",
    "rwkv": "RwkvForCausalLM",
    "biogpt": "BioGptForCausalLM",
}


def config(model_type: str) -> dict:
    return {"model_type": model_type, "architectures": [CLASSES[model_type]], **TINY[model_type]}


def test_none_of_these_is_native():
    assert not set(TINY) & set(supported())


@pytest.mark.parametrize("model_type", TINY)
def test_counted_by_transformers_equals_transformers(model_type):
    model = paramcount.load(config(model_type))
    assert model.counted_by == "transformers"
    assert model.class_name == CLASSES[model_type]
    assert not differences(ours(model), truth(config(model_type), model.class_name, model_type))
    assert any("counted by transformers" in n for n in model.notes)


@pytest.mark.parametrize("model_type", ["codegen", "persimmon", "biogpt"])
def test_backbone_is_the_base_model_inside(model_type):
    model = paramcount.load(config(model_type))
    base = paramcount.load(config(model_type), model_class="base")
    assert model.backbone_class == base.class_name
    assert model.backbone_total == base.total
    assert not differences(ours(base), truth(config(model_type), base.class_name, model_type))


def test_a_head_class_by_name():
    model = paramcount.load(config("biogpt"), model_class="BioGptForSequenceClassification")
    assert not differences(ours(model), truth(config("biogpt"), model.class_name, "biogpt"))


def test_a_class_of_another_family_is_refused():
    with pytest.raises(ParamcountError, match="no class 'LlamaForCausalLM' for codegen; choose one of: base, CodeGen"):
        paramcount.load(config("codegen"), model_class="LlamaForCausalLM")


def test_native_families_are_never_counted_by_transformers():
    assert paramcount.load({"model_type": "llama", "num_hidden_layers": 2}).counted_by == "paramcount"


def test_remote_code_is_refused_in_one_line():
    raw = {"model_type": "my_own_lm", "auto_map": {"AutoModelForCausalLM": "modeling_my.MyLM"}}
    with pytest.raises(ParamcountError, match="never runs remote code") as e:
        paramcount.load(raw)
    assert "\n" not in str(e.value)


def test_unknown_everywhere():
    with pytest.raises(ParamcountError, match="unknown model_type 'no_such_thing': transformers"):
        paramcount.load({"model_type": "no_such_thing"})


def test_without_the_extra_the_error_names_it(monkeypatch):
    monkeypatch.setattr(fallback, "available", lambda: False)
    with pytest.raises(ParamcountError, match=r"paramcount\[transformers\]"):
        paramcount.load(config("codegen"))


def test_layers_beyond_the_bound_are_refused_before_building():
    with pytest.raises(ParamcountError, match="n_layer: 5,000 is over 1,024"):
        paramcount.load({**config("codegen"), "n_layer": 5000})


def test_a_config_transformers_rejects_is_one_line():
    with pytest.raises(ParamcountError, match="transformers") as e:
        paramcount.load({**config("codegen"), "n_head": 7})
    assert "\n" not in str(e.value)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--width", "120"] if args[0] not in ("diff", "compare", "explain", "check") else list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fallback") / "config.json"
    path.write_text(json.dumps(config("falcon_mamba")))
    return str(path)


def test_every_command_works_or_says_why(config_file, capsys):
    code, out, _ = cli(capsys, config_file, "--tree", "3")
    assert code == 0 and "counted by transformers" in out
    data = json.loads(cli(capsys, config_file, "--json")[1])
    assert data["counted_by"] == "transformers"
    assert data["total"] == paramcount.load(config("falcon_mamba")).total
    assert sum(t["count"] for t in data["tensors"]) == data["total"]
    for args in (["memory"], ["fit", "--gpu", "h100"], ["compute"], ["compare", "gpt2"], ["diff", config_file]):
        code, _, err = cli(capsys, args[0], config_file, *args[1:])
        assert code == 0, (args, err)
    memory = json.loads(cli(capsys, "memory", config_file, "--json")[1])
    assert memory["partial"] and "counted by transformers" in memory["partial"]
    for args in (["explain", config_file], ["check", config_file, "1M"]):
        code, _, err = cli(capsys, *args)
        assert code == 2 and "needs a native paramcount family" in err
        assert len(err.strip().splitlines()) == 1


def test_native_json_says_paramcount(capsys):
    assert json.loads(cli(capsys, "gpt2", "--json")[1])["counted_by"] == "paramcount"


def test_the_command_line_says_it_plainly(config_file):
    """One real process, as a user runs it with the extra installed."""
    done = subprocess.run(
        [sys.executable, "-m", "paramcount", config_file, "--width", "120"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "falcon_mamba · " in done.stdout and "counted by transformers" in done.stdout
    # the worker's start takes seconds: one line says so, on stderr, before it
    assert done.stderr == "paramcount: counting falcon_mamba with transformers (no native family): importing torch …\n"


def test_a_warm_worker_starts_nothing_and_says_nothing(config_file, capsys):
    cli(capsys, config_file, "--json")
    code, out, err = cli(capsys, config_file, "--json")
    assert code == 0 and json.loads(out)["counted_by"] == "transformers" and err == ""


@pytest.mark.parametrize("argv", [["explain"], ["check", "--", "1M"]], ids=["explain", "check"])
def test_explain_and_check_refuse_before_the_worker_is_asked(config_file, capsys, monkeypatch, argv):
    """What needs a native family is refused from the config alone: the worker is never asked."""
    from paramcount.frontends import fallback_worker

    def asked(*_):
        raise AssertionError("the worker was asked")

    monkeypatch.setattr(fallback_worker, "ask", asked)
    code, out, err = cli(capsys, argv[0], config_file, *argv[1:])
    what = "a derivation" if argv[0] == "explain" else "checking an answer"
    assert code == 2 and not out
    assert f"model_type: {what} needs a native paramcount family; 'falcon_mamba' has none, so transformers" in err
    assert len(err.splitlines()) == 1 and "importing torch" not in err


def test_explain_imports_nothing_heavy(config_file):
    """One real process: the refusal comes before torch, transformers or a worker process."""
    script = (
        "import sys; from paramcount.cli import main; from paramcount.frontends.fallback_worker import WORKER; "
        f"code = main(['explain', {config_file!r}]); "
        "print(code, 'torch' in sys.modules, 'transformers' in sys.modules, WORKER.pid, WORKER.served)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False", "False", "None", "0"], done.stderr
    assert "a derivation needs a native paramcount family" in done.stderr


def test_architectures_naming_another_class_are_passed_over_with_a_note():
    model = paramcount.load({**config("codegen"), "architectures": ["Trainer"]})
    assert model.class_name == "CodeGenModel"
    assert "class 'Trainer' from 'architectures' is not one transformers maps for codegen" in " ".join(model.notes)
