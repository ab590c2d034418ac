"""The GGUF reader on hostile headers (issue 25 item 4): CPU time and the answer for each.

Each header is built in memory and parsed from bytes (what the web page's upload parses; a file
is memory-mapped the same way). Before the bounds, the first two took 17 s and 12 s of CPU.

    python benchmarks/bench_gguf_header.py
"""

from __future__ import annotations

import struct
import time

from paramcount.errors import ParamcountError
from paramcount.gguf import reader as pg

U8, U32, STR, ARR = 0, 4, 8, 9


def string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return string(key) + struct.pack("<I", vtype) + payload


def header(entries: list[bytes], claimed: int | None = None) -> bytes:
    n = len(entries) if claimed is None else claimed
    return b"GGUF" + struct.pack("<IQQ", 3, 0, n) + b"".join(entries)


def strings(n: int) -> bytes:
    return kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, n) + b"\0" * (8 * n))


def per_layer(i: int) -> bytes:
    return kv(f"a{i}.block_count", ARR, struct.pack("<IQ", U32, 1024) + b"\0" * 4096)


def cases() -> dict[str, bytes]:
    empty = kv("k", ARR, struct.pack("<IQ", U32, 0))
    return {
        "100 MB of empty metadata arrays": header([empty] * (100 * 2**20 // len(empty))),
        "4M one-byte metadata keys": header([kv("k", U8, b"\0")] * (4 << 20)),
        f"{pg.MAX_WALKED:,} empty strings (at the bound)": header([strings(pg.MAX_WALKED)]),
        f"{pg.MAX_WALKED + 1:,} empty strings": header([strings(pg.MAX_WALKED + 1)]),
        "4,097 per-layer arrays of 1,024 numbers": header([per_layer(i) for i in range(4097)]),
        "1,024 keys of 64 KB (65,536 would keep 4 GiB)": header([kv("k" * 65535, U8, b"\0")] * 1024),
    }


def main() -> None:
    for name, blob in cases().items():
        start = time.process_time()
        try:
            pg.parse(blob, "x.gguf")
            said = "read"
        except ParamcountError as e:
            said = str(e)[len("x.gguf: ") :][:90]
        print(f"{name:45} {time.process_time() - start:6.3f} s CPU  {said}")


if __name__ == "__main__":
    main()
