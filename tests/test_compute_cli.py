"""`paramcount compute`: snapshots at a fixed width, the JSON document against the library's own
calls (paramcount.memory.flops), the token parser, and every bad value as one line with exit 2."""

import json
import subprocess
import sys

import pytest

from paramcount import load
from paramcount.cli import main
from paramcount.compute_report import report
from paramcount.errors import ParamcountError
from paramcount.memory.core.gpus import GPUS
from paramcount.memory.flops import (
    attention_widths,
    chinchilla_tokens,
    forward_flops,
    parse_tokens,
    train_time,
    training_flops,
)

GPT3 = "openai/gpt-3-175b"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def document(capsys, *argv) -> dict:
    code, out, err = run(capsys, "compute", *argv, "--json")
    assert code == 0 and not err
    return json.loads(out)


@pytest.mark.parametrize(
    "argv, name",
    [
        ([GPT3, "--tokens", "300B", "--gpu", "a100-80gb", "--gpus", "1024"], "compute-gpt3-300b-a100.txt"),
        (["mistralai/Mixtral-8x7B-v0.1", "--context", "2048"], "compute-mixtral-8x7b.txt"),
    ],
)
def test_snapshots(capsys, snapshot, argv, name):
    code, out, err = run(capsys, "compute", *argv, "--width", "100")
    assert code == 0 and not err
    snapshot(name, out)


# ---- the JSON document is the library's figures ------------------------------------------------

MODELS = [
    ("gpt2", None, None),
    (GPT3, 2048, "300B"),
    ("mistralai/Mixtral-8x7B-v0.1", 4096, "1.4e12"),  # MoE: k of E experts
    ("Qwen/Qwen3-30B-A3B", 1024, None),  # MoE with routers, Chinchilla default
    ("t5-small", 512, "2_000_000"),  # encoder-decoder: self- and cross-attention
    ("albert-base-v2", 512, "2T"),  # shared layers run 12 times
]


@pytest.mark.parametrize("name, context, tokens", MODELS, ids=[m[0] for m in MODELS])
def test_json_equals_the_library(capsys, name, context, tokens):
    argv = [name, *(["--context", str(context)] if context else []), *(["--tokens", tokens] if tokens else [])]
    data = document(capsys, *argv, "--batch", "3")
    model = load(name)
    t = data["settings"]["context"]
    d = parse_tokens(tokens) if tokens else chinchilla_tokens(model)
    f, tr = forward_flops(model, t, 3), training_flops(model, d, t)
    assert data["schema"] == "paramcount.compute/1" and data["model"]["parameters"] == model.total
    assert data["settings"]["tokens"] == d and data["settings"]["batch"] == 3
    assert data["parameters"] == {
        "total": model.total,
        "active": model.active_total,
        "non_embedding": f.non_embedding,
        "matmul": f.matmul_params,
    }
    for key in ("matmul_params", "attention_width", "dense", "attention", "attention_causal", "per_token"):
        assert data["forward"][key] == getattr(f, key), key
    assert (data["forward"]["kaplan"], data["forward"]["total"]) == (f.kaplan, f.total)
    assert {b["width"]: b["blocks"] for b in data["forward"]["attention_blocks"]} == attention_widths(model)
    for key in ("tokens", "params", "non_embedding", "flops", "exact", "exact_causal"):
        assert data["training"][key] == getattr(tr, key), key
    approx = {k: (v["flops"], v["error"]) for k, v in data["training"]["approximations"].items()}
    assert approx == tr.approximations
    assert data["chinchilla"] == {"tokens_per_parameter": 20, "tokens": chinchilla_tokens(model)}
    assert data["time"] is None


def test_figures_show_their_numbers(capsys):
    """Every FLOP figure's formula ends in its own value; each approximation's error is value / exact − 1."""
    data = document(capsys, "mistralai/Mixtral-8x7B-v0.1", "--gpu", "h100")
    by_key = {f["key"]: f for f in data["figures"]}
    for fig in data["figures"]:
        if fig["unit"] in ("FLOPs", "tokens"):
            assert fig["formula"].endswith(f"= {fig['value']:,}"), fig
    exact, causal = data["training"]["exact"], data["training"]["exact_causal"]
    six = by_key["training.6nd"]
    assert (
        six["label"] == "6·N·D, N active"
        and six["value"] == 6 * data["parameters"]["active"] * data["settings"]["tokens"]
    )
    assert six["error"] == pytest.approx(six["value"] / exact - 1) and six["error_causal"] == pytest.approx(
        six["value"] / causal - 1
    )
    kaplan = by_key["forward.kaplan"]
    assert kaplan["error"] == pytest.approx(kaplan["value"] / data["forward"]["per_token"] - 1)
    assert [f["estimate"] for f in data["figures"] if f["estimate"]] and by_key["time.seconds"]["estimate"]
    assert by_key["n.active"]["value"] == data["parameters"]["active"] < data["parameters"]["total"]


def test_gpt3_on_300b_tokens_is_3_14e23(capsys):
    """Brown et al. 2020, Table D.1: 3.14e23 FLOPs to train GPT-3 175B on 300B tokens, i.e. 6·N·D."""
    data = document(capsys, GPT3, "--tokens", "300B")
    assert f"{data['training']['flops']:.3g}" == "3.14e+23"
    assert data["training"]["approximations"]["6·N·D (N total)"]["flops"] == data["training"]["flops"]
    code, out, _ = run(capsys, "compute", GPT3, "--tokens", "300B", "--width", "200")
    assert code == 0
    line = next(x for x in out.splitlines() if "6·N·D, N total" in x)
    assert "3.143e23" in line and "6 × 174,604,259,328 × 300,000,000,000 = 314,287,666,790,400,000,000,000" in line


def test_time_on_gpus(capsys):
    data = document(capsys, GPT3, "--tokens", "300B", "--gpu", "A100 80GB", "--gpus", "1024", "--utilisation", "0.5")
    time, exact = data["time"], data["training"]["exact"]
    assert (data["settings"]["gpu"], data["settings"]["gpus"], data["settings"]["utilisation"]) == (
        "a100-80gb",
        1024,
        0.5,
    )
    assert time["seconds"] == pytest.approx(train_time(exact, GPUS["a100-80gb"].tflops * 1e12, 0.5, 1024))
    assert time["seconds"] == pytest.approx(exact / (312e12 * 0.5 * 1024))
    assert time["hours"] == pytest.approx(time["seconds"] / 3600) and time["days"] == pytest.approx(time["hours"] / 24)
    assert (time["flops"], time["peak_dtype"], time["estimate"]) == (exact, "bf16", True)
    argv = ("--tokens", "300B", "--gpu", "a100-80gb", "--gpus", "1024", "--utilisation", "0.5", "--width", "300")
    code, out, _ = run(capsys, "compute", GPT3, *argv)
    assert code == 0 and f"{time['hours']:,.1f} hours = {time['days']:,.2f} days" in out
    assert "[estimate]" in out and "312 TFLOPS per GPU, the vendor's dense bf16" in out and "utilisation 0.5" in out


def test_v100_peak_is_fp16(capsys):
    assert document(capsys, "gpt2", "--gpu", "v100-32gb")["time"]["peak_dtype"] == "fp16"


def test_default_tokens_are_the_chinchilla_budget(capsys):
    code, out, _ = run(capsys, "compute", "meta-llama/Llama-2-70b-hf", "--width", "200")
    d = chinchilla_tokens(load("meta-llama/Llama-2-70b-hf"))
    assert code == 0 and f"training FLOPs at T = 4,096 for D = {d:,} tokens (Chinchilla's 20·N, no --tokens)" in out
    assert "used as D (no --tokens)" in out and "Hoffmann et al. 2022" in out
    assert "--gpu NAME" in out  # says how to get the time
    code, out, _ = run(capsys, "compute", "meta-llama/Llama-2-70b-hf", "--tokens", "2T", "--width", "200")
    assert code == 0 and "D = 2,000,000,000,000 tokens (--tokens)" in out and "used as D" not in out


def test_python_api_is_the_json():
    r = report(GPT3, tokens="300B")
    assert r.to_dict()["training"]["flops"] == 6 * 174_604_259_328 * 300 * 10**9
    assert r.settings["context_from"] == "the model's limit" and r.time is None


def test_a_gguf_file_gets_its_attention_from_its_metadata(capsys):
    code, out, _ = run(capsys, "compute", "tests/fixtures/tiny-llama.gguf", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["exact"] and doc["attention_exact"] and doc["forward"]["attention"] > 0


def test_a_tree_read_from_names_is_not_exact_and_says_why(capsys):
    code, out, _ = run(capsys, "compute", "tests/fixtures/bloom-1b4-zh.txt", "--width", "300")
    assert code == 0 and "note: not exact: no family's tree (a print(model) text" in out
    assert "non-embedding (Kaplan's N) [not exact]" in out and "│ not exact │" in out


# ---- the token parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("300B", 300 * 10**9),
        ("2T", 2 * 10**12),
        ("1.4e12", 1_400_000_000_000),
        ("1.4T", 1_400_000_000_000),
        ("2_000_000", 2_000_000),
        ("2,000,000", 2_000_000),
        ("5m", 5_000_000),
        ("1e+9", 10**9),
        ("7", 7),
        (42, 42),
    ],
)
def test_parse_tokens(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["-5", "0", "1.5", "abc", "1e-3", "2X", "", "nan", "1e999999", "1.5e0", True, -3])
def test_parse_tokens_refuses(text):
    with pytest.raises(ParamcountError, match="--tokens"):
        parse_tokens(text)


# ---- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["gpt2", "--tokens", "lots"], "--tokens: expected a whole number of tokens ≥ 1 like 300B"),
        (["gpt2", "--tokens", "-5"], "got '-5'"),
        (["gpt2", "--tokens=-2T"], "got '-2T'"),
        (["gpt2", "--tokens", "0"], "got '0'"),
        (
            ["gpt2", "--gpu", "h100", "--utilisation", "0"],
            "--utilisation: expected a share in [1e-06, 1] like 0.4, got 0.0",
        ),
        (["gpt2", "--gpu", "h100", "--utilisation", "1.5"], "got 1.5"),
        (["gpt2", "--gpu", "h100", "--utilisation", "nan"], "got nan"),
        (["gpt2", "--gpu", "h100", "--utilisation", "-0.4"], "got -0.4"),
        (["gpt2", "--gpu", "h100", "--utilisation", "most"], "argument --utilisation: invalid float value: 'most'"),
        (["gpt2", "--gpu", "rtx4095"], "unknown GPU 'rtx4095'; did you mean rtx4090"),
        (["gpt2", "--gpu", "a100"], "'a100' is more than one GPU"),
        (["gpt2", "--gpu", "apple-64gb"], "--gpu: no peak FLOPS stated for Apple M-series 64 GB"),
        (["gpt2", "--gpu", "24GB"], "--gpu: no peak FLOPS stated for custom 24GB"),
        (["gpt2", "--gpu", "h100", "--gpus", "0"], "--gpus: expected an integer ≥ 1, got 0"),
        (["gpt2", "--gpus", "8"], "--gpus: only with --gpu"),
        (["gpt2", "--utilisation", "0.5"], "--utilisation: only with --gpu"),
        (["gpt2", "--context", "0"], "--context: expected an integer ≥ 1, got 0"),
        (["gpt2", "--batch", "0"], "--batch: expected an integer ≥ 1, got 0"),
        (["no-such-model"], "no-such-model: not in the catalog"),
        ([], "model: give a model: a catalog name, hub id, file or folder, or --arch"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "compute", *argv)
    assert code == 2 and not out
    assert err.startswith("paramcount: error: ") and err.count("\n") == 1 and message in err, err


def test_help_names_the_command_and_its_flags():
    out = subprocess.run([sys.executable, "-m", "paramcount", "--help"], capture_output=True, text=True).stdout
    assert "paramcount compute" in out
    out = subprocess.run(
        [sys.executable, "-m", "paramcount", "compute", "--help"], capture_output=True, text=True
    ).stdout
    for flag in ("--context", "--batch", "--tokens", "--gpu", "--gpus", "--utilisation", "--json", "300B"):
        assert flag in out
    assert "Chinchilla" in out
