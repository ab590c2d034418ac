"""Counting a sharded 405B checkpoint from its headers: paramcount versus safetensors.safe_open.

Run: python benchmarks/bench_safetensors.py [folder]   (needs the test extras: safetensors, torch)

The checkpoint is Llama-3.1-405B as the Hub lays it out (config.json, an index, 191 shards of
at most 5 GB in bfloat16), its names and shapes from the catalog, written as SPARSE files:
real headers, then a hole as long as the tensor data (the file is truncated to its full
size). Nothing but the headers takes disk space or is ever read. Both sides must give the
exact total; the figures are best-of-N wall times, the ratio the point.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import tempfile
import time
from pathlib import Path

import paramcount
from paramcount.frontends.checkpoint import load_path
from paramcount.frontends.safetensors import folder_sets, read_set

MODEL = "meta-llama/Llama-3.1-405B"
SHARD_BYTES = 5_000_000_000  # transformers' default max_shard_size (the Hub files: 191 shards)


def write_checkpoint(folder: Path) -> tuple[int, int]:
    """Sparse shards, index and config.json; returns (parameters, shards)."""
    model = paramcount.load(MODEL)
    shards: list[list[tuple[str, tuple[int, ...]]]] = [[]]
    size = 0
    for leaf in model.tensors(checkpoint=True):
        if leaf.tied_to:
            continue
        nbytes = 2 * math.prod(int(d) for d in leaf.shape)
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append((leaf.name, tuple(int(d) for d in leaf.shape)))
        size += nbytes
    weight_map, total_size = {}, 0
    for i, tensors in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        header, at = {"__metadata__": {"format": "pt"}}, 0
        for tensor, shape in tensors:
            end = at + 2 * math.prod(shape)
            header[tensor] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, end]}
            weight_map[tensor] = name
            at = end
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)  # padded to 8 bytes, as the library writes it
        with open(folder / name, "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw)
            f.truncate(8 + len(raw) + at)  # the data: a hole
        total_size += at
    index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps(model.config))
    return model.total, len(shards)


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def ours(folder: Path) -> int:
    """The whole count: headers, quantisation and buffer split, mapping onto config.json, diff."""
    m = load_path(folder)
    assert m.checkpoint.differences == (), m.checkpoint.differences[:3]
    m.components()
    return m.total


def headers_only(folder: Path) -> int:
    sets, _ = folder_sets(folder)
    return sum(t.count for t in read_set(sets[0], str(folder)).tensors)


def baseline(folder: Path) -> int:
    """The safetensors library: open each shard, list its keys, read each shape (no data)."""
    from safetensors import safe_open

    total = 0
    for shard in sorted(folder.glob("model-*.safetensors")):
        with safe_open(str(shard), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
                total += math.prod(f.get_slice(key).get_shape())
    return total


def main() -> None:
    with tempfile.TemporaryDirectory(dir=sys.argv[1] if len(sys.argv) > 1 else None) as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        expected, shards = write_checkpoint(folder)
        written = time.perf_counter() - t
        apparent = sum(p.stat().st_size for p in folder.iterdir())
        on_disk = sum(p.stat().st_blocks * 512 for p in folder.iterdir())
        print(f"{MODEL}: {expected:,} parameters in {shards} sparse shards, written in {written:.2f} s")
        print(f"  apparent size {apparent / 1e9:,.1f} GB, on disk {on_disk / 1e6:,.1f} MB")
        baseline(folder)  # warm: torch and the library imported, files in the page cache
        a, count = best_of(lambda: ours(folder), 5)
        h, count_h = best_of(lambda: headers_only(folder), 5)
        b, count_b = best_of(lambda: baseline(folder), 5)
        assert count == count_h == count_b == expected, (count, count_h, count_b, expected)
        print(f"paramcount, full count vs config.json   {a * 1e3:8.1f} ms   exact: {count:,}")
        print(f"paramcount, headers only                {h * 1e3:8.1f} ms")
        print(f"safetensors.safe_open keys + shapes     {b * 1e3:8.1f} ms")
        print(f"ratio baseline / full count {b / a:.2f}x; baseline / headers only {b / h:.2f}x")
        assert a < 1.0, f"the full count took {a:.2f} s; the target is under one second"


if __name__ == "__main__":
    main()
