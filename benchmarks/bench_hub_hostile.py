"""The Hub client against the hostile server at the sizes issue 32 found them (item 3, 4, 6):
each case runs the command line in a child process, and prints its exit code, its one line,
its wall time, the child's peak RSS, the requests the server saw and the files over 16 MB left
in the HF cache.

Run: python benchmarks/bench_hub_hostile.py   (the hub and test extras)

The test suite runs the same behaviours at small sizes and a short deadline
(tests/test_hub_hostile.py); this is the full-size corpus with the default deadline (7 s):
a 1-byte/s body, a 1 GB gzip bomb, a million-file listing, a 2 GB config.json, 2,999 shards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import hub_server as hs  # noqa: E402
from tests.hub_server import FakeHub  # noqa: E402

GGUF, SAFE = "tiny-org/Tiny-GGUF", "tiny-org/tiny-llama"


def cases(tmp: Path) -> list[tuple[str, str, object]]:
    """(name, model, how the server and the other one are set up) for each case."""
    huge = tmp / "config.json"
    with open(huge, "wb") as f:
        f.truncate(2 << 30)  # 2 GB, sparse
    many = {f"Big-Q8_0-{i:05d}-of-02999.gguf": tmp / "shard.gguf" for i in range(1, 3000)}

    def hostile(where, act):
        return lambda s, o: s.hostile.update({where: act(s, o)})

    return [
        ("1 byte/s range body", f"{GGUF}:Q8_0", hostile("resolve", lambda s, o: hs.slow_range)),
        ("1 byte/s tree listing", f"{GGUF}:Q8_0", hostile("tree", lambda s, o: hs.slow(b"[" + b" " * 100 + b"]"))),
        ("no answer", f"{GGUF}:Q8_0", hostile("*", lambda s, o: hs.silent)),
        ("endless headers", f"{GGUF}:Q8_0", hostile("*", lambda s, o: hs.endless_headers)),
        ("HTTP 500 always", SAFE, hostile("*", lambda s, o: hs.status(500))),
        ("gzip listing, 1 GB inflated", f"{GGUF}:Q8_0", hostile("tree", lambda s, o: hs.gzip_bomb(1 << 30))),
        ("1M-file listing", f"{GGUF}:Q8_0", hostile("tree", lambda s, o: hs.huge_listing(1_000_000))),
        ("2 GB config.json, Content-Length", SAFE, lambda s, o: s.repos.update({SAFE: {"config.json": huge}})),
        ("2 GB config.json, no length", SAFE, hostile("resolve", lambda s, o: hs.chunked(b" " * (1 << 20), 2048))),
        ("2,999 GGUF shards", f"{GGUF}:Q8_0", lambda s, o: s.repos.update({GGUF: many})),
        ("endless next pages", f"{GGUF}:Q8_0", hostile("tree", lambda s, o: hs.endless_next())),
        ("next page on another port", f"{GGUF}:Q8_0", hostile("tree", lambda s, o: hs.endless_next(o.url))),
        ("redirect to another port", SAFE, hostile("resolve", lambda s, o: hs.redirect(o.url + "/x"))),
        (
            "redirect to localhost",
            SAFE,
            hostile("resolve", lambda s, o: hs.redirect(s.url.replace("127.0.0.1", "localhost"))),
        ),
        ("listed size 2^70", f"{GGUF}:Q8_0", lambda s, o: s.sizes.update({"Tiny-Q8_0.gguf": 2**70})),
    ]


def run(model: str, env: dict[str, str], tmp: Path) -> tuple[int, str, float, int]:
    """Exit code, stderr, wall seconds and peak RSS (KiB) of one command in a child."""
    with open(tmp / "out", "wb") as out, open(tmp / "err", "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "paramcount", model], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    return os.waitstatus_to_exitcode(status), (tmp / "err").read_text().strip(), wall, usage.ru_maxrss


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    with open(tmp / "model.gguf", "wb") as f:
        f.truncate(1 << 30)  # listed as 1 GB: the first range asked for is a whole MiB
    (tmp / "shard.gguf").write_bytes(b"GGUF")
    hs.TICK = 1.0  # a byte a second, as the probe sent them
    for i, (name, model, setup) in enumerate(cases(tmp)):
        server, other = FakeHub(), FakeHub()
        server.repos = {GGUF: {"Tiny-Q8_0.gguf": tmp / "model.gguf"}, SAFE: {}}
        setup(server, other)
        cache = tmp / f"cache-{i}"
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}
        code, err, wall, rss = run(model, env, tmp)
        over = [p for p in cache.rglob("*") if p.is_file() and p.stat().st_size > 16 << 20] if cache.exists() else []
        requests = len(server.requests) + len(other.requests)
        server.close()
        other.close()
        row = {"case": name, "exit": code, "seconds": round(wall, 2), "peak_rss_mib": round(rss / 1024)}
        print(json.dumps({**row, "requests": requests, "cache_over_16mb": len(over), "stderr": err}), flush=True)


if __name__ == "__main__":
    main()
