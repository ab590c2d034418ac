"""The Hub client against a hostile server (tests/hub_server.py, on 127.0.0.1): every case ends
in one line and exit 2, within the deadline (PARAMCOUNT_HUB_TIMEOUT, short here), its memory
bounded (tracemalloc's peak over the command), and nothing over a limit left in the HF cache.
"""

from __future__ import annotations

import json
import socket
import tracemalloc

import pytest

from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import hub, hub_gguf, hub_weights, hubhttp

from . import hub_server as hs
from .hub_server import FakeHub, pointed_at
from .test_gguf import LLAMA, META, write

huggingface_hub = pytest.importorskip("huggingface_hub")
pytest.importorskip("huggingface_hub.constants")
REPO = "tiny-org/Tiny-GGUF"
SAFE = "tiny-org/tiny-llama"
DEADLINE = 1.0  # seconds, for the stalling cases: their message says the deadline ended them
ROOMY = "20"  # seconds, for the others: ended by a limit long before, however loaded the machine
PEAK = 24 << 20  # bytes any case may hold at once; parsing the huge listing whole would take far more
CONFIG_LIMIT = 1 << 20


@pytest.fixture
def server(tmp_path, monkeypatch):
    fake = FakeHub()
    pointed_at(fake, monkeypatch, tmp_path / "cache")
    monkeypatch.setenv(hubhttp.ENV, ROOMY)
    monkeypatch.setattr(hub, "MAX_CONFIG_BYTES", CONFIG_LIMIT)
    files = tmp_path / "repo"
    files.mkdir()
    write(files / "Tiny-Q8_0.gguf", LLAMA, meta=META)
    fake.repos[REPO] = {"Tiny-Q8_0.gguf": files / "Tiny-Q8_0.gguf"}
    yield fake
    fake.close()


@pytest.fixture
def other():
    """A second server (another port): nothing may reach it."""
    fake = FakeHub()
    yield fake
    fake.close()


def hostile(args, capsys, cache) -> str:
    """Run the command; its one-line error, after the common checks."""
    tracemalloc.start()
    try:
        code = main(args)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and out.err.count("\n") == 1, out
    assert out.err.startswith("paramcount: error: ") and "Traceback" not in out.err
    assert peak < PEAK, f"{peak:,} bytes at the peak"
    if cache.exists():
        left = [p for p in cache.rglob("*") if p.is_file() and p.stat().st_size > CONFIG_LIMIT]
        assert not left and not list(cache.rglob("*.incomplete")), left
    return out.err


def resolves(fake: FakeHub) -> list[str]:
    return [p for m, p, _ in fake.requests if "/resolve/" in p]


SLOW = f"did not finish answering within {DEADLINE:g} s (set PARAMCOUNT_HUB_TIMEOUT to wait longer)"


@pytest.fixture
def short(monkeypatch):
    monkeypatch.setenv(hubhttp.ENV, str(DEADLINE))


@pytest.mark.parametrize(
    "where, act",
    [
        ("resolve", hs.slow_range),  # a range body at a byte per tick
        ("tree", hs.slow(json.dumps([{"type": "file", "path": "x.gguf", "size": 1}] * 50).encode())),
        ("*", hs.silent),  # the connection opens; no answer ever comes
        ("*", hs.endless_headers),
    ],
    ids=["slow-range-body", "slow-listing", "no-answer", "endless-headers"],
)
def test_a_stalling_server_ends_at_the_deadline(server, short, tmp_path, capsys, where, act):
    server.hostile[where] = act
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert SLOW in err


def test_a_stalling_config_ends_at_the_deadline(server, short, tmp_path, capsys):
    server.hostile["resolve"] = hs.slow(b"{" + b" " * 1000 + b"}")
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert SLOW in err and not (tmp_path / "cache").exists()


def test_server_errors_are_retried_within_bounds(server, tmp_path, capsys):
    server.hostile["*"] = hs.status(500)
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "the Hub answered HTTP 500 to the request for file listing" in err
    assert len(server.requests) == hubhttp.TRIES


def test_a_gzip_bomb_listing_is_refused_by_its_inflated_size(server, tmp_path, capsys):
    server.hostile["tree"] = hs.gzip_bomb(64 << 20)  # 64 MB of listing in a few kilobytes
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert f"the file listing runs past {hub_gguf.MAX_TREE_BYTES:,} bytes once inflated" in err


def test_a_huge_listing_is_cut_at_the_entry_cap_while_it_arrives(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_gguf, "MAX_TREE_ENTRIES", 5_000)
    server.hostile["tree"] = hs.huge_listing(100_000)  # about 9 MB: 60 MB and more as Python objects
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "lists more than 5,000 files; name one" in err


def test_a_listing_too_big_in_bytes_is_refused(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_gguf, "MAX_TREE_BYTES", 256 << 10)
    server.hostile["tree"] = hs.huge_listing(19_000)  # under the entry cap, over the bytes
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "the file listing runs past 262,144 bytes; not read further" in err


def test_endless_next_pages_stop_at_the_page_limit(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_gguf, "MAX_PAGES", 10)
    server.hostile["tree"] = hs.endless_next()
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "the Hub's listing goes on past 10 pages" in err and len(server.requests) == 10


def test_a_next_page_on_another_port_is_not_followed(server, other, tmp_path, capsys):
    server.hostile["tree"] = hs.endless_next(elsewhere=other.url)
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert f"the Hub's next page is at '{other.url}/api/models" in err and "not followed" in err
    assert other.requests == [] and len(server.requests) == 1


@pytest.mark.parametrize("elsewhere", ["other-port", "localhost", "https"])
def test_redirects_elsewhere_are_not_followed(server, other, tmp_path, capsys, elsewhere):
    port = server.url.rsplit(":", 1)[1]
    target = {
        "other-port": f"{other.url}/x/y/resolve/main/config.json",
        "localhost": f"http://localhost:{port}/x/y/resolve/main/config.json",  # the same server by another name
        "https": f"https://127.0.0.1:{port}/x",
    }[elsewhere]
    server.hostile["resolve"] = hs.redirect(target)
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert f"the Hub redirected to {target!r}, not 127.0.0.1:{port} (HF_ENDPOINT): not followed" in err
    assert other.requests == [] and len(server.requests) == 1


def test_redirects_on_the_endpoint_are_followed_a_few_times(server, tmp_path, capsys):
    server.hostile["resolve"] = hs.redirect("/tiny-org/tiny-llama/resolve/main/config.json", 307)
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert f"redirected more than {hubhttp.MAX_REDIRECTS} times" in err
    assert len(server.requests) == hubhttp.MAX_REDIRECTS + 1


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "no-length"])
def test_an_oversized_config_never_reaches_the_cache(server, tmp_path, capsys, announced):
    big = b'{"model_type": "llama", "pad": "' + b"x" * (2 * CONFIG_LIMIT) + b'"}'
    (tmp_path / "config.json").write_bytes(big)
    server.repos[SAFE] = {"config.json": tmp_path / "config.json"}
    if not announced:
        server.hostile["resolve"] = hs.chunked(big)
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert f"config.json runs past {CONFIG_LIMIT:,} bytes; not read further" in err
    assert not list((tmp_path / "cache").rglob("config.json"))


@pytest.mark.parametrize("size", [2**70, -1, 1.5, True, "12", None])
def test_a_listed_size_that_is_no_file_size_is_one_line(server, tmp_path, capsys, size):
    server.sizes["Tiny-Q8_0.gguf"] = size
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert f"the Hub lists 'Tiny-Q8_0.gguf' with a size of {size!r}, not a file's" in err
    assert resolves(server) == []


def test_many_gguf_shards_are_refused_before_any_is_read(server, tmp_path, capsys):
    shard = server.repos[REPO]["Tiny-Q8_0.gguf"]
    server.repos[REPO] = {f"Big-Q8_0-{i:05d}-of-02999.gguf": shard for i in range(1, 3000)}
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "is split into 2,999 files, more than 1,024; none is read" in err and resolves(server) == []


def test_shards_missing_from_the_listing_are_refused_before_any_is_read(server, tmp_path, capsys):
    shard = server.repos[REPO]["Tiny-Q8_0.gguf"]
    server.repos[REPO] = {f"Big-Q8_0-{i:05d}-of-00009.gguf": shard for i in (1, 2)}
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "the file names say 9 shards; the repository holds 2" in err and resolves(server) == []


def test_a_split_count_past_the_files_stops_after_the_first(server, tmp_path, capsys):
    """Two files named as shards, the first's split.count 2,999: the second is never read."""
    import gguf

    shard = tmp_path / "shard.gguf"
    w = gguf.GGUFWriter(str(shard), "llama")
    w.add_block_count(2)
    w.add_uint16("split.no", 0)
    w.add_uint16("split.count", 2999)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    server.repos[REPO] = {f"Big-Q8_0-{i:05d}-of-00002.gguf": shard for i in (1, 2)}
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "split.count says 2999 shards; the repository holds 2" in err
    assert [p.rsplit("/", 1)[1] for p in resolves(server)] == ["Big-Q8_0-00001-of-00002.gguf"]


def test_all_answers_of_a_command_share_a_byte_budget(server, tmp_path, capsys, monkeypatch):
    """Each shard's header within its own limit, the many of them past what one command may
    receive in all: refused when the budget is spent, not after every header is held."""
    import struct

    monkeypatch.setattr(hubhttp, "MAX_RECEIVED", 16 << 10)
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "shard.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    shards = {f"model-{i:05d}-of-00150.safetensors": tmp_path / "shard.safetensors" for i in range(1, 151)}
    (tmp_path / "index.json").write_text(json.dumps({"weight_map": {f"t{i}": s for i, s in enumerate(shards)}}))
    repo = {"config.json": tmp_path / "config.json", hub_weights.INDEX: tmp_path / "index.json", **shards}
    server.repos[SAFE] = repo
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert "the Hub's answers to this command pass 16,384 bytes in all; not read further" in err
    assert 10 < len(resolves(server)) < 150


def test_an_index_of_many_shards_is_refused_before_any_is_read(server, tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    index = {"weight_map": {f"t{i}": f"model-{i:05d}-of-02999.safetensors" for i in range(1, 3000)}}
    (tmp_path / "index.json").write_text(json.dumps(index))
    server.repos[SAFE] = {"config.json": tmp_path / "config.json", hub_weights.INDEX: tmp_path / "index.json"}
    err = hostile([SAFE], capsys, tmp_path / "cache")
    assert f"names more than {hub_weights.MAX_SHARDS:,} shards; none is read" in err
    assert [p.rsplit("/", 1)[1] for p in resolves(server)] == ["config.json", "model.safetensors", hub_weights.INDEX]


@pytest.mark.parametrize(
    "endpoint, why",
    [
        ("http://[::1", "is not a URL (Invalid IPv6 URL)"),
        ("file:///etc", "is not an http:// or https:// address"),
        ("ftp://example.org", "is not an http:// or https:// address"),
        ("http://127.0.0.1:99999", "is not a URL (Port out of range 0-65535)"),
        ("http://", "names no host"),
        ("http://user:pw@127.0.0.1", "names no host (or names a user)"),
        ("http://127.0.0.1:0", "names port 0"),
        ("http://127.0.0.1/ x", "is not an address (it holds spaces or control characters)"),
    ],
)
@pytest.mark.parametrize("name", [SAFE, f"{REPO}:Q8_0"])
def test_a_bad_hf_endpoint_is_one_line_and_contacts_nothing(server, tmp_path, capsys, monkeypatch, endpoint, why, name):
    connects = []
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: connects.append(a) or 1 / 0)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
    err = hostile([name], capsys, tmp_path / "cache")
    assert f"HF_ENDPOINT: {endpoint!r} {why}" in err and connects == [] and server.requests == []


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e999"])
def test_a_bad_deadline_setting_is_one_line(server, tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv(hubhttp.ENV, value)
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert f"PARAMCOUNT_HUB_TIMEOUT: {value!r} is not a number of seconds" in err and server.requests == []


@pytest.mark.parametrize(
    "answer, why",
    [
        (b"HELLO\r\n\r\n", "the Hub sent a broken answer (BadStatusLine"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"x" * 70_000 + b"\r\n\r\n", "the Hub sent a broken answer (LineTooLong"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n[]", "in the 'br' encoding, which is not read"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nnot gzip", "the Hub sent a broken gzip body"),
        (b"HTTP/1.1 200 OK\r\n\r\n[{}, 3]", "the Hub's listing is not a JSON array of objects (at '3')"),
        (b"HTTP/1.1 200 OK\r\n\r\n[" + b'{"a":' * 3000, "an entry of the Hub's listing nests too deeply"),
        (b"HTTP/1.1 200 OK\r\n\r\n[{" + b" " * 70_000, "an entry of the Hub's listing runs past 65,536 bytes"),
        (b"HTTP/1.1 200 OK\r\n\r\n[{}", "the Hub's listing is not a complete JSON array"),
        (b"HTTP/1.1 200 OK\r\nLink: <" + b"<" * 9000 + b">\r\n\r\n[]", "the Hub's Link header runs past 8,192"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "the Hub sent a broken answer (Incomplete"),
        (b"HTTP/1.1 302 Found\r\nLocation: //evil.example/x\r\n\r\n", "redirected to 'http://evil.example/x'"),
    ],
    ids=[
        "status-line",
        "long-header",
        "brotli",
        "bad-gzip",
        "not-objects",
        "deep",
        "long-entry",
        "cut-short",
        "long-link",
        "bad-chunk",
        "no-scheme-redirect",
    ],
)
def test_broken_answers_are_one_line(server, tmp_path, capsys, answer, why):
    server.hostile["tree"] = hs.raw(answer)
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert why in err


def test_a_web_request_has_its_own_deadline(server, short):
    """The page's GGUF-from-the-Hub source: a request to a server that never answers ends at the
    deadline with the same one line (the web layer turns it into a 4xx)."""
    from paramcount.web.sources import store_model

    server.hostile["*"] = hs.silent
    with pytest.raises(ParamcountError, match=SLOW.split(" (")[0]):
        store_model(f"{REPO}:Q8_0", None)


def test_the_token_goes_to_the_endpoint_only(server, other, monkeypatch):
    """A redirect to the public Hub's download hosts is followed, without the token; to any
    other host it is not (the client's rule, checked directly: no such host is reachable here)."""
    net = hubhttp.Client("https://huggingface.co", hubhttp.Deadline(1), token="hf_x")
    assert net.allowed("https://huggingface.co/a/b/resolve/main/x")
    assert net.allowed("https://cas-bridge.xethub.hf.co/x") and net.allowed("https://cdn-lfs.huggingface.co/x")
    assert not net.allowed("http://cdn-lfs.hf.co/x") and not net.allowed("https://hf.co.evil.org/x")
    assert not net.allowed("https://huggingface.co:8443/x") and not net.allowed("https://u@huggingface.co/x")
    mirror = hubhttp.Client(server.url, hubhttp.Deadline(1))
    assert not mirror.allowed("https://cdn-lfs.hf.co/x") and mirror.allowed(server.url + "/y")


@pytest.mark.parametrize("name", [SAFE, f"{REPO}:Q8_0"])
def test_an_hf_endpoint_huggingface_hub_cannot_import_is_one_line(tmp_path, name):
    """huggingface_hub parses HF_ENDPOINT when its constants are imported (a fresh process
    here): the setting is checked before that import."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_ENDPOINT": "http://[::1", "HF_HUB_CACHE": str(tmp_path)}
    child = subprocess.run([sys.executable, "-m", "paramcount", name], capture_output=True, text=True, env=env)
    assert child.returncode == 2 and child.stdout == ""
    assert child.stderr == "paramcount: error: HF_ENDPOINT: 'http://[::1' is not a URL (Invalid IPv6 URL)\n"


def test_tls_that_fails_is_one_line(server, tmp_path, capsys, monkeypatch):
    """https:// to a server that speaks plain HTTP: the handshake's error, as one line."""
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.url.replace("http:", "https:"))
    err = hostile([f"{REPO}:Q8_0"], capsys, tmp_path / "cache")
    assert "the Hub could not be read (WRONG_VERSION_NUMBER)" in err


def test_a_name_lookup_that_never_ends_stops_at_the_deadline(monkeypatch):
    """The lookup of a host (no timeout of its own) held until the test lets go: the request
    gives up at its deadline and leaves the lookup behind."""
    import threading

    released, real = threading.Event(), socket.getaddrinfo

    def lookup(host, *args, **kwargs):
        if host == "stuck.invalid":
            released.wait(30)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    net = hubhttp.Client("http://stuck.invalid", hubhttp.Deadline(0.2))
    try:
        with pytest.raises(ParamcountError, match=r"did not finish answering within 0\.2 s"):
            net.open("http://stuck.invalid/x", "src")
    finally:
        released.set()


@pytest.mark.parametrize(
    "commit, etag",
    [(hs.COMMIT, None), ("../../../../evil", None), (hs.COMMIT, '"../../evil"'), (hs.COMMIT, '"' + "0" * 40 + '"')],
    ids=["vouched", "commit-path", "etag-path", "etag-not-these-bytes"],
)
def test_the_cache_takes_only_names_and_bytes_the_hub_vouches_for(server, tmp_path, capsys, commit, etag):
    data = json.dumps({"model_type": "llama"}).encode()
    head = f"HTTP/1.1 200 OK\r\nX-Repo-Commit: {commit}\r\nETag: {etag or hs.git_hash(data)}\r\n"
    head += f"Content-Length: {len(data)}\r\n\r\n"
    server.hostile["resolve"] = hs.raw(head.encode() + data)
    hostile([SAFE], capsys, tmp_path / "cache")  # then the weights' range is answered 200: one line
    written = sorted(str(p.relative_to(tmp_path / "cache")) for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert not list(tmp_path.parent.rglob("evil*"))
    if etag is None and commit == hs.COMMIT:  # the one the Hub vouches for, as huggingface_hub lays it out
        root = "models--tiny-org--tiny-llama"
        blob = f"{root}/blobs/{hs.git_hash(data)}"
        assert written == [blob, f"{root}/refs/main", f"{root}/snapshots/{hs.COMMIT}/config.json"]
    else:
        assert written == []


def test_a_revision_that_climbs_out_of_the_cache_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ParamcountError, match=r"'\.\./\.\./x' is not a revision name"):
        hub.load(SAFE, revision="../../x")
