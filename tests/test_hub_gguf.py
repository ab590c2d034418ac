"""GGUF files on the Hub, read from their headers by range requests, against a local server that
answers as the Hub does (tests/hub_server.py): never the network."""

from __future__ import annotations

import itertools
import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import hub_gguf
from paramcount.gguf import reader as pg

from .hub_server import FakeHub, pointed_at
from .test_gguf import LLAMA, META, write, write_split
from .test_mmproj import MMPROJ

huggingface_hub = pytest.importorskip("huggingface_hub")
pytest.importorskip("huggingface_hub.constants")
REPO = "tiny-org/Tiny-GGUF"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    server = FakeHub()
    pointed_at(server, monkeypatch, tmp_path / "cache")
    yield server
    server.close()


@pytest.fixture
def repo(hub, tmp_path):
    """Two quants of one model, a split third, and an mmproj."""
    files = tmp_path / "repo"
    files.mkdir()
    write(files / "Tiny-Q8_0.gguf", LLAMA, meta=META)
    write(files / "Tiny-F16.gguf", [(n, s, q if q.name == "F32" else type(q).F16) for n, s, q in LLAMA], meta=META)
    write(files / "mmproj-Tiny-f16.gguf", MMPROJ, arch="clip")
    split = tmp_path / "split"
    split.mkdir()
    shards = write_split(split)
    served = {p.name: p for p in files.iterdir()}
    served.update({f"Q4_0/{p.name.replace('tiny', 'Tiny-Q4_0')}": p for p in shards})
    hub.repos[REPO] = served
    return files


def beside(repo, name):
    """A folder of the model ``name`` and the mmproj: what a local count of the pair reads."""
    folder = repo.parent / name.removesuffix(".gguf")
    folder.mkdir()
    for f in (name, "mmproj-Tiny-f16.gguf"):
        (folder / f).symlink_to(repo / f)
    return folder


def test_a_quant_counts_as_the_local_file_with_its_mmproj(repo, hub):
    m = paramcount.load(f"{REPO}:Q8_0")
    local = paramcount.load(beside(repo, "Tiny-Q8_0.gguf"))
    assert m.total == local.total
    assert m.towers()["projector"] == local.towers()["projector"]
    assert len(hub.ranges_of("Tiny-Q8_0.gguf")) == 1 and len(hub.ranges_of("mmproj-Tiny-f16.gguf")) == 1
    assert not hub.ranges_of("Tiny-F16.gguf")  # only the named model and its projector


def test_a_file_name_and_a_split_model(repo, hub):
    one = paramcount.load(f"{REPO}:Tiny-F16.gguf")
    assert one.total == paramcount.load(beside(repo, "Tiny-F16.gguf")).total
    split = paramcount.load(f"{REPO}:Q4_0")
    local = pg.read_shards(sorted(hub.repos[REPO][k] for k in hub.repos[REPO] if k.startswith("Q4_0/"))[0])
    assert split.total - paramcount.load(repo / "mmproj-Tiny-f16.gguf").total == pg.to_model(local).total
    assert "in 3 shards" in split.notes[0]
    for name in ("Q4_0/Tiny-Q4_0-00002-of-00003.gguf", "Tiny-Q4_0-00001-of-00003"):  # a path, or a name
        assert paramcount.load(f"{REPO}:{name}").total == split.total


def test_the_header_grows_by_range_requests_each_byte_fetched_once(repo, hub, monkeypatch):
    monkeypatch.setattr(hub_gguf, "FIRST_CHUNK", 256)
    m = paramcount.load(f"{REPO}:mmproj-Tiny-f16.gguf")
    ranges = [tuple(map(int, r.removeprefix("bytes=").split("-"))) for r in hub.ranges_of("mmproj-Tiny-f16.gguf")]
    assert len(ranges) > 1 and ranges[0][0] == 0
    assert all(b[0] == a[1] + 1 and b[1] - b[0] >= a[1] - a[0] for a, b in itertools.pairwise(ranges))
    header = pg.read_header(repo / "mmproj-Tiny-f16.gguf")
    assert ranges[-1][1] < header.file_size - 1 and m.total == header.elements  # tensor data never asked for


def test_listing_reads_each_header_once(repo, hub, capsys):
    assert main([REPO, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["file"]: r for r in doc["models"]}
    assert rows["Tiny-Q8_0.gguf"]["parameters"] == pg.from_file(repo / "Tiny-Q8_0.gguf").total
    assert rows["Tiny-F16.gguf"]["size"] == (repo / "Tiny-F16.gguf").stat().st_size
    split = rows["Q4_0/Tiny-Q4_0-*-of-00003.gguf"]
    assert split["files"] == 3 and split["quant"] == "Q4_0"
    gets = [p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p and not p.endswith("/config.json")]
    assert len(gets) == len(set(gets)) == 6  # 3 single files + 3 shards, each once (after config.json's 404)
    assert main([REPO, "--width", "120"]) == 0
    assert "Q8_0" in capsys.readouterr().out


def test_memory_and_fit_plan_a_hub_gguf_with_llama_cpp(repo, hub, capsys):
    assert main(["memory", f"{REPO}:Q8_0", "--context", "1024", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["memory", str(beside(repo, "Tiny-Q8_0.gguf")), "--context", "1024", "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert plan["settings"]["runtime"] == want["settings"]["runtime"] == "llama.cpp"
    assert plan["total"] == want["total"] and plan["model"]["parameters"] == want["model"]["parameters"]
    assert main(["fit", f"{REPO}:Q8_0", "--gpu", "24GB", "--context", "1024"]) == 0


@pytest.mark.parametrize(
    "name, setup, message",
    [
        ("nobody/Nothing-GGUF:Q4_K_M", None, "no such model on the Hub"),
        (f"{REPO}:Q2_K", None, "no GGUF file or quant 'Q2_K'"),
        (f"{REPO}:Q8_0", "no-range", "ignored the range request"),
        (f"{REPO}:Q8_0", "not-gguf", "not a GGUF file: bad magic"),
        (f"{REPO}:Q8_0", "huge", "header runs past 512 bytes"),
        (f"{REPO}:Q8_0", "missing", "no such file on the Hub (HTTP 404)"),
    ],
)
def test_hostile_or_broken_answers_are_one_line(repo, hub, tmp_path, monkeypatch, capsys, name, setup, message):
    if setup == "no-range":
        hub.ranges = False
    elif setup == "not-gguf":
        (tmp_path / "junk.gguf").write_bytes(b"<html>" + b"x" * 5000)
        hub.repos[REPO]["Tiny-Q8_0.gguf"] = tmp_path / "junk.gguf"
    elif setup == "huge":
        monkeypatch.setattr(hub_gguf, "MAX_HEADER_BYTES", 512)
        monkeypatch.setattr(hub_gguf, "FIRST_CHUNK", 128)
    elif setup == "missing":
        _vanish(hub, "Tiny-Q8_0.gguf")
    assert main(["memory", name]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    gets = [r for m, p, r in hub.requests if m == "GET" and "/resolve/" in p]
    assert all(r is not None for r in gets)  # only range requests, never a whole file


def _vanish(hub, name):
    """The tree lists ``name``; its download answers 404 (a file deleted between the two calls)."""
    served = hub.repos[REPO]

    class Listed(dict):
        def __contains__(self, key):
            return key != name and super().__contains__(key)

    hub.repos[REPO] = Listed(served)


def test_a_plain_repo_id_without_config_lists_then_library_asks_for_a_file(repo, hub):
    with pytest.raises(ParamcountError, match=r"name one as tiny-org/Tiny-GGUF:QUANT .*F16, Q4_0, Q8_0"):
        paramcount.load(REPO)


def test_import_stays_light():
    import subprocess
    import sys

    code = "import paramcount, sys; paramcount.load; print('huggingface_hub' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_offline_is_one_line_and_sends_nothing(repo, hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main([f"{REPO}:Q8_0"]) == 2
    err = capsys.readouterr().err
    assert "HF_HUB_OFFLINE is set" in err and err.count("\n") == 1 and hub.requests == []
