"""Heavy inputs in worker processes: one slow request never stalls the others, and is cut at
its time limit with a one-line 503, never a 500 (web/work.py)."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from paramcount.errors import ParamcountError
from paramcount.web import server, work

pytest.importorskip("fastapi")


def printout(children: int) -> str:
    lines = "".join(f"  (a{i}): Linear(in_features={i + 1}, out_features=3, bias=True)\n" for i in range(children))
    return "Net(\n" + lines + ")"


@pytest.fixture(scope="module")
def live():
    """A server whose heavy requests may take 1.5 s."""
    sock = server.bind("127.0.0.1", 0)
    srv = server.server(sock, "127.0.0.1", workers=work.Workers(limit=1.5))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    srv.should_exit = True
    thread.join(5)


def post(port: int, path: str, body: dict, timeout: float = 30) -> tuple[int, dict, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    start = time.perf_counter()
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = conn.getresponse()
    data = json.loads(r.read())
    return r.status, data, time.perf_counter() - start


def test_a_heavy_printout_is_read_in_a_worker_and_counted_exactly(live):
    children = 4_000  # past HEAVY_CHARS: read in a child process, well within the limit
    text = printout(children)
    assert work.heavy(type("S", (), {"kind": "printout", "text": text})())
    status, data, _ = post(live, "/api/model", {"source": {"kind": "printout", "text": text}})
    assert status == 200
    assert data["total"] == sum(4 * (i + 1) - (i + 1) + 3 for i in range(children))  # 3·in + 3 bias


def test_a_slow_request_is_cut_at_its_limit_while_others_are_answered(live):
    slow: dict = {}

    def heavy() -> None:  # ~30,000 children: seconds to read, more than the 1.5 s limit
        slow["status"], slow["body"], slow["seconds"] = post(
            live, "/api/model", {"source": {"kind": "printout", "text": printout(30_000)}}
        )

    thread = threading.Thread(target=heavy)
    thread.start()
    time.sleep(0.3)  # the heavy request is in its worker
    fast = [post(live, "/api/model", {"source": {"kind": "catalog", "name": "gpt2"}}) for _ in range(5)]
    thread.join(30)
    assert all(status == 200 for status, _, _ in fast)
    assert max(seconds for _, _, seconds in fast) < 0.5  # not stalled behind the heavy one
    assert slow["status"] == 503 and slow["seconds"] < 5
    assert "took longer than 1.5 s" in slow["body"]["error"] and slow["body"]["field"] == "source"
    # the server still reads heavy inputs afterwards (a fresh child each time)
    status, _, _ = post(live, "/api/model", {"source": {"kind": "printout", "text": printout(4_000)}})
    assert status == 200


def test_a_workers_error_comes_back_whole():
    """A ParamcountError raised in the child keeps its source and field across the pipe."""
    workers = work.Workers(limit=10)
    with pytest.raises(ParamcountError) as e:
        workers.run(_refuse)
    assert e.value.field == "text" and e.value.source == "pasted" and "no modules" in str(e.value)


def _refuse() -> None:
    raise ParamcountError("no modules", source="pasted", field="text")


def test_a_large_upload_is_parsed_in_a_worker(monkeypatch, tmp_path):
    """Past HEAVY_BYTES a header is parsed in a child: the same count as in the server's
    thread, and a bad header's one-line error keeps its field across the pipe."""
    from fastapi.testclient import TestClient

    from paramcount.web.app import create_app

    from ..test_gguf import LLAMA, META, write
    from .conftest import gguf_header, upload_body

    path = write(tmp_path / "tiny.gguf", LLAMA, meta=META)
    header = gguf_header(path)
    with TestClient(create_app(hosts=["testserver"])) as client:
        inline = client.post("/api/upload", json=upload_body("gguf", path, header)).json()["id"]
        expected = client.post("/api/model", json={"source": {"kind": "upload", "id": inline}}).json()["total"]
    monkeypatch.setattr(work, "HEAVY_BYTES", 0)
    with TestClient(create_app(hosts=["testserver"], workers=work.Workers(limit=20))) as client:
        r = client.post("/api/upload", json=upload_body("gguf", path, header))
        assert r.status_code == 200
        got = client.post("/api/model", json={"source": {"kind": "upload", "id": r.json()["id"]}}).json()["total"]
        assert got == expected
        cut = client.post("/api/upload", json=upload_body("gguf", path, header[:-40]))
        assert cut.status_code == 400 and "runs past" in cut.json()["error"]
