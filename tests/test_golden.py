"""Golden outputs: every command's ``--json`` on every catalog model, byte for byte (issue 21 item 6).

The re-layout of memory/ and the import contracts must change nothing a user sees; this holds
every command's JSON document, with common flags, for each of the catalog's models to the text it
printed when the fixture was written. tests/fixtures/golden.json.gz keeps every output (argv,
exit code, stdout), so a failure shows a unified diff of what changed; tests/fixtures/golden.json
keeps one sha256 per (command, model), so a review sees in plain text which outputs a change
moved. A change that means to move them regenerates both:

    UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

Every command runs on every catalog model in the default run (about 40 s of CPU in all, check's
search of conventions most of it); the tests are cut by command and by a fifth of the models, so
each stays a few seconds. The outputs hold no time, version or path (a catalog source reads
``catalog:ID``), so nothing is normalised.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import gzip
import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.frontends import catalog

FIXTURES = Path(__file__).parent / "fixtures"
HASHES = FIXTURES / "golden.json"
OUTPUTS = FIXTURES / "golden.json.gz"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))
MODELS = [e.id for e in catalog.entries()]
SHARDS = 5  # check, the slowest, runs about 0.1 s a model


def _own_total(model: str) -> str:
    return str(paramcount.load(model).total)


COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "count": lambda m: [m, "--json"],
    "explain": lambda m: ["explain", m, "--json"],
    "compute": lambda m: ["compute", m, "--json"],
    "memory": lambda m: ["memory", m, "--json"],
    "memory-transformers-gpu": lambda m: ["memory", m, "--runtime", "transformers", "--gpu", "rtx4090", "--json"],
    "memory-llama.cpp": lambda m: ["memory", m, "--runtime", "llama.cpp", "--gpu", "rtx4090", "--json"],
    "memory-vllm": lambda m: ["memory", m, "--runtime", "vllm", "--gpu", "h100", "--json"],
    "memory-train": lambda m: ["memory", m, "--train", "--json"],
    "fit": lambda m: ["fit", m, "--json"],
    "fit-gpu": lambda m: ["fit", m, "--gpu", "h100", "--json"],
    "check": lambda m: ["check", m, _own_total(m), "--json"],
    # one fixed partner (a neighbour in the catalog would move when a model is added)
    "compare": lambda m: ["compare", m, "gpt2", "--json"],
}


def run(argv: list[str]) -> dict:
    """The CLI in this process: its exit code and what it printed (stderr too, which must stay empty
    or say the same)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"argv": argv, "exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _key(command: str, model: str) -> str:
    return f"{command} {model}"


def _digest(record: dict) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _load(path: Path, opener=open) -> dict:
    if not path.exists():
        return {}
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _store(records: dict[str, dict]) -> None:
    """Replace these entries in both files (each test writes its own share), dropping those of a
    command or model no longer run; under a lock, as the suite's workers (pytest-xdist) write at once."""
    with open(HASHES, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _replace(records)


def _replace(records: dict[str, dict]) -> None:
    wanted = {_key(c, m) for c in COMMANDS for m in MODELS}
    outputs = {k: v for k, v in _load(OUTPUTS, gzip.open).items() if k in wanted}
    outputs.update(records)
    with gzip.GzipFile(OUTPUTS, "wb", mtime=0) as f:  # mtime 0: the same outputs give the same bytes
        f.write(json.dumps(outputs, sort_keys=True, ensure_ascii=False, indent=0).encode())
    hashes = {k: _digest(v) for k, v in sorted(outputs.items())}
    HASHES.write_text(json.dumps(hashes, indent=1) + "\n")


def _difference(key: str, old: dict, new: dict) -> str:
    """The command and the first lines that differ, as a unified diff of the two outputs."""
    a = [f"exit {old['exit']}", *old["stdout"].splitlines(), *old["stderr"].splitlines()]
    b = [f"exit {new['exit']}", *new["stdout"].splitlines(), *new["stderr"].splitlines()]
    diff = list(difflib.unified_diff(a, b, "golden", "now", n=2, lineterm=""))
    return f"paramcount {' '.join(new['argv'])} changed:\n" + "\n".join(diff[:40])


@pytest.fixture(scope="module")
def golden() -> dict[str, dict]:
    return _load(OUTPUTS, gzip.open)


@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("command", COMMANDS)
def test_golden(golden, command, shard):
    records = {_key(command, m): run(COMMANDS[command](m)) for m in MODELS[shard::SHARDS]}
    if UPDATE:
        _store(records)
        return
    changed = [_difference(k, golden[k], r) for k, r in records.items() if k in golden and golden[k] != r]
    missing = sorted(k for k in records if k not in golden)
    assert len(changed) == 0, f"{len(changed)} of {len(records)} outputs changed; the first:\n{changed[0]}"
    assert not missing, f"no golden output for {missing[:5]} (UPDATE_GOLDEN=1 writes them)"


def test_the_two_files_agree():
    """The hashes a review reads are those of the outputs the tests compare, and every key is
    a (command, catalog model) the tests still run (a removed model or command drops its entries)."""
    if UPDATE:
        pytest.skip("the outputs are being rewritten (by other workers too): rerun without UPDATE_GOLDEN")
    golden = _load(OUTPUTS, gzip.open)
    assert _load(HASHES) == {k: _digest(v) for k, v in sorted(golden.items())}
    assert set(golden) == {_key(c, m) for c in COMMANDS for m in MODELS}
