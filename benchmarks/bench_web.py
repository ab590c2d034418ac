"""Latency and load of `paramcount serve`, on loopback only, with a bounded number of requests.

Starts `python -m paramcount serve --port 0` (127.0.0.1), then measures over real HTTP:

- one user: ``--requests`` sequential POSTs each to ``/api/model`` and ``/api/memory`` (the
  bodies the page sends for a catalog model) on one kept-alive connection: median and p99;
- 50 concurrent users: ``--requests`` POSTs per endpoint spread over 50 threads, each with its
  own connection: requests a second, p99 and errors (any status but 200, or a failed read);
- one slow request: a huge print(model) text in flight while one user asks ``/api/model``: the
  fast requests' median beside the one-user median, and how the slow one ended.

Every request has a client timeout, so a run is bounded whatever the server does.

    python benchmarks/bench_web.py                  # 200 requests per figure
    python benchmarks/bench_web.py --requests 500 --model meta-llama/Llama-3.1-8B
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

HOST = "127.0.0.1"  # loopback only: the benchmark never binds or connects elsewhere
TIMEOUT = 30.0  # seconds a client waits for one answer


@contextmanager
def server():
    """A paramcount server on a free loopback port; yields the port."""
    cmd = [sys.executable, "-m", "paramcount", "serve", "--host", HOST, "--port", "0"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            found = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
            if found:
                break
        else:
            raise SystemExit("the server did not start")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
        yield int(found.group(1))
    finally:
        proc.terminate()
        proc.wait(15)


class Client:
    """One kept-alive connection; ``post`` answers (seconds, status, body bytes)."""

    def __init__(self, port: int):
        self.port = port
        self.conn = self.connect()

    def connect(self) -> http.client.HTTPConnection:
        # http.client writes the headers and the body in two sends: without TCP_NODELAY the body
        # waits on the server's delayed ACK, 40 ms a request that no browser pays
        conn = http.client.HTTPConnection(HOST, self.port, timeout=TIMEOUT)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def post(self, path: str, body: dict[str, Any]) -> tuple[float, int, int]:
        data = json.dumps(body).encode()
        start = time.perf_counter()
        try:
            self.conn.request("POST", path, data, {"content-type": "application/json"})
            r = self.conn.getresponse()
            size = len(r.read())
            return time.perf_counter() - start, r.status, size
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = self.connect()
            return time.perf_counter() - start, 0, 0


def bodies(model: str) -> dict[str, dict[str, Any]]:
    """What the page sends for a catalog model: its count, and a memory plan at 4,096 tokens."""
    source = {"kind": "catalog", "name": model}
    return {
        "/api/model": {"source": source, "lang": "en", "derive": "backbone"},
        "/api/memory": {"source": source, "mode": "inference", "scheme": "bf16", "context": 4096, "gpu": "rtx4090"},
    }


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def one_user(port: int, path: str, body: dict, n: int) -> dict[str, Any]:
    c = Client(port)
    c.post(path, body)  # warm: first-use imports and caches
    runs = [c.post(path, body) for _ in range(n)]
    times = [t for t, _, _ in runs]
    return {
        "median_ms": 1000 * statistics.median(times),
        "p99_ms": 1000 * quantile(times, 0.99),
        "errors": sum(s != 200 for _, s, _ in runs),
        "bytes": runs[-1][2],
    }


def concurrent(port: int, path: str, body: dict, n: int, users: int = 50) -> dict[str, Any]:
    per_user = max(1, n // users)

    def user(_: int) -> list[tuple[float, int, int]]:
        c = Client(port)
        return [c.post(path, body) for _ in range(per_user)]

    start = time.perf_counter()
    with ThreadPoolExecutor(users) as pool:
        runs = [r for rs in pool.map(user, range(users)) for r in rs]
    wall = time.perf_counter() - start
    times = [t for t, _, _ in runs]
    return {
        "per_second": len(runs) / wall,
        "median_ms": 1000 * statistics.median(times),
        "p99_ms": 1000 * quantile(times, 0.99),
        "errors": sum(s != 200 for _, s, _ in runs),
    }


def huge_printout(children: int = 200_000) -> str:
    return (
        "Net(\n"
        + "".join(f"(a{i}): Linear(in_features={i + 1}, out_features=3, bias=True)\n" for i in range(children))
        + ")"
    )


def slow_beside_fast(port: int, body: dict, n: int) -> dict[str, Any]:
    """One huge printout in flight while one user counts a catalog model ``n`` times."""
    slow: dict[str, Any] = {}

    def heavy() -> None:
        text = huge_printout(25_000)
        t, status, _ = Client(port).post("/api/model", {"source": {"kind": "printout", "text": text}})
        slow.update(seconds=t, status=status)

    thread = threading.Thread(target=heavy)
    thread.start()
    time.sleep(0.2)  # let the heavy request arrive first
    fast = one_user(port, "/api/model", body, n)
    thread.join(TIMEOUT + 5)
    return {"fast_median_ms": fast["median_ms"], "fast_p99_ms": fast["p99_ms"], "fast_errors": fast["errors"], **slow}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per figure (default 200)")
    parser.add_argument("--model", default="meta-llama/Llama-3.1-8B", help="catalog model the page asks about")
    args = parser.parse_args(argv)
    n = max(1, min(args.requests, 10_000))
    with server() as port:
        for path, body in bodies(args.model).items():
            one = one_user(port, path, body, n)
            many = concurrent(port, path, body, n)
            print(
                f"{path}: one user median {one['median_ms']:.1f} ms, p99 {one['p99_ms']:.1f} ms, "
                f"{one['bytes']:,} bytes, {one['errors']} errors; 50 concurrent: {many['per_second']:.0f}/s, "
                f"median {many['median_ms']:.0f} ms, p99 {many['p99_ms']:.0f} ms, {many['errors']} errors"
            )
        s = slow_beside_fast(port, bodies(args.model)["/api/model"], min(n, 100))
        print(
            f"beside a huge printout: /api/model median {s['fast_median_ms']:.1f} ms, p99 {s['fast_p99_ms']:.1f} ms, "
            f"{s['fast_errors']} errors; the printout answered {s.get('status')} after {s.get('seconds', 0):.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
