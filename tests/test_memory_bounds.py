"""Memory proportional to what is kept, not to the file: GGUF metadata arrays nothing reads are
walked, not materialised; a safetensors header keeps each tensor compactly and stops at
MAX_TENSORS before building more."""

from __future__ import annotations

import json
import struct
import tracemalloc

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import safetensors
from paramcount.gguf import reader as gguf

U8, U32, STR, ARR = 0, 4, 8, 9


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _string(key) + struct.pack("<I", vtype) + payload


def _u8s(n: int) -> bytes:
    return struct.pack("<IQ", U8, n) + bytes(n)


def _nested_gguf(path, outer: int) -> int:
    """Arrays of 1,000 arrays of 1,000 bytes (8.7 bytes traced per file byte before, 0.002 now), a string
    array, and the per-layer head counts the planner does read."""
    mid = struct.pack("<IQ", ARR, 1000) + _u8s(1000) * 1000
    kvs = [
        _kv("general.architecture", STR, _string("llama")),
        _kv("junk.nested", ARR, struct.pack("<IQ", ARR, outer) + mid * outer),
        _kv("junk.strings", ARR, struct.pack("<IQ", STR, 1000) + _string("") * 1000),
        _kv("llama.attention.head_count_kv", ARR, struct.pack("<IQ", U32, 3) + struct.pack("<3I", 8, 8, 4)),
    ]
    info = _string("token_embd.weight") + struct.pack("<IQIQ", 1, 4, 0, 0)
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs)) + b"".join(kvs) + info
    head += b"\0" * (-len(head) % 32)
    path.write_bytes(head + bytes(32))
    return len(head)


def _peak(fn, *args):
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_gguf_metadata_arrays_nothing_reads_are_not_materialised(tmp_path):
    path = tmp_path / "nested.gguf"
    size = _nested_gguf(path, outer=4)  # 4 MB of nested arrays
    info, peak = _peak(gguf.read_header, path)
    assert peak < size // 8, f"{peak:,} bytes traced for a {size:,}-byte header"
    assert info.metadata["junk.nested"] == ("array", ARR, 4)
    assert info.metadata["junk.strings"] == ("array", STR, 1000)
    assert info.metadata["llama.attention.head_count_kv"] == [8, 8, 4]  # read by the KV cache planner


def _header(path, n: int) -> int:
    header = {
        f"model.layers.{i // 8}.mlp.w{i % 8}.weight": {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]}
        for i in range(n)
    }
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(8 * n))
    return len(raw)


def test_safetensors_header_is_kept_compactly(tmp_path):
    path = tmp_path / "many.safetensors"
    size = _header(path, 20_000)
    header, peak = _peak(safetensors.read_header, path)
    assert len(header.tensors) == 20_000
    # measured: 7.7 bytes traced per header byte at the peak (text, parse, kept); 9.3 before
    assert peak < 8.5 * size, f"{peak / size:.1f} bytes traced per header byte"


def test_safetensors_past_max_tensors_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(safetensors, "MAX_TENSORS", 1000)
    path = tmp_path / "many.safetensors"
    _header(path, 1001)
    with pytest.raises(ParamcountError, match="more than 1,000 tensors"):
        safetensors.read_header(path)


def test_shards_past_max_tensors_are_refused_before_the_rest_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(safetensors, "MAX_TENSORS", 1000)
    for i in (1, 2, 3):
        _header(tmp_path / f"model-{i:05d}-of-00003.safetensors", 600)
    sets, _ = safetensors.folder_sets(tmp_path)
    with pytest.raises(ParamcountError, match="the shards hold more than 1,000 tensors"):
        safetensors.read_set(sets[0], str(tmp_path))


def test_gguf_past_max_tensors_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(gguf, "MAX_TENSORS", 2)
    infos = b"".join(_string(f"t{i}.weight") + struct.pack("<IQIQ", 1, 4, 0, 32 * i) for i in range(3))
    head = b"GGUF" + struct.pack("<IQQ", 3, 3, 1) + _kv("general.architecture", STR, _string("llama")) + infos
    path = tmp_path / "three.gguf"
    path.write_bytes(head + b"\0" * (-len(head) % 32) + bytes(96))
    with pytest.raises(ParamcountError, match="header holds 3 tensors; at most 2 are read"):
        gguf.read_header(path)
