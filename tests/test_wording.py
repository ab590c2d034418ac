"""What the CLI says reads as written: no word or field name twice in a row, plurals that agree,
header-only counts named for what they are, and names of runtimes and GPU sizes read as meant."""

from __future__ import annotations

import re

import pytest

from paramcount.cli import main
from tests import test_hostile_cli, test_memory_cli, test_typos

# a word (with a letter in it) said twice in a row, with or without the ": " or ", " between
DOUBLED = re.compile(r"(?<![\w-])([\w.-]*[A-Za-z][\w.-]*)[:,]?\s+\1(?![\w-])", re.I)


def doubled(text: str) -> list[str]:
    return [m.group(0) for m in DOUBLED.finditer(text)]


def test_the_check_finds_doubles():
    assert doubled("error: --runtime: --runtime: the model") == ["--runtime: --runtime"]
    assert doubled("its backbone backbone has") == ["backbone backbone"]
    assert not doubled("1 1 × 2 = 2; the KV cache, the weights") and not doubled("--tp 2 --pp 2")


def _cases(test) -> list[list[str]]:
    """The argv lists of another test's parametrize (its error cases, said in full there)."""
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    return [list(case[0]) for case in mark.args[1]]


ERRORS = [
    *_cases(test_typos.test_one_line_with_a_suggestion),
    *_cases(test_memory_cli.test_bad_values_are_one_line_and_exit_2),
    *(argv for argv, _ in test_hostile_cli.REFUSED if not any(a.startswith("{") for a in argv)),
    ["fit", "bert-base-uncased", "--runtime", "vllm", "--gpu", "h100"],
    ["memory", "bert-base-uncased", "--runtime", "vllm"],
    ["memory", "gpt2", "--runtime", "vlm"],
    ["fit", "gpt2", "--gpu", "24G"],
    ["fit", "gpt2", "--gpu", "rtx40900"],
]


@pytest.mark.parametrize("argv", ERRORS, ids=lambda a: " ".join(a)[:60])
def test_no_error_says_a_word_twice(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2)
    assert not doubled(err) and not doubled(out[:10_000]), err


def test_runtime_field_named_once(capsys):
    assert main(["fit", "bert-base-uncased", "--runtime", "vllm", "--gpu", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.count("--runtime") == 1 and "no KV cache for vLLM to page" in err


@pytest.mark.parametrize(
    ("written", "meant"), [("llamacpp", "llama.cpp"), ("vLLM", "vllm"), ("Llama_CPP", "llama.cpp")]
)
def test_runtime_names_as_people_write_them(capsys, written, meant):
    assert main(["memory", "gpt2", "--runtime", written, "--width", "120"]) == 0
    assert f"runtime {meant}" in capsys.readouterr().out


def test_a_mistyped_runtime_gets_the_nearest(capsys):
    assert main(["memory", "gpt2", "--runtime", "vlm"]) == 2
    assert "unknown runtime 'vlm'; did you mean vllm?" in capsys.readouterr().err


def test_a_size_without_its_unit_is_a_size_not_a_card(capsys):
    assert main(["fit", "gpt2", "--gpu", "24G"]) == 2
    err = capsys.readouterr().err
    assert "a size is 24GB or 24GiB" in err and "cards of that size: rtx3090, rtx4090" in err
    assert "did you mean" not in err


def test_one_sequence_is_singular(capsys):
    argv = ["fit", "Qwen/Qwen2.5-7B", "--runtime", "vllm", "--gpu", "h100", "--concurrency", "1", "--width", "200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 sequence ×" in out and "admits 1 sequence of" in out and "1 sequences" not in out


def test_a_header_only_count_is_named_for_what_it_counted(tmp_path, capsys):
    from tests.test_every_command import _safetensors

    folder = _safetensors(tmp_path / "bare", None)
    assert main(["check", str(folder), "6400"]) == 0
    out = capsys.readouterr().out
    assert "The checkpoint has 6,400 parameters." in out and "the count of the checkpoint" in out
    assert "backbone backbone" not in out and "count of checkpoint" not in out


def test_check_says_the_figure_the_slips_give(capsys):
    assert main(["check", "qwen2.5-0.5b", "0.6B"]) == 1
    out = capsys.readouterr().out
    assert "0.6B ≈ 630,167,424 = Qwen2ForCausalLM with the tied output head counted twice (+136,134,656)" in out
