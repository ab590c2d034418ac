"""Every command on every kind of input the bare ``paramcount MODEL`` counts: it works, or it
says why in one line with exit 2 — never a traceback, never an empty table with exit 0."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from paramcount.cli import main

ROOT = Path(__file__).parent

COMMANDS = {
    "count": [],
    "json": ["--json"],
    "memory": ["memory"],
    "fit": ["fit"],
    "fit-gpu": ["fit", "--gpu", "rtx4090"],
    "speed": ["speed", "--gpu", "RTX 4090"],
    "compute": ["compute"],
    "compare": ["compare", "gpt2"],
    "explain": ["explain"],
    "check": ["check", "_", "1B"],
}


def _safetensors(folder: Path, config: dict | None) -> Path:
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    header = {"model.embed_tokens.weight": {"dtype": "BF16", "shape": [100, 64], "data_offsets": [0, 12800]}}
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(12800))
    return folder


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("inputs")
    native = base / "config.json"
    native.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256}))
    return {
        "catalog": "qwen2.5-0.5b",
        "config": str(native),
        "printout": str(ROOT / "fixtures" / "bloom-1b4-zh.txt"),
        "gguf": str(ROOT / "fixtures" / "tiny-llama.gguf"),
        "bare-safetensors": str(_safetensors(base / "bare", None)),
        "unknown-family-checkpoint": str(_safetensors(base / "unknown", {"model_type": "no_such_family"})),
    }


def argv(command: str, source: str) -> list[str]:
    args = COMMANDS[command]
    if not args or args[0].startswith("--"):
        return [source, *args]
    if command == "check":
        return ["check", source, "1B"]
    return [args[0], source, *args[1:]]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    "kind", ["catalog", "config", "printout", "gguf", "bare-safetensors", "unknown-family-checkpoint"]
)
def test_works_or_one_line(inputs, capsys, kind, command):
    code = main([*argv(command, inputs[kind]), *(["--width", "120"] if command in ("memory", "fit") else [])])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), code
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("paramcount: error:"), err
        assert not out
        return
    assert out.strip() and "Traceback" not in out + err
    if command.startswith("fit"):  # a table with figures, not an empty one
        assert any(ch.isdigit() for line in out.splitlines()[3:] for ch in line)
