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
    assert "the manifest is unreadable: not valid JSON (line 1, column 2)" in err and err.count("\n") == 1


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


# --- hostile stores: device files, FIFOs, links out of the store, deep JSON -----------------

HANG = 60  # seconds: a FIFO waited on or /dev/zero read to the end fails the test instead of hanging it


@pytest.fixture
def bounded():
    """SIGALRM raises after HANG seconds (an open() waiting on a FIFO is interrupted too)."""
    import signal

    def hung(*_):
        raise TimeoutError(f"still running after {HANG} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def one_line(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("paramcount: error: ") and "Traceback" not in err, err
    return err


def layer_path(home, media: str):
    """The blob of the tiny model's layer of ``media`` (its manifest names it), replaced by the test."""
    m = stores.ollama_manifest("tiny:1b")
    path = m.of(media)[0]
    path.unlink()
    return path


def replace_with(path, what: str, home) -> None:
    """``path`` becomes a FIFO, a link to a device, a link out of the store, or a device node."""
    import os

    if what == "fifo":
        os.mkfifo(path)
    elif what.startswith("/dev/"):
        path.symlink_to(what)
    elif what == "outside":
        outside = home / "outside"
        outside.write_bytes(b'{"num_ctx": 8}' if "params" in str(path) else (home / "src" / "model.gguf").read_bytes())
        path.symlink_to(outside)
    else:  # a character device node inside the store, /dev/zero's numbers (as root only)
        os.mknod(path, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 5))


KINDS = {
    "fifo": "is a FIFO (named pipe), not a regular file",
    "/dev/zero": "links out of the store",
    "/dev/urandom": "links out of the store",
    "outside": "links out of the store",
    "node": "is a character device, not a regular file",
}


@pytest.mark.parametrize("media", [stores.MODEL, stores.PARAMS, stores.PROJECTOR, "manifest"])
@pytest.mark.parametrize("what", list(KINDS))
def test_a_layer_that_is_no_regular_file_in_the_store_is_one_line(home, capsys, bounded, media, what):
    """A manifest, model blob, projector or params layer that is a FIFO, a device, or a link out
    of the store: one line naming it, for counting and for Ollama's plan alike, never read."""
    import os

    if what == "node" and os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    ollama(home, params={"num_ctx": 2048})
    if media == "manifest":
        path = home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "1b"
        path.unlink()
    else:
        path = layer_path(home, media)
    replace_with(path, what, home)
    for argv in (["ollama:tiny:1b"], ["memory", "ollama:tiny:1b", "--runtime", "ollama", "--gpu", "8GB"]):
        err = one_line(argv, capsys)
        assert KINDS[what] in err and path.name in err, err


def test_a_link_inside_the_store_is_followed(home, monkeypatch):
    """Links that stay in the store are read (a store may also live behind a link)."""
    ollama(home, projector=False)
    blob_path = stores.ollama_manifest("tiny:1b").of(stores.MODEL)[0]
    moved = blob_path.with_name("moved")
    blob_path.rename(moved)
    blob_path.symlink_to(moved)
    (home / "elsewhere").symlink_to(home / "ollama")
    monkeypatch.setenv("OLLAMA_MODELS", str(home / "elsewhere"))
    assert paramcount.load("ollama:tiny:1b").total > 0


@pytest.mark.parametrize("media", ["manifest", stores.PARAMS])
def test_json_nested_a_million_deep_is_one_line(home, capsys, media):
    ollama(home, params={"num_ctx": 2048})
    if media == "manifest":
        path = home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "1b"
    else:
        path = layer_path(home, media)
    path.write_text("[" * 1_000_000)
    err = one_line(["ollama:tiny:1b"], capsys)
    assert "is unreadable: not valid JSON: nested too deeply" in err, err
    path.write_text("[" * 100 + "]" * 100)  # parsed, but deeper than anything that walks it expects
    err = one_line(["ollama:tiny:1b"], capsys)
    assert "is unreadable: nested too deeply: arrays and objects more than 64 levels deep" in err, err


def test_a_self_linked_manifest_is_one_line_and_one_row(home, capsys, bounded):
    ollama(home)
    loop = home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "loop"
    loop.mkdir()
    (loop / "1b").symlink_to(loop / "1b")
    err = one_line(["ollama:loop:1b"], capsys)
    assert "loop/1b: is a link, which is not followed here (or a loop of links)" in err
    assert main(["list", "--local", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows["ollama:tiny:1b"]["parameters"] and "is a link" in rows["ollama:loop:1b"]["note"]


def test_a_store_path_too_long_for_the_system_is_one_line(home, capsys, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(home / ("x" * 5000)))
    err = one_line(["ollama:tiny:1b"], capsys)
    assert "cannot read Ollama's store" in err and "File name too long" in err and len(err) < 500, err
    assert main(["list", "--local"]) == 0  # nothing found there, and said so
    assert "no models found" in capsys.readouterr().out


def test_an_unreadable_lm_studio_folder_is_skipped(home, capsys, monkeypatch):
    """A folder without permission (chmod 000 as another user: PermissionError from every look
    inside it; root reads any folder, so the denial is injected) is left out of the listing."""
    import os

    lms = home / "home" / ".lmstudio" / "models" / "pub"
    for repo in ("open", "closed"):
        (lms / repo).mkdir(parents=True)
        (lms / repo / "m.gguf").write_bytes(b"GGUF")
        (lms / repo / "config.json").write_text("{}")
    closed = str(lms / "closed")
    real_stat, real_scandir = os.stat, os.scandir

    def denied(real):
        def call(path, *args, **kwargs):
            if str(path).startswith(closed + "/") or (real is real_scandir and str(path) == closed):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "stat", denied(real_stat))
    monkeypatch.setattr(os, "scandir", denied(real_scandir))
    assert main(["list", "--local", "--json"]) == 0
    names = [r["name"] for r in json.loads(capsys.readouterr().out)["models"]]
    assert names == ["pub/open/m.gguf"]


@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
def test_list_local_reports_a_device_or_fifo_per_row(home, capsys, bounded, what):
    ollama(home, params={"num_ctx": 2048})
    replace_with(layer_path(home, stores.PARAMS), what, home)
    assert main(["list", "--local", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["models"]
    assert row["parameters"] is None and KINDS[what] in row["note"]
