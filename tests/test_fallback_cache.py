"""The transformers fallback's cache (frontends/fallback_cache.py): an answer kept is used
without starting the worker, under a key that changes with the versions that built it; the
cache stays within its bounds; an entry that is corrupt, oversized or not this cache's own is
ignored and replaced. The worker is a counted stub here: no torch, and nothing timed."""

from __future__ import annotations

import copy
import json
import os
import pickle
from pathlib import Path

import pytest

from paramcount.frontends import fallback, fallback_cache, fallback_worker

CODEGEN = {"model_type": "codegen", "architectures": ["CodeGenForCausalLM"], "n_embd": 64, "n_layer": 1, "n_head": 4}
CODEGEN |= {"vocab_size": 300, "rotary_dim": 8}
# what the worker answers for it (fallback_build.build's shape): rows of CodeGenForCausalLM
ANSWER = {
    "version": "5.23.0",
    "class": "CodeGenForCausalLM",
    "params": [
        ["transformer.wte.weight", [300, 64], "F32"],
        ["transformer.h.0.ln_1.weight", [64], "F32"],
        ["transformer.h.0.ln_1.bias", [64], "F32"],
        ["transformer.h.0.attn.qkv_proj.weight", [192, 64], "F32"],
        ["lm_head.weight", [300, 64], "F32"],
        ["lm_head.bias", [300], "F32"],
    ],
    "ties": {},
    "embeddings": ["transformer.wte"],
    "prefix": "transformer",
}
TOTAL = 300 * 64 + 64 + 64 + 192 * 64 + 300 * 64 + 300


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The cache on, in a folder of the test's own; the answer as transformers 5.23.0 gives it."""
    monkeypatch.delenv("PARAMCOUNT_NO_CACHE")
    monkeypatch.setenv("PARAMCOUNT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fallback_cache, "versions", lambda: {"transformers": "5.23.0", "torch": "2.13.0"})
    return tmp_path / "cache" / "fallback"


@pytest.fixture
def asked(monkeypatch) -> list[dict]:
    """The requests the worker was asked (a stub that answers ANSWER and counts)."""
    calls: list[dict] = []

    def ask(request: dict) -> dict:
        calls.append(request)
        return copy.deepcopy(ANSWER)

    monkeypatch.setattr(fallback_worker, "ask", ask)
    return calls


def count(config: dict = CODEGEN):
    return fallback.from_transformers(config, "<config>", config["model_type"])


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json"))


def test_asked_again_the_worker_is_not_started(cache, asked):
    first = count()
    assert len(asked) == 1 and len(entries(cache)) == 1
    again = count()
    assert len(asked) == 1  # the second answer came from the cache
    assert first.total == again.total == TOTAL and again.counted_by == "transformers"
    assert first.tree == again.tree and first.backbone == again.backbone


def test_the_key_changes_with_the_transformers_version(cache, asked, monkeypatch):
    request = {"model_type": "codegen", "config": {"n_layer": 1}, "class": "A", "base": "B"}
    before = fallback_cache.key(request)
    count()
    monkeypatch.setattr(fallback_cache, "versions", lambda: {"transformers": "5.24.0", "torch": "2.13.0"})
    assert fallback_cache.key(request) != before
    count()
    assert len(asked) == 2 and len(entries(cache)) == 2  # built again by the new version, kept beside


def test_the_key_is_the_config_not_its_order_and_each_field_counts(cache):
    a = {"model_type": "codegen", "config": {"n_layer": 1, "n_embd": 64}, "class": "A", "base": "B"}
    b = {"base": "B", "class": "A", "config": {"n_embd": 64, "n_layer": 1}, "model_type": "codegen"}
    assert fallback_cache.key(a) == fallback_cache.key(b)
    assert fallback_cache.key(a) != fallback_cache.key({**a, "class": "C"})
    assert fallback_cache.key(a) != fallback_cache.key({**a, "config": {"n_layer": 2, "n_embd": 64}})
    assert fallback_cache.key({**a, "config": {"x": float("nan")}}) is None  # never cached


def test_off_is_off(cache, asked, monkeypatch):
    monkeypatch.setenv("PARAMCOUNT_NO_CACHE", "1")
    count()
    count()
    assert len(asked) == 2 and not cache.exists()


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.delenv("PARAMCOUNT_NO_CACHE")
    monkeypatch.delenv("PARAMCOUNT_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert fallback_cache.folder() == tmp_path / ".cache" / "paramcount" / "fallback"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fallback_cache.folder() == tmp_path / "xdg" / "paramcount" / "fallback"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: only absolute paths
    assert fallback_cache.folder() == tmp_path / ".cache" / "paramcount" / "fallback"
    monkeypatch.setenv("PARAMCOUNT_CACHE_DIR", str(tmp_path / "mine"))
    assert fallback_cache.folder() == tmp_path / "mine" / "fallback"


def _layers(n: int) -> dict:
    return {**CODEGEN, "n_layer": n}


def test_the_least_recently_used_go_first(cache, asked, monkeypatch):
    monkeypatch.setattr(fallback_cache, "MAX_ENTRIES", 3)
    written = {}
    for n in (1, 2, 3):
        count(_layers(n))
        (written[n],) = set(entries(cache)) - set(written.values())
        os.utime(written[n], ns=(n * 10**9, n * 10**9))  # 1 the oldest, 3 the newest
    count(_layers(1))  # a hit: used now, so the newest
    assert len(asked) == 3
    count(_layers(4))  # a fourth entry: the least recently used (2) goes
    assert len(entries(cache)) == 3 and len(asked) == 4
    assert written[1].exists() and not written[2].exists() and written[3].exists()
    count(_layers(1))
    count(_layers(2))
    assert len(asked) == 5  # 1 was kept, 2 is counted again


def test_evict_by_count_and_by_bytes_and_leftover_temporary_files(tmp_path):
    for i in range(5):
        p = tmp_path / f"{i}.json"
        p.write_bytes(b"x" * 100)
        os.utime(p, ns=(i * 10**9, i * 10**9))
    (tmp_path / ".tmp-abc.json").write_bytes(b"half")
    gone = fallback_cache.evict(tmp_path, entries=3, size=10**6)
    assert sorted(p.name for p in gone) == [".tmp-abc.json", "0.json", "1.json"]
    gone = fallback_cache.evict(tmp_path, entries=10, size=250)
    assert [p.name for p in gone] == ["2.json"] and sorted(p.name for p in tmp_path.iterdir()) == ["3.json", "4.json"]


def _corrupt(entry: Path, how: str) -> None:
    doc = json.loads(entry.read_bytes())
    if how == "not json":
        entry.write_bytes(b'{"format": 1, "key": ')
    elif how == "pickle":
        entry.write_bytes(pickle.dumps(doc))
    elif how == "another key":  # a foreign entry copied under this name
        entry.write_text(json.dumps({**doc, "key": "0" * 64}))
    elif how == "another format":
        entry.write_text(json.dumps({**doc, "format": 0}))
    elif how == "negative dim":
        doc["answer"]["params"][0][1] = [-300, 64]
        entry.write_text(json.dumps(doc))
    elif how == "dim as text":
        doc["answer"]["params"][0][1] = ["300", 64]
        entry.write_text(json.dumps(doc))
    elif how == "ties as a list":
        doc["answer"]["ties"] = [["a", "b"]]
        entry.write_text(json.dumps(doc))
    elif how == "no params":
        del doc["answer"]["params"]
        entry.write_text(json.dumps(doc))
    elif how == "a list":
        entry.write_text("[]")


CORRUPTIONS = ["not json", "pickle", "another key", "another format", "negative dim", "dim as text"]
CORRUPTIONS += ["ties as a list", "no params", "a list"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_bad_entry_is_ignored_and_replaced(cache, asked, how):
    count()
    (entry,) = entries(cache)
    _corrupt(entry, how)
    assert count().total == TOTAL
    assert len(asked) == 2  # counted again by the worker
    assert json.loads(entry.read_bytes())["answer"] == ANSWER  # and the entry written anew
    count()
    assert len(asked) == 2


def test_an_oversized_entry_is_not_read(cache, asked, monkeypatch):
    count()
    (entry,) = entries(cache)
    monkeypatch.setattr(fallback_cache, "MAX_ENTRY", entry.stat().st_size - 1)
    count()
    assert len(asked) == 2 and not entries(cache)  # removed, and the new answer too large to keep


def test_an_entry_that_is_not_a_regular_file_is_not_read(cache, asked):
    count()
    (entry,) = entries(cache)
    entry.unlink()
    os.mkfifo(entry)  # reading it would block for ever
    assert count().total == TOTAL and len(asked) == 2
    assert entry.is_file()  # replaced by a real entry


def test_a_failed_write_leaves_nothing_and_the_count_goes_on(cache, asked, monkeypatch):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(fallback_cache.os, "replace", fail)
    assert count().total == TOTAL
    assert not list(cache.iterdir())  # no entry, no temporary file


def test_a_cache_that_cannot_be_written_is_no_cache(tmp_path, asked, monkeypatch):
    monkeypatch.delenv("PARAMCOUNT_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PARAMCOUNT_CACHE_DIR", str(blocker))
    assert count().total == TOTAL and count().total == TOTAL and len(asked) == 2
