"""Heavy inputs in worker processes: one slow request never stalls the others, and is cut at
its time limit with a one-line 503, never a 500 (web/work.py).

Nothing here races the clock: a "slow" child is one that waits for the test to open a gate (a
file), so the others are answered while it provably has not been; the limit is shown firing on
a child that never answers, with a tiny limit injected; elsewhere the limit is far past any load."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from pathlib import Path

import pytest

from paramcount.errors import ParamcountError
from paramcount.web import server, work

pytest.importorskip("fastapi")


def printout(children: int) -> str:
    lines = "".join(f"  (a{i}): Linear(in_features={i + 1}, out_features=3, bias=True)\n" for i in range(children))
    return "Net(\n" + lines + ")"


HANG = 600  # seconds: a limit no loaded machine reaches, and how long a test waits before calling it a hang


class Held(work.Workers):
    """Workers whose children, while ``gate`` names a file, touch ``gate.started`` and then wait
    for that file before doing their work: a slow request the test controls."""

    gate: str | None = None

    def run(self, fn, *args, what: str = "source"):
        return super().run(_held, self.gate, fn, *args, what=what)


def _held(gate: str | None, fn, *args):
    """In the child: wait at the gate, then the work."""
    if gate:
        Path(gate + ".started").touch()
        while not os.path.exists(gate):
            time.sleep(0.01)
    return fn(*args)


def _wait_for(path: Path) -> None:
    for _ in range(HANG * 100):
        if path.exists():
            return
        time.sleep(0.01)
    pytest.fail(f"{path} never appeared")


@pytest.fixture(scope="module")
def served():
    """A server whose heavy requests go to Held workers with a limit far past any load: (port, workers)."""
    sock = server.bind("127.0.0.1", 0)
    workers = Held(limit=HANG)
    srv = server.server(sock, "127.0.0.1", workers=workers)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    yield sock.getsockname()[1], workers
    srv.should_exit = True
    thread.join(5)


@pytest.fixture
def live(served):
    served[1].gate = None
    return served[0]


def post(port: int, path: str, body: dict, timeout: float = HANG) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def test_a_heavy_printout_is_read_in_a_worker_and_counted_exactly(live):
    children = 4_000  # past HEAVY_CHARS: read in a child process, well within the limit
    text = printout(children)
    assert work.heavy(type("S", (), {"kind": "printout", "text": text})())
    status, data = post(live, "/api/model", {"source": {"kind": "printout", "text": text}})
    assert status == 200
    assert data["total"] == sum(4 * (i + 1) - (i + 1) + 3 for i in range(children))  # 3·in + 3 bias


def test_a_slow_request_does_not_stall_the_others(served, tmp_path):
    """The heavy request's child waits at a gate: five others are answered while it provably has
    not been, then the gate opens and it is counted. A fresh child reads the next one."""
    port, workers = served
    gate = tmp_path / "gate"
    workers.gate = str(gate)
    slow: dict = {}
    text = printout(4_000)

    def heavy() -> None:
        slow["status"], slow["body"] = post(port, "/api/model", {"source": {"kind": "printout", "text": text}})

    thread = threading.Thread(target=heavy)
    thread.start()
    _wait_for(Path(str(gate) + ".started"))  # the heavy request is in its worker, held
    fast = [post(port, "/api/model", {"source": {"kind": "catalog", "name": "gpt2"}}) for _ in range(5)]
    assert all(status == 200 for status, _ in fast) and not slow  # answered; the heavy one still held
    gate.touch()
    thread.join(HANG)
    assert slow["status"] == 200 and slow["body"]["total"] == sum(3 * (i + 1) + 3 for i in range(4_000))
    workers.gate = None  # the server still reads heavy inputs afterwards (a fresh child each time)
    status, _ = post(port, "/api/model", {"source": {"kind": "printout", "text": text}})
    assert status == 200


def test_a_request_past_its_limit_is_a_one_line_503(tmp_path):
    """A child that never answers (its gate never opens), under a tiny injected limit: the limit
    fires, whatever the load, and the page gets a 503 naming the source, never a 500."""
    from fastapi.testclient import TestClient

    from paramcount.web.app import create_app

    workers = Held(limit=0.2)
    workers.gate = str(tmp_path / "never")
    with TestClient(create_app(hosts=["testserver"], workers=workers)) as client:
        r = client.post("/api/model", json={"source": {"kind": "printout", "text": printout(4_000)}})
    assert r.status_code == 503 and r.json()["field"] == "source" and not r.json()["bug"]
    assert r.json()["error"] == "source: took longer than 0.2 s reading it; the server stopped it"


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
