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
    for that file before doing a printout's work: a slow request the test controls."""

    gate: str | None = None

    def run(self, fn, *args, what: str = "source"):
        printout = any(getattr(getattr(a, "source", None), "kind", None) == "printout" for a in args)
        return super().run(_held, self.gate if printout else None, fn, *args, what=what)


def _held(gate: str | None, fn, *args):
    """In the child: wait at the gate, then the work."""
    if gate:
        Path(gate + ".started").touch()
        while not os.path.exists(gate):
            time.sleep(0.01)
    return fn(*args)


SPIN = "PARAMCOUNT_TEST_SPIN"  # the file a spinning worker touches first (the test's environment names it)


class Spinning(work.Workers):
    """Workers whose children, for a plan with ``-ot spin=CPU``, spin in one C call that holds
    the GIL for ever (a regex that backtracks: what a hostile -ot pattern did in the server)."""

    def run(self, fn, *args, what: str = "source"):
        return super().run(_spin_if_asked, fn, *args, what=what)


def _spin_if_asked(fn, q, *rest):
    import re

    if getattr(q, "override_tensor", None) == ["spin=CPU"]:
        if os.environ.get(SPIN):
            Path(os.environ[SPIN]).touch()
        re.match(r"(a+)+$", "a" * 64 + "b")  # 2^64 steps in C, the GIL held throughout
    return fn(q, *rest)


def hostile_plan() -> dict:
    return {"source": {"kind": "catalog", "name": "gpt2"}, "override_tensor": ["spin=CPU"], "runtime": "llama.cpp"}


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


# --- the transformers fallback, and a client that goes away ---------------------------------

CODEGEN = {"model_type": "codegen", "n_embd": 64, "n_layer": 3, "n_head": 4, "vocab_size": 300, "rotary_dim": 8}


@pytest.fixture
def fallback_worker(monkeypatch):
    """The fallback's worker, fresh for the test (the server runs in this process)."""
    pytest.importorskip("transformers")
    from paramcount.frontends import fallback_worker as fw

    mine = fw.Worker(limit=HANG)  # far past a loaded machine's torch import (the default is 120 s)
    monkeypatch.setattr(fw, "WORKER", mine)
    yield mine
    mine.close()


@pytest.fixture
def workers():
    return work.Workers(limit=HANG)


@pytest.fixture
def server_of(workers):
    """A server of the test's own, whose heavy requests go to ``workers``."""
    sock = server.bind("127.0.0.1", 0)
    srv = server.server(sock, "127.0.0.1", workers=workers)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    srv.should_exit = True
    thread.join(5)


def gone(pid: int, within: float = HANG) -> bool:
    """Whether process ``pid`` has ended, waiting for it up to ``within`` seconds (a bound on the
    wait only: nothing here asserts how long anything took)."""
    import os

    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def send_and_leave(port: int, body: dict, started) -> int:
    """Send a request, wait until ``started()`` names the process serving it, then disconnect."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    conn.request("POST", "/api/model", json.dumps(body), {"content-type": "application/json"})
    end = time.monotonic() + HANG
    while started() is None and time.monotonic() < end:
        time.sleep(0.01)
    pid = started()
    conn.sock.close()
    conn.close()
    assert pid is not None
    return pid


def test_a_fallback_config_is_built_in_the_worker(server_of, fallback_worker):
    import os

    status, data = post(server_of, "/api/model", {"source": {"kind": "config", "config": CODEGEN}})
    assert status == 200 and data["counted_by"] == "transformers"
    assert data["classes"] == ["base", "CodeGenForCausalLM", "CodeGenModel"]  # what transformers maps for codegen
    assert fallback_worker.pid not in (None, os.getpid())


def test_a_client_gone_kills_the_fallback_worker(server_of, fallback_worker):
    pid = send_and_leave(server_of, {"source": {"kind": "config", "config": CODEGEN}}, lambda: fallback_worker.pid)
    assert gone(pid)


def test_a_client_gone_kills_a_heavy_inputs_worker(server_of, workers):
    body = {"source": {"kind": "printout", "text": printout(30_000)}}
    pid = send_and_leave(server_of, body, lambda: next(iter(workers.pids), None))
    assert gone(pid)


@pytest.mark.parametrize(
    "config,message",
    [
        ({"model_type": "convnext", "depths": [1_000_000, 3]}, "depths[0]: 1,000,000 is over 1,024"),
        ({"model_type": "nllb-moe", "num_experts": 1 << 26}, "num_experts: 67,108,864 is over 32,768"),
        ({"model_type": "upernet", "backbone": "microsoft/resnet-50"}, "names the backbone 'microsoft/resnet-50'"),
    ],
)
def test_a_heavy_config_is_refused_with_its_bound(client, config, message):
    r = client.post("/api/model", json={"source": {"kind": "config", "config": config}})
    assert r.status_code == 400 and message in r.json()["error"] and not r.json()["bug"]


def test_a_fallback_past_its_limits_is_a_message_not_a_500(client, fallback_worker, monkeypatch):
    from paramcount.frontends import fallback_worker as fw

    monkeypatch.setattr(fw, "MAX_MODULES", 20)
    r = client.post("/api/model", json={"source": {"kind": "config", "config": CODEGEN}})
    assert r.status_code == 400 and "built more than 20 modules" in r.json()["error"]
    monkeypatch.setattr(fw, "MAX_MODULES", 1 << 17)
    fallback_worker.close()
    monkeypatch.setattr(fallback_worker, "limit", 0.01)  # no fresh child starts Python in 10 ms
    r = client.post("/api/model", json={"source": {"kind": "config", "config": CODEGEN}})
    assert r.status_code == 503 and "took longer than 0.01 s" in r.json()["error"]


def many_tensors(path, n: int) -> bytes:
    """A safetensors file of ``n`` one-element tensors that match no layer; its header bytes."""
    import struct

    meta = {f"w{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
    head = json.dumps(meta).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + bytes(4 * n))
    return path.read_bytes()[: 8 + len(head)]


def test_a_large_safetensors_header_is_answered_in_a_worker(monkeypatch, tmp_path):
    """Past HEAVY_BYTES a safetensors header is held as bytes and every request on it is read in
    a child (the server's thread never parses or counts it): the same answer as in the thread."""
    from fastapi.testclient import TestClient

    from paramcount.web.app import create_app

    from .conftest import upload_body

    path = tmp_path / "many.safetensors"
    header = many_tensors(path, 300)

    def ask(client) -> tuple[dict, dict]:
        key = client.post("/api/upload", json=upload_body("safetensors", path, header)).json()["id"]
        source = {"kind": "upload", "id": key}
        return client.post("/api/model", json={"source": source}).json(), client.post(
            "/api/memory", json={"source": source}
        ).json()

    with TestClient(create_app(hosts=["testserver"])) as client:
        inline = ask(client)
    monkeypatch.setattr(work, "HEAVY_BYTES", 0)
    workers = work.Workers(limit=HANG)
    with TestClient(create_app(hosts=["testserver"], workers=workers)) as client:
        assert ask(client) == inline and inline[0]["total"] == 300
        assert client.app.app.state.uploads.items[next(iter(client.app.app.state.uploads.items))].parsed is None
    assert workers.runs == 3 and not workers.pids  # the upload's check, the count, the plan


@pytest.fixture
def inline():
    """An app whose jobs run in this process, where the test patches the library."""
    from fastapi.testclient import TestClient

    from paramcount.web.app import create_app

    with TestClient(create_app(hosts=["testserver"], workers=work.Inline())) as client:
        yield client


def test_a_derivation_of_too_many_distinct_tensors_is_not_written(inline, monkeypatch, tmp_path):
    """A line per tensor for a header of 100k unrepeated tensors took minutes and tens of MB:
    past MAX_DERIVED distinct tensors the page gets the count and a one-line reason instead."""
    import importlib

    derive = importlib.import_module("paramcount.derive")  # the module: the package's attribute is the function

    from .conftest import upload_body

    path = tmp_path / "many.safetensors"
    header = many_tensors(path, 300)
    monkeypatch.setattr(derive, "MAX_DERIVED", 100)
    key = inline.post("/api/upload", json=upload_body("safetensors", path, header)).json()["id"]
    data = inline.post("/api/model", json={"source": {"kind": "upload", "id": key}}).json()
    assert data["total"] == 300 and data["derivation"] is None
    assert "more than 100 distinct tensors: too many lines to derive" in data["derivation_error"]
    monkeypatch.setattr(derive, "MAX_DERIVED", 300)
    assert inline.post("/api/model", json={"source": {"kind": "upload", "id": key}}).json()["derivation"]


# --- every plan in a worker: a hostile one spins there, never in the server ------------------


def test_normal_requests_are_answered_while_hostile_plans_spin(tmp_path):
    """Two plans spin in their workers, each in one C call holding its GIL for ever: counts and
    plans of other models are answered meanwhile, the spinning ones still unanswered; their
    clients leave and their workers are killed; the pool serves on."""
    workers = Spinning(limit=HANG)
    sock = server.bind("127.0.0.1", 0)
    srv = server.server(sock, "127.0.0.1", workers=workers)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    port = sock.getsockname()[1]
    try:
        held = []
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
            conn.request("POST", "/api/memory", json.dumps(hostile_plan()), {"content-type": "application/json"})
            held.append(conn)
        for _ in range(HANG * 100):
            if len(workers.pids) == 2:
                break
            time.sleep(0.01)
        spinning = workers.pids
        assert len(spinning) == 2
        normal = {"source": {"kind": "catalog", "name": "gpt2"}}
        for path in ("/api/model", "/api/memory", "/api/model", "/api/memory"):
            status, _ = post(port, path, normal)
            assert status == 200
        assert spinning <= workers.pids  # still spinning: nothing the server did waited on them
        for conn in held:
            conn.sock.close()
        assert all(gone(pid) for pid in spinning)
        assert post(port, "/api/memory", normal)[0] == 200
    finally:
        srv.should_exit = True
        thread.join(HANG)
        workers.close()


def test_a_plan_past_its_deadline_is_a_one_line_503():
    """A plan spinning with the GIL held, under a short injected limit: its worker is killed at
    the deadline and the page gets a 503 naming the field, never a 500; the next plan is answered."""
    from fastapi.testclient import TestClient

    from paramcount.web.app import create_app

    workers = Spinning(limit=1)
    with TestClient(create_app(hosts=["testserver"], workers=workers)) as client:
        r = client.post("/api/memory", json=hostile_plan())
        assert r.status_code == 503 and not r.json()["bug"], r.text
        assert r.json()["error"] == "source: took longer than 1 s reading it; the server stopped it"
        workers.limit = HANG
        assert client.post("/api/memory", json={"source": {"kind": "catalog", "name": "gpt2"}}).status_code == 200
    assert not workers.pids
    workers.close()


def test_a_freed_slot_goes_to_the_newest_waiter_and_the_oldest_past_the_queue_is_refused(monkeypatch):
    """After a burst, the requests that come next are served first (LIFO), and past WAITING
    waiters the one waiting longest is refused (its ticket set, and marked dropped)."""
    monkeypatch.setattr(work, "WAITING", 2)
    slots = work._Slots(1)
    first = slots.ticket()
    a, b = slots.ticket(), slots.ticket()
    assert first.is_set() and not a.is_set() and not b.is_set()
    c = slots.ticket()  # a third waiter: the oldest (a) is refused
    assert a.is_set() and slots.was_dropped(a) and not slots.was_dropped(b)
    slots.release()  # first's slot: to c, the newest
    assert c.is_set() and not b.is_set()
    slots.give_up(b)  # b stops waiting: nothing handed to it
    slots.release()  # c's slot: no one waits
    assert slots.free == 1 and not slots.waiting


def test_a_fallback_config_is_planned_in_a_pool_worker(server_of, fallback_worker, workers):
    """Built by transformers (its worker, from the server's thread), then planned in a pool
    worker: an -ot pattern on it never runs in the server's threads."""
    before = workers.runs
    status, data = post(server_of, "/api/memory", {"source": {"kind": "config", "config": CODEGEN}})
    assert status == 200 and data["total"] > 0
    assert workers.runs == before + 2  # sent, sent back for the build, then planned there
