"""--arch, its dimension flags and --set on every command that takes a model: the same model as
the bare count, the defaults taken and the class counted said once on stderr, and the mistakes
refused in one line."""

import json

import pytest

from paramcount.cli import main

# A two-layer Llama: 6,400 embedding + 2 × 41,088 per layer + 64 final norm = 88,640 parameters.
TINY = ["--arch", "llama", "--layers", "2", "--hidden", "64", "--heads", "4", "--intermediate", "128"]
TINY += ["--vocab", "100"]
DEFAULTS = "--arch llama: not given, so llama's defaults: attention_bias = False, mlp_bias = False"
CLASS = "--arch llama: counted as LlamaModel, the backbone alone: --class LlamaForCausalLM (or another class)"


def run(capsys, *argv):
    code = main([*argv, "--width", "120"])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_bare_count_names_the_class_and_the_defaults(capsys):
    code, out, err = run(capsys, *TINY)
    assert code == 0 and not err and "88,640" in out
    assert "not given, so llama's defaults: attention_bias = False" in out and "counted as LlamaModel" in out
    code, out, _ = run(capsys, *TINY, "--class", "LlamaForCausalLM")
    assert code == 0 and "counted as" not in out  # the class asked for needs no word


@pytest.mark.parametrize(
    "command",
    [["explain"], ["compute"], ["memory"], ["fit"], ["fit", "--gpu", "rtx3060"], ["check", "88640"]],
    ids=lambda c: " ".join(c),
)
def test_every_command_takes_arch(capsys, command):
    code, out, err = run(capsys, *command, *TINY)
    assert code == 0 and "88,640" in out
    assert err.splitlines() == [f"paramcount: {DEFAULTS}", err.splitlines()[1]]  # once each, though loaded twice
    assert err.splitlines()[1].startswith(f"paramcount: {CLASS}")


@pytest.mark.parametrize("command", [["explain"], ["compute"], ["memory"], ["fit"], ["check", "129728"]])
def test_set_beside_arch(capsys, command):
    """--set reaches the --arch model: a third layer adds 41,088 to every command's count."""
    code, out, _ = run(capsys, *command, *TINY, "--set", "num_hidden_layers=3")
    assert code == 0 and "129,728" in out and "88,640" not in out


def test_json_stays_clean(capsys):
    code, out, err = run(capsys, "memory", *TINY, "--json")
    assert code == 0 and json.loads(out)["model"]["parameters"] == 88640
    assert DEFAULTS in err


def test_memory_context_is_the_run_and_max_positions_is_set(capsys):
    """memory, fit and compute keep --context for the tokens of a run; the trained limit is --set."""
    code, out, _ = run(capsys, "memory", *TINY, "--context", "100", "--set", "max_position_embeddings=256")
    assert code == 0 and "100 tokens × batch 1" in out


def test_compare_counts_arch_as_one_model(capsys):
    code, out, _ = run(capsys, "compare", *TINY, "bert-base-uncased")
    assert code == 0 and "#1: --arch llama (LlamaModel)" in out and "#2: google-bert/bert-base-uncased" in out


def test_diff_from_arch_to_a_config(capsys, tmp_path):
    dims = {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2, **dims}))
    assert run(capsys, "diff", *TINY, str(tmp_path / "config.json"))[0] == 0  # the same tensors
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 3, **dims}))
    code, out, _ = run(capsys, "diff", *TINY, str(tmp_path / "config.json"))
    assert code == 1 and "layers.2" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "bert-base-uncased", *TINY], "--arch: give a model or --arch, not both"),
        (["memory", "bert-base-uncased", "--layers", "2"], "--arch: dimension flags need --arch"),
        (["fit"], "model: give a model: a catalog name, hub id, file or folder, or --arch"),
        (["compute", "--heads", "4"], "--arch: dimension flags need --arch"),
        (["check", "100"], "model: give a model"),
        (["compare", *TINY], "MODEL: give two or more models to compare (--arch counts as one)"),
        (["compare", "bert-base-uncased"], "MODEL: give two or more models to compare"),
        (["memory", "--arch", "nonsense"], "unknown model_type 'nonsense'; supported:"),
        (["explain", "--arch", "llama", "--hidden", "770"], "hidden_size: 770 is not divisible"),
        (["fit", "--arch", "llama", "--set", "novalue"], "expected name=value"),
    ],
)
def test_mistakes_are_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.startswith("paramcount: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", ["explain", "check", "compare", "diff", "compute", "memory", "fit"])
def test_every_help_lists_the_dimensions(capsys, command):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--arch MODEL_TYPE" in out and "--layers N" in out and "--set FIELD=VALUE" in out
    # memory, fit and compute keep --context for the run: the help says how to set the limit
    assert ("--set max_position_embeddings=N" in out) == (command in ("compute", "memory", "fit"))
