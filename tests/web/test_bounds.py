"""The server bounded: no 500 on odd names, Allow on 405, the upload cache by bytes, read timeouts."""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
import time

import pytest
from fastapi.testclient import TestClient

from paramcount.web import schemas, server, sources
from paramcount.web.app import create_app

LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 100,
}


@pytest.fixture(scope="module")
def lenient():
    with TestClient(create_app(hosts=["testserver"]), raise_server_exceptions=False) as c:
        yield c


def st_header(names):
    h = {n: {"dtype": "F32", "shape": [2], "data_offsets": [i * 8, i * 8 + 8]} for i, n in enumerate(names)}
    raw = json.dumps(h).encode()
    return struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + 8 * len(names)


def upload(client, names):
    """The upload's id, or the one-line error that refused it (never a 500)."""
    header, size = st_header(names)
    body = {"format": "safetensors", "name": "x.safetensors", "size": size, "header": base64.b64encode(header).decode()}
    r = client.post("/api/upload", content=json.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code in (200, 400), r.text
    return r.json()["id"] if r.status_code == 200 else None


def test_a_lone_surrogate_in_architectures_is_escaped_not_a_500(lenient):
    config = {**LLAMA, "architectures": ["Llama\ud800ForCausalLM"]}
    body = json.dumps({"source": {"kind": "config", "config": config}})
    for path in ("/api/model", "/api/memory"):
        r = lenient.post(path, content=body, headers={"content-type": "application/json"})
        assert r.status_code in (200, 400), r.text
        json.loads(r.content)


@pytest.mark.parametrize("name", ["model.layers.0.w\ud800", ".".join(["a"] * 300) + ".weight", "[/]x.weight"])
def test_odd_tensor_names_are_answered(lenient, name):
    key = upload(lenient, [name])
    if key is None:  # refused by the reader with a one-line 400
        return
    for path in ("/api/model", "/api/memory"):
        r = lenient.post(path, json={"source": {"kind": "upload", "id": key}})
        assert r.status_code in (200, 400), r.text  # counted, or refused in one line
        data = r.json()
        if r.status_code == 400:
            assert "\n" not in data["error"]
            continue
        if path == "/api/model":
            if "\ud800" not in name:
                schemas.ModelResponse.model_validate(data)
            assert data["total"] == 2


def test_trees_deeper_than_the_page_draws_are_elided():
    from paramcount.ir import Block, Tensor
    from paramcount.web import views

    node = Block("a", (Tensor("weight", (2,)),))
    for _ in range(300):
        node = Block("a", (node,))
    sent = views.tree(node)
    depth = 0
    while sent.get("children"):
        sent, depth = sent["children"][0], depth + 1
    assert sent["elided"] and sent["count"] == 2 and depth == views.MAX_TREE_DEPTH


def test_responses_still_match_the_published_schemas(lenient):
    source = {"kind": "catalog", "name": "bert-base-chinese"}
    schemas.ModelResponse.model_validate(lenient.post("/api/model", json={"source": source}).json())
    schemas.MemoryResponse.model_validate(lenient.post("/api/memory", json={"source": source}).json())
    body = {"source": {"kind": "catalog", "name": "gpt2"}, "runtime": "vllm", "tp": 2}
    served = schemas.MemoryResponse.model_validate(lenient.post("/api/memory", json=body).json())
    assert served.serving is not None and served.runtime == "vllm"


def test_405_says_what_is_allowed(lenient):
    r = lenient.get("/api/model")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert lenient.put("/api/memory").headers["allow"] == "POST"


def test_upload_cache_is_bounded_by_bytes():
    kept = sources.Uploads(keep=16, max_bytes=100 * sources.UPLOAD_WEIGHT)
    for i in range(5):
        kept.put(str(i), object(), header_bytes=40)  # 40 bytes of header each: two fit in 100
    assert list(kept.items) == ["3", "4"] and kept.weight <= kept.max_bytes
    kept.put("big", object(), header_bytes=1000)  # the newest stays even alone over the bound
    assert list(kept.items) == ["big"]


@pytest.fixture(scope="module")
def served():
    """A real server with short read deadlines (injected: the defaults are 10 and 30 s), in this
    process: (the uvicorn server, its port)."""
    sock = server.bind("127.0.0.1", 0)
    srv = server.server(sock, "127.0.0.1", header_timeout=0.5, body_timeout=0.5)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    yield srv, sock.getsockname()[1]
    srv.should_exit = True
    thread.join(5)


@pytest.fixture(scope="module")
def live(served):
    return served[1]


# How long a test waits for the server to act before calling it a hang: far past the injected
# 0.5 s deadlines, so a loaded machine never fails a test that the server passes. Nothing is
# asserted about how soon the server acts, only that it does (closes, answers 408).
HANG = 120


def closed_within(conn: socket.socket, seconds: float = HANG) -> tuple[bool, bytes]:
    conn.settimeout(seconds)
    data = b""
    try:
        while chunk := conn.recv(4096):
            data += chunk
    except TimeoutError:
        return False, data
    return True, data


def test_slow_headers_are_dropped(live):
    conn = socket.create_connection(("127.0.0.1", live))
    conn.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends its headers
    closed, data = closed_within(conn)
    assert closed and data == b""  # dropped by the header deadline, unanswered


def test_slow_bodies_get_408(live):
    conn = socket.create_connection(("127.0.0.1", live))
    conn.sendall(b"POST /api/model HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    conn.sendall(b"Content-Length: 100\r\n\r\n{")  # 1 of 100 bytes
    _, data = closed_within(conn)
    assert data.startswith(b"HTTP/1.1 408") and b"not received within 0.5 s" in data


def test_kept_alive_answers_do_not_wait_on_nagle(served):
    """An answer written as headers then body must not wait on the client's delayed ACK (40 ms a
    request): every connection the server holds has TCP_NODELAY set on its socket."""
    srv, live = served
    conn = socket.create_connection(("127.0.0.1", live))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = json.dumps({"source": {"kind": "catalog", "name": "gpt2"}}).encode()
    request = (
        b"POST /api/model HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    for _ in range(2):  # kept alive: the second request comes on the same connection
        conn.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            data += conn.recv(65536)
        assert data.startswith(b"HTTP/1.1 200")
    held = [p.transport.get_extra_info("socket") for p in srv.server_state.connections]
    mine = [s for s in held if s.getpeername() == conn.getsockname()]
    assert len(mine) == 1 and mine[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def _length(data: bytes) -> int:
    head = data.split(b"\r\n\r\n", 1)[0].decode().lower()
    return int(head.split("content-length:")[1].split("\r\n")[0])


@pytest.mark.parametrize(
    "body, status, said",
    [
        (b"[" * 1_000_000, 400, "There was an error parsing the body"),  # past the parser's recursion limit
        (
            json.dumps({"source": {"kind": "config", "config": {**LLAMA, "x": json.loads("[" * 100 + "]" * 100)}}}),
            422,
            "nested too deeply: arrays and objects more than 64 levels deep",
        ),
        (
            json.dumps({"source": {"kind": "catalog", "name": "gpt2"}, "overrides": ["x=" + "[" * 100 + "]" * 100]}),
            400,
            "--set: x: nested too deeply to read",
        ),
    ],
)
def test_json_nested_too_deeply_is_refused_not_a_bug(lenient, body, status, said):
    r = lenient.post("/api/model", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status and said in r.json()["error"] and r.json()["bug"] is False, r.text[:300]
