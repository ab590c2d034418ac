"""A local HTTP server that answers as the Hugging Face Hub does, and as a hostile one would.

It serves ``/api/models/{repo}/tree/{revision}`` (the file list with sizes) and
``/{repo}/resolve/{revision}/{path}`` (HEAD and GET, with ``Range``, ``X-Repo-Commit`` and the
git ETag the Hub gives a plain file), answers 404 with the Hub's ``X-Error-Code`` header, and
records every request so a test can count them. Files are paths on disk (sparse GGUF files
cost nothing).

``hostile`` maps "tree", "resolve" or "*" (every request) to one of the behaviours below: a
body at a byte per tick, no answer, headers without end, HTTP 500, a gzip bomb, a huge
listing, next pages without end, a redirect elsewhere. Each is bounded (at most LINGER
seconds, or a fixed number of bytes) and stops when the server closes. Nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LINGER = 30.0  # seconds a stalling behaviour keeps a connection before it gives up by itself
TICK = 0.05  # seconds between the bytes of a slow answer


class FakeHub:
    def __init__(self):
        self.repos: dict[str, dict[str, Path]] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Range
        self.ranges = True  # False: ignore Range and send whole files (HTTP 200)
        self.hostile: dict[str, Callable] = {}
        self.sizes: dict[str, object] = {}  # a size the listing gives a file instead of its own
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def ranges_of(self, name: str) -> list[str]:
        """The Range headers of the GETs of the file ``name``."""
        return [r for m, p, r in self.requests if m == "GET" and p.endswith("/" + name)]


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            self.answer(body=False)

        def do_GET(self) -> None:
            self.answer(body=True)

        def answer(self, body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path, self.headers.get("Range")))
            tree = re.match(r"^/api/models/([^/]+/[^/]+)/tree/[^/]+/?$", path)
            resolve = re.match(r"^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$", path)
            act = hub.hostile.get("*") or hub.hostile.get("tree" if tree else "resolve" if resolve else "")
            try:
                if act is not None:
                    return act(self, hub)
                if tree:
                    return self.tree(tree[1])
                if resolve:
                    return self.file(resolve[1], resolve[2], body)
                self.error(404, "RepoNotFound")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client read what it asked for (or gave up) and closed

        def error(self, code: int, kind: str) -> None:
            self.send_response(code)
            self.send_header("X-Error-Code", kind)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def tree(self, repo: str) -> None:
            if repo not in hub.repos:
                return self.error(404, "RepoNotFound")
            items = [
                {"type": "file", "oid": "0" * 40, "size": hub.sizes.get(name, p.stat().st_size), "path": name}
                for name, p in sorted(hub.repos[repo].items())
            ]
            self.json(json.dumps(items).encode())

        def json(self, data: bytes, *extra: tuple[str, str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def file(self, repo: str, name: str, body: bool) -> None:
            if repo not in hub.repos:
                return self.error(404, "RepoNotFound")
            if name not in hub.repos[repo]:
                return self.error(404, "EntryNotFound")
            path = hub.repos[repo][name]
            size = path.stat().st_size
            rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
            if rng and hub.ranges and int(rng[1]) >= size:
                return self.error(416, "RangeNotSatisfiable")
            start, end = (int(rng[1]), min(int(rng[2]), size - 1)) if rng and hub.ranges else (0, size - 1)
            self.send_response(206 if rng and hub.ranges else 200)
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("ETag", f'"{git_etag(path)}"')
            self.send_header("X-Repo-Commit", COMMIT)
            if rng and hub.ranges:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if body:
                self.send(path, start, end)

        def send(self, path: Path, start: int, end: int) -> None:
            with open(path, "rb") as f:
                f.seek(start)
                left = end - start + 1
                while left > 0:
                    chunk = f.read(min(left, 1 << 16))
                    self.wfile.write(chunk)
                    left -= len(chunk)

    return Handler


def git_etag(path: Path) -> str:
    """The Hub's ETag of a plain (not LFS) file: git's blob hash; "0" for files too big to hash here."""
    size = path.stat().st_size
    if size > 64 << 20:
        return "0"
    return git_hash(path.read_bytes())


def git_hash(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def pointed_at(server: FakeHub, monkeypatch, cache: Path) -> None:
    """huggingface_hub's settings (and the environment) naming ``server`` as the Hub, online,
    ``cache`` as the HF cache."""
    import huggingface_hub.constants as constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    template = server.url + "/{repo_id}/resolve/{revision}/{filename}"  # as HF_ENDPOINT sets it on import
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))


# --- hostile behaviours: each takes the request's handler and the server ------------------


def silent(h, hub: FakeHub) -> None:
    """Accept the connection, read the request, never answer."""
    hub.stopping.wait(LINGER)


def endless_headers(h, hub: FakeHub) -> None:
    """A status line, then a header line every tick, without end."""
    h.wfile.write(b"HTTP/1.1 200 OK\r\n")
    for i in range(int(LINGER / TICK)):
        if hub.stopping.wait(TICK):
            return
        h.wfile.write(b"X-More-%d: x\r\n" % i)


def slow(data: bytes, status: int = 200, *headers: tuple[str, str]) -> Callable:
    """``data`` announced whole (Content-Length), then sent a byte per tick."""

    def act(h, hub: FakeHub) -> None:
        h.send_response(status)
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        for i in range(min(len(data), int(LINGER / TICK))):
            if hub.stopping.wait(TICK):
                return
            h.wfile.write(data[i : i + 1])

    return act


def slow_range(h, hub: FakeHub) -> None:
    """A 206 to any range, its bytes a tick apart."""
    rng = re.fullmatch(r"bytes=(\d+)-(\d+)", h.headers.get("Range") or "")
    n = int(rng[2]) - int(rng[1]) + 1 if rng else 1 << 20
    slow(b"GGUF" + b"\0" * (n - 4), 206, ("Content-Range", f"bytes 0-{n - 1}/{1 << 30}"))(h, hub)


def status(code: int) -> Callable:
    def act(h, hub: FakeHub) -> None:
        h.send_response(code)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return act


def gzip_bomb(inflated: int) -> Callable:
    """A listing sent gzipped: ``[``, ``inflated`` spaces and ``]``, about a thousandth of that on
    the wire (compressed a megabyte at a time: the bomb is never held inflated, here either)."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts, block = [pack.compress(b"[")], b" " * (1 << 20)
    for i in range(0, inflated, len(block)):
        parts.append(pack.compress(block[: inflated - i]))
    data = b"".join(parts) + pack.compress(b"]") + pack.flush()

    def act(h, hub: FakeHub) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return act


def huge_listing(entries: int) -> Callable:
    """A listing of ``entries`` files, generated as it is sent, its end marked by closing."""

    def lines() -> Iterator[bytes]:
        yield b"["
        for i in range(entries):
            sep = b"," if i else b""
            yield sep + b'{"type":"file","oid":"%040d","size":%d,"path":"dir/file-%07d.bin"}' % (i, i, i)
        yield b"]"

    def act(h, hub: FakeHub) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        batch = []
        for line in lines():
            batch.append(line)
            if len(batch) == 512:
                h.wfile.write(b"".join(batch))
                batch = []
        h.wfile.write(b"".join(batch))

    return act


def endless_next(elsewhere: str | None = None) -> Callable:
    """An empty page whose Link names a next page without end (on this server, or ``elsewhere``)."""

    def act(h, hub: FakeHub) -> None:
        n = len(hub.requests)
        base = elsewhere or hub.url
        link = f'<{base}/api/models/a/b/tree/main?cursor={n}>; rel="next"'
        h.json(b"[]", ("Link", link))

    return act


def redirect(location: str, code: int = 302) -> Callable:
    def act(h, hub: FakeHub) -> None:
        h.send_response(code)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return act


def chunked(data: bytes, repeat: int = 1) -> Callable:
    """``data`` (``repeat`` times over) with no Content-Length: its size known only as it arrives
    (HTTP/1.0, to the close)."""

    def act(h, hub: FakeHub) -> None:
        h.send_response(200)
        h.send_header("X-Repo-Commit", COMMIT)
        whole = data * repeat if len(data) * repeat < 64 << 20 else None
        h.send_header("ETag", f'"{git_hash(whole)}"' if whole is not None else '"0"')
        h.end_headers()
        for _ in range(repeat):
            for i in range(0, len(data), 1 << 16):
                h.wfile.write(data[i : i + (1 << 16)])

    return act


def raw(answer: bytes) -> Callable:
    """``answer`` as the whole exchange, status line and headers included, then the close."""

    def act(h, hub: FakeHub) -> None:
        h.wfile.write(answer)
        h.close_connection = True

    return act
