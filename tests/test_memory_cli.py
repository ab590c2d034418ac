"""`paramcount memory` and `paramcount fit`: outputs as snapshots at a fixed width, JSON documents,
plots that are real PNG/SVG files, and every bad value as one line with exit 2."""

import json
import sys

import pytest

from paramcount.cli import main
from paramcount.memory.core.gpus import GIB, GPUS


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, name",
    [
        (["memory", "meta-llama/Llama-2-13b-hf", "--dtype", "int4", "--gpu", "rtx3060"], "memory-llama2-13b-int4.txt"),
        (
            ["memory", "meta-llama/Llama-2-7b-hf", "--train", "--qlora", "--context", "2048"],
            "memory-llama2-7b-qlora.txt",
        ),
        (["fit", "meta-llama/Llama-2-13b-hf", "--gpu", "rtx3060"], "fit-llama2-13b-rtx3060.txt"),
        (
            ["fit", "meta-llama/Llama-3.1-70B", "--train", "--gpu", "h100", "--context", "2048"],
            "fit-llama31-70b-train.txt",
        ),
        (["fit", "Qwen/Qwen2.5-7B", "--dtype", "bf16,int8,int4"], "fit-qwen25-7b-all-gpus.txt"),
        (
            ["memory", "meta-llama/Llama-3.1-8B", "--runtime", "llama.cpp", "--dtype", "q4_0", "--context", "32k"],
            "memory-llama31-8b-llamacpp-q4_0.txt",
        ),
        (
            ["fit", "meta-llama/Llama-3.1-8B", "--runtime", "llama.cpp", "--gpu", "rtx4090"],
            "fit-llama31-8b-llamacpp.txt",
        ),
    ],
)
def test_snapshots(capsys, snapshot, argv, name):
    code, out, err = run(capsys, *argv, "--width", "100")
    # fit exits 1 when no precision fits the GPU named: 70B does not train on one H100
    assert code == (1 if name == "fit-llama31-70b-train.txt" else 0) and not err
    snapshot(name, out)


@pytest.mark.parametrize(
    "argv, code",
    [
        (["fit", "qwen2.5-0.5b", "--gpu", "rtx4090"], 0),
        (["fit", "meta-llama/Llama-3.1-405B", "--gpu", "rtx4090"], 1),
        (["fit", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3060", "--dtype", "bf16"], 1),
        (["fit", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3060", "--dtype", "q4_k_m"], 0),
        (["fit", "meta-llama/Llama-3.1-405B", "--gpu", "rtx4090", "--json"], 1),
        (["fit", "meta-llama/Llama-3.1-405B"], 0),  # no GPU named: nothing to fit
        (["fit", "gpt2", "--gpu", "rtx40900"], 2),
    ],
)
def test_fit_exit_status_says_whether_it_fits(capsys, argv, code):
    assert run(capsys, *argv)[0] == code


def test_fit_help_states_its_exit_status(capsys):
    code, out, _ = run(capsys, "fit", "--help")
    assert code == 0 and "0 when the model fits that GPU" in " ".join(out.split())


def test_memory_text_marks_estimates_and_their_sources(capsys):
    code, out, _ = run(capsys, "memory", "gpt2", "--width", "200")
    assert code == 0
    assert "activations (bf16, 1,024 tokens × 1) [estimate]" in out and "overhead (measured) [estimate]" in out
    assert "arXiv:2205.05198" in out and "tests/fixtures/gpu_h100.json" in out
    assert out.count("exact") == 2 and out.count("estimate ") >= 2


def test_memory_json(capsys):
    code, out, _ = run(capsys, "memory", "meta-llama/Llama-2-13b-hf", "--dtype", "int4", "--gpu", "rtx3060", "--json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "paramcount.memory/1"
    assert [t["key"] for t in data["terms"]] == ["weights", "kv_cache", "activations", "overhead"]
    assert data["total"]["bytes"] == sum(t["bytes"] for t in data["terms"])
    assert [t["estimate"] for t in data["terms"]] == [False, False, True, True]
    assert data["gpu"]["key"] == "rtx3060" and data["gpu"]["memory"] == 12 * GIB
    usable = GPUS["rtx3060"].usable  # what CUDA reports, a little under 12 GiB
    assert data["gpu"]["fits"] is True and data["gpu"]["headroom"] == usable - data["total"]["bytes"]


def test_training_json(capsys):
    code, out, _ = run(
        capsys, "memory", "gpt2", "--train", "--zero", "2", "--gpus", "4", "--optimizer", "sgd", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["mode"] == "training"
    assert {"weights", "gradients", "optimizer", "activations", "overhead"} <= {t["key"] for t in data["terms"]}
    assert data["settings"]["zero"] == 2 and data["settings"]["gpus"] == 4 and data["settings"]["optimizer"] == "sgd"


def test_fit_json(capsys):
    code, out, _ = run(capsys, "fit", "gpt2", "--gpu", "8GB", "--json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "paramcount.fit/1" and data["gpu"]["memory"] == 8 * 10**9
    assert [r["precision"] for r in data["rows"]][:3] == ["fp32", "bf16", "int8"]
    code, out, _ = run(capsys, "fit", "gpt2", "--json")
    data = json.loads(out)
    assert data["gpu"] is None and {row["gpu"]["key"] for row in data["table"]} >= {"rtx3060", "h100", "apple-64gb"}


# ---- plots -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix, magic", [("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml")])
def test_plot_writes_a_real_file(capsys, tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"memory.{suffix}"
    code, _, err = run(
        capsys, "memory", "meta-llama/Llama-2-13b-hf", "--dtype", "int4", "--gpu", "rtx3060", "--plot", str(path)
    )
    assert code == 0 and not err
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 20_000
    if suffix == "svg":
        text = data.decode()
        assert "<svg" in text and "KV cache" in text and "GeForce RTX 3060" in text and "overhead (estimate)" in text


def test_plot_of_training(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "train.svg"
    assert run(capsys, "memory", "gpt2", "--train", "--plot", str(path))[0] == 0
    assert "optimizer states" in path.read_text()


def test_plot_without_matplotlib(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    code, _, err = run(capsys, "memory", "gpt2", "--plot", str(tmp_path / "m.png"))
    assert code == 2 and err == "paramcount: error: --plot: plots need matplotlib: pip install 'paramcount[plot]'\n"


# ---- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["memory", "gpt2", "--context", "0"], "--context: expected an integer ≥ 1, got 0"),
        (["memory", "gpt2", "--batch", "-1"], "--batch: expected an integer ≥ 1, got -1"),
        (
            ["memory", "gpt2", "--batch", "two"],
            "--batch: expected an integer ≥ 1 of at most 12 digits, got 'two'",
        ),
        (["memory", "gpt2", "--dtype", "int3"], "unknown scheme 'int3'"),
        (["memory", "gpt2", "--kv-dtype", "int2"], "unknown KV-cache dtype 'int2'"),
        (["memory", "gpt2", "--overhead", "lots"], "--overhead: expected a size like 24GB or 20GiB, got 'lots'"),
        (["memory", "gpt2", "--gpu", "rtx4095"], "unknown GPU 'rtx4095'; did you mean rtx4090"),
        (["memory", "gpt2", "--plot", "m.jpg"], "--plot: a plot is .png or .svg, not 'm.jpg'"),
        (["memory", "gpt2", "--zero", "3"], "--zero: only for training: add --train"),
        (["memory", "gpt2", "--train", "--kv-dtype", "fp8"], "--kv-dtype: only for inference"),
        (["memory", "gpt2", "--train", "--dtype", "int4"], "--dtype: only for inference"),
        (["memory", "gpt2", "--train", "--zero", "5"], "argument --zero: invalid choice: 5"),
        (["memory", "gpt2", "--train", "--gpus", "0"], "argument --gpus: expected an integer ≥ 1, got 0"),
        (["memory", "gpt2", "--train", "--lora-rank", "8", "--lora-targets", "nope"], "nope"),
        (["fit", "gpt2", "--gpu", "a100"], "'a100' is more than one GPU"),
        (["fit", "gpt2", "--dtype", "fp32,int3"], "unknown scheme 'int3'"),
        (["fit", "no-such-model"], "no-such-model: not in the catalog"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.startswith("paramcount: error: ") and err.count("\n") == 1 and message in err, err
