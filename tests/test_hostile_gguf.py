"""Hostile and broken GGUF files: one line naming the file and the problem, in bounded time and memory."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("gguf")

from paramcount.errors import ParamcountError
from paramcount.gguf import reader as pg

from .budget import calls

CALLS = 20_000  # calls to read one small hostile file: a loop over a length it states would pass it at once

U8, U32, STR, ARR, U64 = 0, 4, 8, 9, 10
F32, Q4_0 = 0, 2


def string(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return string(key) + struct.pack("<I", vtype) + payload


def tensor(name: str, ne: list[int], ggml_type: int = F32, offset: int = 0) -> bytes:
    dims = b"".join(struct.pack("<Q", d) for d in ne)
    return string(name) + struct.pack("<I", len(ne)) + dims + struct.pack("<IQ", ggml_type, offset)


ARCH = kv("general.architecture", STR, string("llama"))


def build(
    tensors=((("a.weight", [8]), F32, 0),),
    kvs=(ARCH,),
    version=3,
    magic=b"GGUF",
    counts=None,
    data: int | None = None,
) -> bytes:
    infos = [tensor(name, ne, t, off) for (name, ne), t, off in tensors]
    n_tensors, n_kv = counts or (len(infos), len(kvs))
    head = magic + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(kvs) + b"".join(infos)
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * (32 if data is None else data)


def fails(tmp_path, blob: bytes, message: str, name: str = "bad.gguf") -> str:
    """Reading ``blob`` fails with one line naming the file; in bounded time and memory."""
    path = tmp_path / name
    path.write_bytes(blob)
    tracemalloc.start()
    try:
        with pytest.raises(ParamcountError) as e, calls(CALLS):
            pg.read(path)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    text = str(e.value)
    assert text.startswith(f"{path}: ") and "\n" not in text
    assert message in text, text
    assert peak < 16 << 20
    return text


def test_the_baseline_file_is_fine(tmp_path):
    path = tmp_path / "ok.gguf"
    path.write_bytes(build())
    assert pg.read(path).total == 8


BIG = 1 << 62


@pytest.mark.parametrize(
    "blob, message",
    [
        (b"", "empty file"),
        (b"GGML" + b"\0" * 60, "bad magic b'GGML'"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 60, "not a GGUF file"),
        (build(version=1), "GGUF version 1 is not supported"),
        (build(version=99), "GGUF version 99 is not supported"),
        (build(counts=(BIG, 1)), "header claims 4,611,686,018,427,387,904 tensors"),
        (build(counts=(1, BIG)), "metadata entries; the"),
        (build(counts=(1, 2), data=0).rstrip(b"\0"), "truncated"),
        (build(kvs=(struct.pack("<Q", BIG) + b"general.name",)), "metadata key 0 is 4,611,686,018,427,387,904 bytes"),
        (build(kvs=(kv("general.name", STR, struct.pack("<Q", BIG)),)), "truncated: general.name needs"),
        (build(kvs=(kv("tokenizer.ggml.scores", ARR, struct.pack("<IQ", U32, BIG)),)), "cannot fit"),
        (build(kvs=(kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, BIG)),)), "cannot fit"),
        (build(kvs=(kv("x", ARR, struct.pack("<IQ", ARR, 1) * 5 + struct.pack("<IQ", U8, 0)),)), "nested more"),
        (build(kvs=(kv("x", 13, b"\0" * 8),)), "metadata x: unknown value type 13"),
        (build(kvs=(kv("x", ARR, struct.pack("<IQ", 77, 1)),)), "unknown array item type 77"),
        (build(kvs=(ARCH, kv("general.alignment", U32, struct.pack("<I", 3)))), "general.alignment 3"),
        (build(kvs=(ARCH, kv("general.alignment", U32, struct.pack("<I", 0)))), "general.alignment 0"),
        (build(tensors=((("a.weight", [8] * 5), F32, 0),)), "tensor a.weight: 5 dimensions"),
        (build(tensors=((("a.weight", [1 << 40] * 3), F32, 0),)), "dimensions [1099511627776"),
        (build(tensors=((("a.weight", [8]), 4, 0),)), "tensor a.weight: ggml type 4 (Q4_2, removed from ggml)"),
        (build(tensors=((("a.weight", [8]), 999, 0),)), "unknown ggml type 999"),
        (build(tensors=((("a.weight", [33]), Q4_0, 0),)), "row length 33 is not a multiple of Q4_0's block of 32"),
        (build(tensors=((("a.weight", [8]), F32, 4),), data=64), "data offset 4 is not aligned to 32"),
        (build(tensors=((("a.weight", [16]), F32, 0), (("b.weight", [8]), F32, 32)), data=96), "overlap"),
        (build(tensors=((("a.weight", [8]), F32, 0), (("a.weight", [8]), F32, 32)), data=64), "appears twice"),
        (build(tensors=((("a.weight", [1024]), F32, 0),), data=100), "truncated: tensor a.weight's data ends"),
        (build(tensors=((("a.weight", [BIG // 8, 4]), F32, 0),)), "truncated: tensor a.weight's data ends"),
        (build(tensors=((("x" * 70000, [8]), F32, 0),)), "the name of tensor 0 is 70,000 bytes long"),
    ],
)
def test_hostile_file(tmp_path, blob, message):
    fails(tmp_path, blob, message)


def test_every_truncation_of_the_header_is_caught(tmp_path):
    blob = build(kvs=(ARCH, kv("llama.block_count", U32, struct.pack("<I", 2))))
    header = len(blob) - 32
    for cut in range(1, header):
        try:
            pg.parse(blob[:cut], "cut.gguf")
        except ParamcountError as e:
            assert str(e).startswith("cut.gguf: ") and (
                "truncated" in str(e) or "magic" in str(e) or "claims" in str(e)
            )
        else:
            pytest.fail(f"a file cut at byte {cut} was accepted")


def test_a_non_gguf_name_with_bad_magic_is_not_ours(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"GGML" + b"\0" * 60)
    assert pg.read(path) is None


def test_undecodable_names_are_kept_readable(tmp_path):
    path = tmp_path / "names.gguf"
    path.write_bytes(build(tensors=(((b"bad\xff.weight".decode("latin-1"), [8]), F32, 0),)))
    assert pg.read(path).total == 8


@settings(max_examples=300, deadline=None)
@given(
    cut=st.integers(0, 400),
    flips=st.lists(st.tuples(st.integers(0, 399), st.integers(0, 255)), max_size=6),
)
def test_fuzz_mutated_headers_fail_cleanly(cut, flips):
    blob = bytearray(
        build(
            tensors=((("a.weight", [32, 2]), Q4_0, 0), (("b.bias", [4]), F32, 64)),
            kvs=(
                ARCH,
                kv("llama.block_count", U32, struct.pack("<I", 2)),
                kv("t", ARR, struct.pack("<IQ", U8, 3) + b"abc"),
            ),
            data=96,
        )
    )
    for at, value in flips:
        if at < len(blob):
            blob[at] = value
    try:
        with calls(CALLS):
            info = pg.parse(bytes(blob[: len(blob) - cut] if cut else blob), "fuzz.gguf")
    except ParamcountError as e:
        assert str(e).startswith("fuzz.gguf: ") and "\n" not in str(e)
    else:
        assert info.nbytes <= len(blob)


def test_cli_hostile_gguf_is_one_line_exit_2(tmp_path, capsys):
    from paramcount.cli import main

    path = tmp_path / "model.gguf"
    path.write_bytes(build(tensors=((("a.weight", [1024]), F32, 0),), data=100))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: truncated: tensor a.weight's data ends" in err


# ---- the work a header may ask for: bounded by counts, never by time -------------------------------


def sparse(tmp_path, head: bytes, size: int) -> str:
    """A file of ``size`` bytes that starts with ``head``; the rest a hole that reads as zeros."""
    path = tmp_path / "big.gguf"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return str(path)


def reads(monkeypatch) -> dict[str, int]:
    """How many keys and strings the reader reads, and how many array items it walks."""
    seen = {"strings": 0, "walked": 0}
    string, walk = pg._Reader.string, pg._Reader.walk

    def counted_string(self, *args, **kw):
        seen["strings"] += 1
        return string(self, *args, **kw)

    def counted_walk(self, n, key):
        seen["walked"] += n
        return walk(self, n, key)

    monkeypatch.setattr(pg._Reader, "string", counted_string)
    monkeypatch.setattr(pg._Reader, "walk", counted_walk)
    return seen


@pytest.mark.parametrize("entry", [kv("k", ARR, struct.pack("<IQ", U32, 0)), kv("k", U8, b"\0")])
def test_millions_of_metadata_entries_are_refused_before_any_is_read(tmp_path, monkeypatch, entry):
    """100 MB of empty arrays, or 4M one-byte keys: the count says it, and nothing is read."""
    n = 100 * 2**20 // len(entry)
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, n) + entry * 1000
    seen = reads(monkeypatch)
    with pytest.raises(ParamcountError, match=f"header holds {n:,} metadata entries; at most 65,536 are read"):
        pg.read_header(sparse(tmp_path, head, 100 * 2**20))
    assert seen == {"strings": 0, "walked": 0}


def test_metadata_entries_up_to_the_bound_are_read(monkeypatch):
    monkeypatch.setattr(pg, "MAX_METADATA", 10)
    ten = [kv(f"k{i}", ARR, struct.pack("<IQ", U32, 0)) for i in range(10)]
    assert len(pg.parse(build(kvs=(ARCH, *ten[1:])), "ok.gguf").metadata) == 10
    with pytest.raises(ParamcountError, match="header holds 11 metadata entries; at most 10 are read"):
        pg.parse(build(kvs=(ARCH, *ten)), "eleven.gguf")


def test_array_strings_are_walked_up_to_a_bound_in_all(monkeypatch):
    """Strings (a vocabulary, merges) must be walked one by one: at most MAX_WALKED in all the
    arrays, counted before the walk."""
    monkeypatch.setattr(pg, "MAX_WALKED", 100)
    seen = reads(monkeypatch)
    strings = lambda key, n: kv(key, ARR, struct.pack("<IQ", STR, n) + string("ab") * n)  # noqa: E731
    info = pg.parse(build(kvs=(ARCH, strings("tokenizer.ggml.tokens", 60), strings("t.merges", 40))), "ok.gguf")
    assert info.metadata["t.merges"] == ("array", STR, 40) and seen["walked"] == 100
    with pytest.raises(ParamcountError, match=r"t\.merges: the arrays hold more than 100 items read one by one"):
        pg.parse(build(kvs=(ARCH, strings("tokenizer.ggml.tokens", 60), strings("t.merges", 41))), "over.gguf")
    assert seen["walked"] == 201  # 100, then 60 and the 41 refused before their walk


def test_a_vocabulary_past_the_bound_is_refused_before_its_walk(tmp_path, monkeypatch):
    n = pg.MAX_WALKED + 1
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, n))
    seen = reads(monkeypatch)
    with pytest.raises(ParamcountError, match=f"more than {pg.MAX_WALKED:,} items read one by one"):
        pg.read_header(sparse(tmp_path, head, len(head) + 8 * n))  # n empty strings
    assert seen == {"strings": 1, "walked": n}  # the key's name; the items counted, none walked


def test_arrays_of_numbers_are_skipped_by_seeking(tmp_path, monkeypatch):
    """A 40 MB array of token scores is passed over, not read: no item walked, no memory."""
    n = 10 * 2**20
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv("tokenizer.ggml.scores", ARR, struct.pack("<IQ", U32, n))
    seen = reads(monkeypatch)
    tracemalloc.start()
    try:
        info = pg.read_header(sparse(tmp_path, head, -(-(len(head) + 4 * n) // 32) * 32))
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert info.metadata["tokenizer.ggml.scores"] == ("array", U32, n)
    assert seen["walked"] == 0 and peak < 1 << 20


def test_per_layer_numbers_count_toward_the_bound(monkeypatch):
    monkeypatch.setattr(pg, "MAX_WALKED", 10)
    per_layer = lambda i, n: kv(f"a{i}.block_count", ARR, struct.pack("<IQ", U32, n) + b"\1\0\0\0" * n)  # noqa: E731
    assert (
        pg.parse(build(kvs=(ARCH, per_layer(0, 4), per_layer(1, 6))), "ok.gguf").metadata["a1.block_count"] == [1] * 6
    )
    with pytest.raises(ParamcountError, match=r"a2\.block_count: the arrays hold more than 10 items"):
        pg.parse(build(kvs=(ARCH, per_layer(0, 4), per_layer(1, 6), per_layer(2, 1))), "over.gguf")


def test_kept_names_and_strings_are_bounded_in_all(monkeypatch):
    """65,536 keys of 64 KB each would keep 4 GiB: the bytes kept are counted."""
    monkeypatch.setattr(pg, "MAX_KEPT_BYTES", 1000)
    keys = [kv(f"{i:03d}" + "k" * 97, U8, b"\0") for i in range(10)]
    assert len(pg.parse(build(kvs=(kv("x", U8, b"\0"), *keys[:9])), "ok.gguf").metadata) == 10
    with pytest.raises(ParamcountError, match="metadata key 10: the names and strings kept pass 1,000 bytes"):
        pg.parse(build(kvs=(kv("x", U8, b"\0"), *keys)), "over.gguf")
