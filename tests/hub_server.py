"""A local HTTP server that answers as the Hugging Face Hub does, for huggingface_hub pointed at it.

It serves ``/api/models/{repo}/tree/{revision}`` (the file list with sizes) and
``/{repo}/resolve/{revision}/{path}`` (HEAD and GET, with ``Range``), answers 404 with the
Hub's ``X-Error-Code`` header, and records every request so a test can count them. Files are
paths on disk (sparse GGUF files cost nothing). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class FakeHub:
    def __init__(self):
        self.repos: dict[str, dict[str, Path]] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Range
        self.ranges = True  # False: ignore Range and send whole files (HTTP 200)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
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
            if tree:
                return self.tree(tree[1])
            resolve = re.match(r"^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$", path)
            if resolve:
                return self.file(resolve[1], resolve[2], body)
            self.error(404, "RepoNotFound")

        def error(self, code: int, kind: str) -> None:
            self.send_response(code)
            self.send_header("X-Error-Code", kind)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def tree(self, repo: str) -> None:
            if repo not in hub.repos:
                return self.error(404, "RepoNotFound")
            items = [
                {"type": "file", "oid": "0" * 40, "size": p.stat().st_size, "path": name}
                for name, p in sorted(hub.repos[repo].items())
            ]
            data = json.dumps(items).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
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
            start, end = (int(rng[1]), min(int(rng[2]), size - 1)) if rng and hub.ranges else (0, size - 1)
            self.send_response(206 if rng and hub.ranges else 200)
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("ETag", '"0"')
            if rng and hub.ranges:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if body:
                self.send(path, start, end)

        def send(self, path: Path, start: int, end: int) -> None:
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    left = end - start + 1
                    while left > 0:
                        chunk = f.read(min(left, 1 << 16))
                        self.wfile.write(chunk)
                        left -= len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client read what it asked for and closed

    return Handler
