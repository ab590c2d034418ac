"""Models already on disk: Ollama's store (manifest + blobs), the Hugging Face cache and LM Studio's
folder, each built in a temporary folder (OLLAMA_MODELS, HF_HUB_CACHE, HOME): never the real home."""

from __future__ import annotations

import hashlib
import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import stores
from paramcount.gguf import reader as pg

from .test_gguf import LLAMA, META, write
from .test_mmproj import MMPROJ


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("OLLAMA_KV_CACHE_TYPE", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path


def blob(root, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def ollama(home, name="tiny", tag="1b", params=None, projector=True, layers=None):
    """A model as ``ollama pull`` leaves it: blobs by digest, a manifest naming them."""
    root = home / "ollama"
    src = home / "src"
    src.mkdir(exist_ok=True)
    model = write(src / "model.gguf", LLAMA, meta=META).read_bytes()
    found = [{"mediaType": stores.MODEL, **blob(root, model)}]
    if projector:
        mm = write(src / "mmproj.gguf", MMPROJ, arch="clip").read_bytes()
        found.append({"mediaType": stores.PROJECTOR, **blob(root, mm)})
    if params is not None:
        found.append({"mediaType": stores.PARAMS, **blob(root, json.dumps(params).encode())})
    folder = root / "manifests" / "registry.ollama.ai" / "library" / name
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"schemaVersion": 2, "layers": layers if layers is not None else found}
    (folder / tag).write_text(json.dumps(doc))
    return src


def test_an_ollama_name_counts_its_blob_and_projector(home):
    src = ollama(home, params={"num_ctx": 2048, "num_gpu": 10, "temperature": 0.5})
    m = paramcount.load("ollama:tiny:1b")
    assert m.total == pg.from_file(src / "model.gguf").total + pg.from_file(src / "mmproj.gguf").total
    assert m.towers()["projector"] and m.name == "ollama:tiny:1b"
    assert "Ollama's params layer sets num_ctx 2048, num_gpu 10" in m.notes[-2]
    assert "partial offload (num_gpu) is not modelled" in m.notes[-1]


def test_memory_takes_num_ctx_and_the_kv_type_as_ollama_passes_them(home, capsys, monkeypatch):
    ollama(home, params={"num_ctx": 2048})
    monkeypatch.setenv("OLLAMA_KV_CACHE_TYPE", "q8_0")
    assert main(["memory", "ollama:tiny:1b", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["runtime"] == "llama.cpp" and settings["context"] == 2048
    assert settings["kv_dtype"].lower().startswith("q8_0")
    assert main(["memory", "ollama:tiny:1b", "--context", "512", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["context"] == 512  # a flag wins
    assert main(["fit", "ollama:tiny:1b", "--gpu", "8GB"]) == 0
    assert "fits" in capsys.readouterr().out
    ollama(home, params={"num_ctx": 131072})  # past the model's 4,096: Ollama cuts it
    assert main(["memory", "ollama:tiny:1b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["context"] == 4096


def test_the_default_tag_is_latest(home):
    ollama(home, tag="latest", projector=False)
    assert paramcount.load("ollama:tiny").total == paramcount.load("ollama:library/tiny:latest").total


@pytest.mark.parametrize(
    "name, layers, message",
    [
        ("ollama:absent:1b", None, "no such model in Ollama's store"),
        ("ollama:../../etc:1b", None, "not a part of an Ollama model name"),
        ("ollama:tiny:1b", [{"mediaType": stores.MODEL, "digest": "md5:00", "size": 1}], "layers[0]: expected"),
        ("ollama:tiny:1b", [{"mediaType": stores.MODEL, "digest": "sha256:" + "0" * 64, "size": 9}], "blob sha256-0"),
        ("ollama:tiny:1b", [], "lists 0 model layers"),
    ],
)
def test_a_broken_store_is_one_line(home, capsys, name, layers, message):
    ollama(home, layers=layers)
    assert main([name]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_a_manifest_that_is_not_json(home, capsys):
    folder = home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "bad"
    folder.mkdir(parents=True)
    (folder / "1b").write_text("{not json")
    assert main(["memory", "ollama:bad:1b"]) == 2
    err = capsys.readouterr().err
    assert "the manifest is unreadable: JSONDecodeError" in err and err.count("\n") == 1


def test_list_local_finds_all_three_stores(home, capsys, tmp_path):
    from .test_hub import cache_repo

    src = ollama(home, params={"num_ctx": 2048})
    gguf_bytes = (src / "model.gguf").read_bytes()
    cache_repo(home / "hub", {"tiny-Q8_0.gguf": gguf_bytes}, repo="org/tiny-GGUF")
    lms = home / "home" / ".lmstudio" / "models" / "lmstudio-community" / "tiny-GGUF"
    lms.mkdir(parents=True)
    (lms / "tiny-Q8_0.gguf").write_bytes(gguf_bytes)
    (lms / "mmproj-tiny-f16.gguf").write_bytes((src / "mmproj.gguf").read_bytes())
    outside = tmp_path / "outside.gguf"
    outside.write_bytes(gguf_bytes)
    (lms / "linked-Q8_0.gguf").symlink_to(outside)  # a link out of the store is not followed
    bad = home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "bad"
    bad.mkdir()
    (bad / "1b").write_text("[]")
    assert main(["list", "--local", "--json"]) == 0
    rows = {(r["store"], r["path"].rsplit("/", 1)[-1]): r for r in json.loads(capsys.readouterr().out)["models"]}
    total = pg.from_file(src / "model.gguf").total
    assert rows["ollama", "ollama:tiny:1b"]["parameters"] == total + pg.from_file(src / "mmproj.gguf").total
    assert rows["hf-cache", "tiny-Q8_0.gguf"]["parameters"] == total
    assert rows["lm-studio", "tiny-Q8_0.gguf"]["parameters"] == total
    assert "unreadable" in rows["ollama", "ollama:bad:1b"]["note"]
    assert ("lm-studio", "linked-Q8_0.gguf") not in rows and len(rows) == 4
    assert main(["list", "--local", "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "ollama:tiny:1b" in out and "org/tiny-GGUF/tiny-Q8_0.gguf" in out


def test_the_walk_is_bounded(home, monkeypatch):
    root = home / "home" / ".lmstudio" / "models" / "pub"
    for i in range(30):
        (root / f"repo{i}").mkdir(parents=True)
        (root / f"repo{i}" / "m.gguf").write_bytes(b"GGUF")
    assert len(stores.local_models()) == 30
    monkeypatch.setattr(stores, "MAX_WALK", 10)
    rows = stores.local_models()
    assert 0 < len(rows) <= 10 and all("unreadable" in r.note for r in rows)


def test_ollama_names_are_parsed_as_ollama_parses_them():
    assert stores.ollama_parts("llama3.1:8b") == ("registry.ollama.ai", "library", "llama3.1", "8b")
    assert stores.ollama_parts("me/mine") == ("registry.ollama.ai", "me", "mine", "latest")
    assert stores.ollama_parts("hf.co/org/repo:Q4_K_M") == ("hf.co", "org", "repo", "Q4_K_M")
    with pytest.raises(ParamcountError):
        stores.ollama_parts("a/b/c/d")
    for name in ("tiny\n", "tiny:1b\n", "me\n/mine"):  # $ passes a final newline; fullmatch does not
        with pytest.raises(ParamcountError, match="is not a part of an Ollama model name"):
            stores.ollama_parts(name)


def test_a_control_character_in_a_store_name_stays_in_its_row(home, capsys):
    """Issue 32 item 7: a folder named with a newline split the table's row in two."""
    ollama(home, name="evil\nname", tag="1b\x1b[2J")
    assert main(["list", "--local", "--width", "200"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "ollama:" in line]
    assert len(rows) == 1 and "ollama:evil\\x0aname:1b\\x1b[2J" in rows[0], out
    assert "\x1b" not in out


def test_nothing_found_says_where_it_looked(home, capsys):
    assert main(["list", "--local"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no models found in Ollama's store (") and str(home / "ollama") in out
