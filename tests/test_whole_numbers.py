"""Exact numbers are never cut: at 80 columns, in a pipe, and in tables wider than the screen
(those are split into several, each behind its label column)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from paramcount.cli import main


def text(capsys, *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


def data(capsys, *argv: str) -> dict:
    main([*argv, "--json"])
    return json.loads(capsys.readouterr().out)


def test_list_at_80_columns(capsys):
    """One table: each model on one line with its total and, for MoE, its active count (class,
    backbone and family are left out to fit; --width 160 shows them)."""
    out = text(capsys, "list", "--width", "80")
    models = data(capsys, "list")["models"]
    for m in models:
        line = next(line for line in out.splitlines() if line.startswith(m["id"] + " "))
        assert f"{m['total']:,}" in line and (m["active_total"] is None or f"{m['active_total']:,}" in line)
    assert max(len(line) for line in out.splitlines()) <= 80 and len(out.splitlines()) == len(models) + 2


@pytest.mark.parametrize("width", ["80", "50"])
def test_fit_overview_numbers_whole(capsys, width):
    out = text(capsys, "fit", "qwen2.5-7b", "--width", width)
    plans = data(capsys, "fit", "qwen2.5-7b")
    for needs in _needs(plans):
        assert needs in out
    assert max(len(line) for line in out.splitlines()) <= int(width)


def _needs(overview: dict) -> list[str]:
    return [f"{n['bytes'] / 2**30:.2f}" for n in overview["needs"].values()]  # the cards' unit: GiB


@pytest.mark.parametrize("model", ["meta-llama/Llama-2-13b-hf", "mixtral-8x7b", "bert-base-chinese", "t5-base"])
def test_counts_and_memory_whole_at_80(capsys, model):
    out = text(capsys, model, "--width", "80")
    count = data(capsys, model)
    for value in (count["total"], count["backbone"]["total"], *count["components"].values()):
        assert f"{value:,}" in out
    out = text(capsys, "memory", model, "--width", "80")
    plan = data(capsys, "memory", model)
    for term in plan["terms"]:
        assert f"{term['bytes']:,}" in out, term["key"]


def test_piped_output_takes_the_width_it_needs(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "paramcount", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0
    assert "meta-llama/Llama-2-13b-hf" in done.stdout and "13,015,864,320" in done.stdout
    assert "…" not in done.stdout
