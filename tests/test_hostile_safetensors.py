"""Hostile and broken safetensors files: each fails with its own one-line message naming the
file, exit 2, reading no more than the header; plus fuzzing of the header parser."""

import itertools
import json
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends.checkpoint import load_path
from paramcount.frontends.safetensors import DTYPE_BITS, MAX_HEADER_BYTES, parse_header, read_header

from .budget import calls

F32_4 = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}


def raw_file(path: Path, header: bytes, data: bytes = b"", length: int | None = None) -> Path:
    path.write_bytes(struct.pack("<Q", len(header) if length is None else length) + header + data)
    return path


def header_file(path: Path, header, data_bytes: int) -> Path:
    return raw_file(path, json.dumps(header).encode(), b"\0" * data_bytes)


def fails(path: Path, message: str, capsys) -> None:
    with pytest.raises(ParamcountError) as e:
        load_path(path)
    assert str(path) in str(e.value) and message in str(e.value), str(e.value)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and len(err) < 1000


@pytest.mark.parametrize(
    "header, data_bytes, message",
    [
        ([1, 2], 0, "not a safetensors file: the header is not a JSON object"),
        ({"w": [1]}, 0, "tensor 'w': expected an object, got list"),
        ({"w": {"dtype": "F32", "shape": [4]}}, 16, "tensor 'w': missing data_offsets"),
        ({"w": {**F32_4, "dtype": "Q7"}}, 16, "tensor 'w': unknown dtype 'Q7'"),
        ({"w": {**F32_4, "dtype": 7}}, 16, "tensor 'w': unknown dtype '7'"),
        ({"w": {**F32_4, "shape": [-4]}}, 16, "tensor 'w': shape must be a list"),
        ({"w": {**F32_4, "shape": [4.0]}}, 16, "tensor 'w': shape must be a list"),
        ({"w": {**F32_4, "shape": [True]}}, 16, "tensor 'w': shape must be a list"),
        ({"w": {**F32_4, "shape": [1] * 65}}, 16, "at most 64 integers"),
        ({"w": {**F32_4, "data_offsets": [16, 0]}}, 16, "data_offsets end 0 before they begin 16"),
        ({"w": {**F32_4, "data_offsets": [0]}}, 16, "data_offsets must be two integers"),
        ({"w": {**F32_4, "data_offsets": [0, 12]}}, 12, "data_offsets span 12 bytes but F32 × (4,) needs 16"),
        ({"w": {**F32_4, "shape": [2**64, 2**63]}}, 16, "shape must be a list"),
        ({"w": {**F32_4, "shape": [2**60] * 4}}, 16, "needs more than 2^64 bytes"),
        ({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, 2, "is not a whole number of bytes"),
        ({"w": {**F32_4, "data_offsets": [0, 2**64]}}, 16, "data_offsets must be two integers"),
        ({"w": F32_4}, 8, "ends at byte 16 of the data, which has only 8 (truncated?)"),
        ({"w": F32_4}, 20, "4 bytes after the last tensor that no tensor accounts for"),
        (
            {"a": F32_4, "b": {**F32_4, "data_offsets": [8, 24]}},
            24,
            "tensors 'a' and 'b' overlap at byte 8",
        ),
        ({"a": F32_4, "b": {**F32_4, "data_offsets": [20, 36]}}, 36, "4 unused bytes after 'a' (a hole in the data)"),
        ({"a": {**F32_4, "data_offsets": [4, 20]}}, 20, "4 unused bytes before the first tensor"),
        ({"__metadata__": {"format": 1}, "w": F32_4}, 16, "__metadata__ must be an object of strings"),
        ({"w" * 5000: {**F32_4, "dtype": "Q7"}}, 16, "tensor 'wwwwwwwwww"),
    ],
)
def test_bad_header(tmp_path, capsys, header, data_bytes, message):
    fails(header_file(tmp_path / "model.safetensors", header, data_bytes), message, capsys)


@pytest.mark.parametrize(
    "header, message",
    [
        (b"", "not a safetensors file: the header is empty"),
        (b"   ", "not a safetensors file: the header is empty"),
        (b'{"w": ', "header is not valid JSON (line 1, column 7)"),
        (b'{"w": {}, "w": {}}', "header names 'w' twice"),
        (b'{"\xff": 1}', "header is not UTF-8 (byte 2)"),
        (b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "header nests too deeply"),
        (b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b"]}}", "header holds an unreadable number"),
    ],
)
def test_bad_header_bytes(tmp_path, capsys, header, message):
    fails(raw_file(tmp_path / "x.safetensors", header), message, capsys)


def test_shorter_than_the_length_field(tmp_path, capsys):
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"\x01\x02")
    fails(path, "2 bytes, shorter than the 8-byte header length", capsys)


def test_empty_file(tmp_path, capsys):
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"")
    fails(path, "0 bytes, shorter than the 8-byte header length", capsys)


def test_header_length_past_end_of_file(tmp_path, capsys):
    path = raw_file(tmp_path / "x.safetensors", b"{}", length=1000)
    fails(path, "header length 1,000 runs past the end of the file (10 bytes)", capsys)


def test_absurd_header_length_is_refused_before_reading(tmp_path, capsys):
    path = raw_file(tmp_path / "x.safetensors", b"", length=2**63)
    with open(path, "r+b") as f:
        f.truncate(1 << 30)  # sparse: a 1 GiB file that must not be read
    with pytest.raises(ParamcountError), calls(5_000):  # refused from the 8-byte length alone
        read_header(path)
    fails(path, f"header length {2**63:,} is absurd (the format allows at most {MAX_HEADER_BYTES:,})", capsys)


def test_index_pointing_outside_the_folder(tmp_path, capsys):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "../../etc/passwd.safetensors"}}))
    fails(index, "points outside the folder", capsys)


def test_index_naming_no_file(tmp_path, capsys):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": ["a"]}}))
    fails(index, "weight_map names a shard", capsys)


def test_index_not_json(tmp_path, capsys):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text("{nope")
    fails(index, "not valid JSON", capsys)


def test_index_without_weight_map(tmp_path, capsys):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text("{}")
    fails(index, "weight_map: missing or empty", capsys)


def test_same_tensor_in_two_shards(tmp_path, capsys):
    for name in ("a.safetensors", "b.safetensors"):
        header_file(tmp_path / name, {"w": F32_4}, 16)
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "a.safetensors", "v": "b.safetensors"}}))
    fails(index, "tensor 'w' is stored twice: in a.safetensors and b.safetensors", capsys)


def test_tensor_and_module_share_a_name(tmp_path, capsys):
    header = {"a": F32_4, "a.b": {**F32_4, "data_offsets": [16, 32]}}
    fails(header_file(tmp_path / "x.safetensors", header, 32), "'a.b': a tensor and a module share a name", capsys)


def test_folder_of_a_broken_file_names_the_file(tmp_path, capsys):
    raw_file(tmp_path / "model.safetensors", b"[]")
    with pytest.raises(ParamcountError, match=r"model\.safetensors: not a safetensors file"):
        load_path(tmp_path)


# --- fuzzing: whatever the bytes, a result or a ParamcountError, quickly -------------------------


def _parse(raw: bytes, data_bytes: int | None):
    try:
        meta, tensors = parse_header(raw, data_bytes, "fuzz")
    except ParamcountError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz: ")
        return None
    assert all(isinstance(v, str) for v in meta.values())
    return tensors


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.none() | st.integers(0, 10_000))
def test_fuzz_arbitrary_bytes(raw, data_bytes):
    _parse(raw, data_bytes)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
entries = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from([*DTYPE_BITS, "Q7", ""]) | json_values,
        "shape": st.lists(st.integers(-2, 9), max_size=4) | json_values,
        "data_offsets": st.lists(st.integers(-2, 300), min_size=2, max_size=2) | json_values,
    }
)
headers = st.dictionaries(st.text(min_size=1, max_size=12), entries | json_values, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(headers, st.integers(0, 400))
def test_fuzz_structured_headers(header, data_bytes):
    tensors = _parse(json.dumps(header).encode(), data_bytes)
    if tensors is not None:  # accepted: then the tensors tile the data exactly
        spans = sorted((t.begin, t.end) for t in tensors)
        assert sum(t.nbytes for t in tensors) == data_bytes
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 2**64 - 1))
def test_fuzz_files(body, length):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.safetensors"
        path.write_bytes(struct.pack("<Q", length) + body)
        try:
            read_header(path)
        except ParamcountError as e:
            assert str(path) in str(e) and "\n" not in str(e)


def test_a_pipe_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(ParamcountError, match=r"model\.safetensors: is a FIFO \(named pipe\), not a regular file"):
        load_path(fifo)
