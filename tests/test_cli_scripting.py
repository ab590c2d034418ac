"""The command line for scripts: exit codes that say whether a plan fits, errors under --json as
JSON objects on stdout, and messages that say what a mistyped source is (a missing file, an
Ollama name given without ``ollama:``)."""

from __future__ import annotations

import json

import pytest

from paramcount.cli import main
from paramcount.loader import looks_like_path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---- memory --gpu exits as fit does ------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, code",
    [
        (["memory", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3060"], 1),  # bf16: 16 GB on a 12 GiB card
        (["memory", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3060", "--dtype", "q4_k_m", "--runtime", "llama.cpp"], 0),
        (["memory", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3060", "--json"], 1),
        (["memory", "meta-llama/Llama-3.1-8B"], 0),  # no GPU: nothing to fit
        (["memory", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--runtime", "vllm"], 0),
        (["memory", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--runtime", "vllm"], 1),
    ],
)
def test_memory_gpu_exit_status_says_whether_it_fits(argv, code, capsys):
    got, out, _ = run(argv, capsys)
    assert got == code
    if "--json" in argv:
        assert json.loads(out)["gpu"]["fits"] is (code == 0)
    elif "--gpu" in argv:
        assert ("does not fit" in out) is (code == 1) or "would not start" in out


# ---- errors under --json -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, error, field, source",
    [
        (["./nope.json", "--json"], "no such file or folder", None, "./nope.json"),
        (["memory", "gpt2", "--gpu", "foo", "--json"], "unknown GPU 'foo'", "--gpu", None),
        (["fit", "gpt2", "--dtype", "int3", "--json"], "int3", "--dtype", None),
        (["check", "gpt2", "abc", "--json"], "cannot read 'abc' as a parameter count", "ANSWER", None),
        (["explain", "no-such-model", "--json"], "not in the catalog", None, "no-such-model"),
        (["compute", "gpt2", "--tokens", "lots", "--json"], "lots", "--tokens", None),
        (["list", "--json", "--kind", "odd"], "argument --kind: invalid choice: 'odd'", None, None),  # argparse's
        (["memory", "gpt2", "--contxt", "5", "--json"], "did you mean --context?", None, None),
    ],
)
def test_an_error_under_json_is_a_json_object_on_stdout(argv, error, field, source, capsys):
    code, out, err = run(argv, capsys)
    doc = json.loads(out)
    assert code == 2 and not err
    assert doc["schema"] == "paramcount.error/1" and error in doc["error"], doc
    assert "paramcount: error" not in doc["error"] and "\n" not in doc["error"]
    assert doc["field"] == field and doc["source"] == source


def test_without_json_the_error_stays_one_line_on_stderr(capsys):
    code, out, err = run(["memory", "gpt2", "--gpu", "foo"], capsys)
    assert code == 2 and not out and err.startswith("paramcount: error: --gpu: unknown GPU 'foo'")
    assert err.count("\n") == 1


def test_json_after_a_double_dash_is_no_flag(capsys):
    code, out, err = run(["memory", "gpt2", "--contxt", "5", "--", "--json"], capsys)
    assert code == 2 and not out and err.startswith("paramcount: error: unrecognized arguments")


# ---- what a mistyped source is --------------------------------------------------------------------


@pytest.mark.parametrize(
    "source", ["./nope.json", "nope.json", "../x/config.json", "/no/such/folder", "~/x.gguf", "org/x.safetensors"]
)
def test_a_missing_path_is_no_such_file(source, capsys):
    code, _, err = run([source], capsys)
    assert code == 2 and err == f"paramcount: error: {source}: no such file or folder\n"


@pytest.mark.parametrize(
    "source, path",
    [
        ("./x", True),
        ("a/b/c", True),
        ("x.TXT", True),
        ("dir\\config.json", True),
        ("bert-base-uncased", False),
        ("meta-llama/Llama-3.1-8B", False),  # a Hub id: one slash
        ("bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M.gguf", False),  # a file of a Hub repository
        ("llama3.1:8b", False),
    ],
)
def test_what_looks_like_a_path(source, path):
    assert looks_like_path(source) is path


@pytest.mark.parametrize("name", ["llama3.1:8b", "qwen3:30b-a3b", "gemma3:latest"])
def test_an_ollama_name_is_pointed_to_its_store(name, capsys):
    code, _, err = run([name], capsys)
    assert code == 2 and f"did you mean ollama:{name} (a model in Ollama's store)?" in err


def test_a_catalog_near_miss_still_gets_catalog_names(capsys):
    code, _, err = run(["bert-base-uncasd"], capsys)
    assert code == 2 and "did you mean bert-base-uncased" in err and "ollama:" not in err
