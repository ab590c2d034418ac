"""safetensors files read by their headers alone: never a byte of tensor data.

A file is an 8-byte little-endian header length N, N bytes of JSON, then the data. The JSON
maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the
data) plus an optional ``"__metadata__"`` of strings. We parse it ourselves, with hard bounds,
and hold it to the same rules the safetensors library enforces when it loads a file: offsets
match dtype × shape, tensors neither overlap nor leave holes, and they cover the data exactly.
A sharded checkpoint is a ``*.safetensors.index.json`` whose ``weight_map`` names the shards.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..files import open_regular, read_regular
from .configfile import loads, read_json

MAX_HEADER_BYTES = 100_000_000  # the safetensors library refuses larger headers too
MAX_RANK = 64  # real tensors have a handful of dimensions
MAX_INDEX_BYTES = 64 << 20  # an index of ~100k tensors is a few MB
MAX_TENSORS = 1 << 17  # 131,072 per checkpoint, as many as ir.MAX_LISTED: a count reads each by name

# Bits per element of every dtype the format defines (safetensors 0.8).
DTYPE_BITS = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


@dataclass(frozen=True, slots=True)
class Stored:
    """One tensor as a file holds it: dtype, shape and byte range within the data."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    file: str = ""

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass(frozen=True)
class Header:
    """A parsed header: the tensors of one file and its sizes."""

    file: str
    size: int  # bytes of the whole file
    header_bytes: int  # the 8-byte length plus the JSON
    tensors: tuple[Stored, ...]
    metadata: Mapping[str, str] = field(default_factory=dict)


def short(name: str, limit: int = 80) -> str:
    """A tensor name fit for a one-line message, however long a hostile file made it."""
    return repr(name) if len(name) <= limit else repr(name[:limit]) + "…"


def _fail(source: str, message: str) -> ParamcountError:
    return ParamcountError(message, source=source)


class _Info(tuple):
    """A tensor's entry as parsed: (dtype, shape, data_offsets). A header of a million tensors
    keeps a million of these while it is read, so not a dict of three keys each."""

    __slots__ = ()


_ENTRY_KEYS = ("data_offsets", "dtype", "shape")


def _objects(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Info:
    """json's object hook for a header: tensor entries become compact ``_Info``; a name given
    twice raises."""
    if len(pairs) == 3 and tuple(sorted(k for k, _ in pairs)) == _ENTRY_KEYS:
        info = dict(pairs)
        if isinstance(info["dtype"], str) and isinstance(info["shape"], list):  # not tensors so named
            return _Info((info["dtype"], info["shape"], info["data_offsets"]))
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


class _Duplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _decode(raw: bytes, source: str) -> dict[str, Any]:
    if not raw.lstrip(b" ").startswith(b"{"):
        what = "empty" if not raw.strip() else "not a JSON object"
        raise _fail(source, f"not a safetensors file: the header is {what}")
    if raw.count(b'"data_offsets"') > MAX_TENSORS:  # a key: inside a JSON string a quote is escaped
        raise _fail(source, f"header holds more than {MAX_TENSORS:,} tensors; at most that many are read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(source, f"header is not UTF-8 (byte {e.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_objects)
    except _Duplicate as e:
        raise _fail(source, f"header names {short(e.key)} twice") from None
    except json.JSONDecodeError as e:
        raise _fail(source, f"header is not valid JSON (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise _fail(source, "header nests too deeply to be a safetensors header") from None
    except ValueError as e:  # an integer with thousands of digits
        raise _fail(source, f"header holds an unreadable number ({str(e).split(';')[0]})") from None
    if not isinstance(data, dict):
        raise _fail(source, f"header is a JSON {type(data).__name__}, not an object")
    return data


MAX_INT = 2**64 - 1  # the format stores sizes and offsets as u64


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


def tensor_entry(name: str, info: Any, source: str, file: str) -> Stored:
    where = f"tensor {short(name)}"
    if isinstance(info, _Info):
        dtype, shape, offsets = info
    elif not isinstance(info, dict):
        raise _fail(source, f"{where}: expected an object, got {type(info).__name__}")
    else:
        missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
        if missing:
            raise _fail(source, f"{where}: missing {', '.join(missing)}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise _fail(source, f"{where}: unknown dtype {short(str(dtype), 20)}")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_int(d) for d in shape):
        raise _fail(source, f"{where}: shape must be a list of at most {MAX_RANK} integers from 0 to 2^64-1")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_int(o) for o in offsets)):
        raise _fail(source, f"{where}: data_offsets must be two integers from 0 to 2^64-1")
    begin, end = offsets
    if end < begin:
        raise _fail(source, f"{where}: data_offsets end {end:,} before they begin {begin:,}")
    bits = math.prod(shape) * DTYPE_BITS[dtype]
    if bits > 8 * MAX_INT:  # the product of 64 huge dimensions: say so without printing it
        raise _fail(source, f"{where}: {dtype} × shape of rank {len(shape)} needs more than 2^64 bytes")
    if bits % 8:
        raise _fail(source, f"{where}: {dtype} × {tuple(shape)} is not a whole number of bytes")
    if end - begin != bits // 8:
        raise _fail(
            source, f"{where}: data_offsets span {end - begin:,} bytes but {dtype} × {tuple(shape)} needs {bits // 8:,}"
        )
    return Stored(name, dtype, tuple(shape), begin, end, file)


def _metadata(value: Any, source: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _fail(source, "__metadata__ must be an object of strings")
    return value


def check_layout(tensors: Iterable[Stored], data_bytes: int | None, source: str) -> None:
    """Tensors tile the data exactly: no overlap, no hole, nothing past the end or after the last."""
    at, last = 0, None
    for t in sorted(tensors, key=lambda t: (t.begin, t.end)):
        if t.begin < at:
            raise _fail(source, f"tensors {short(last.name)} and {short(t.name)} overlap at byte {t.begin:,}")
        if t.begin > at:
            after = f"after {short(last.name)}" if last else "before the first tensor"
            raise _fail(source, f"{t.begin - at:,} unused bytes {after} (a hole in the data)")
        at, last = t.end, t
    if data_bytes is None:
        return
    if at > data_bytes:
        ends = f"tensor {short(last.name)} ends at byte {at:,} of the data"
        raise _fail(source, f"{ends}, which has only {data_bytes:,} (truncated?)")
    if at < data_bytes:
        raise _fail(source, f"{data_bytes - at:,} bytes after the last tensor that no tensor accounts for")


def parse_header(
    raw: bytes, data_bytes: int | None, source: str, file: str = ""
) -> tuple[dict[str, str], list[Stored]]:
    """Metadata and tensors of a header's JSON bytes; ``data_bytes`` is the data's length if known."""
    data = _decode(raw, source)
    meta = _metadata(data.pop("__metadata__"), source) if "__metadata__" in data else {}
    tensors = [tensor_entry(name, info, source, file) for name, info in data.items()]
    check_layout(tensors, data_bytes, source)
    return meta, tensors


def read_header(path: str | Path) -> Header:
    """The header of one .safetensors file, reading 8 + N bytes and nothing more."""
    source = str(path)
    try:
        with open_regular(path, source) as f:  # a pipe or device would block or never end
            size = os.fstat(f.fileno()).st_size
            if size < 8:
                raise _fail(source, f"not a safetensors file: {size} bytes, shorter than the 8-byte header length")
            n = int.from_bytes(f.read(8), "little")
            if n > MAX_HEADER_BYTES:
                raise _fail(source, f"header length {n:,} is absurd (the format allows at most {MAX_HEADER_BYTES:,})")
            if n > size - 8:
                raise _fail(source, f"header length {n:,} runs past the end of the file ({size:,} bytes)")
            raw = f.read(n)
    except FileNotFoundError:
        raise _fail(source, "no such file") from None
    except OSError as e:
        raise _fail(source, f"cannot read: {e.__class__.__name__}: {e.strerror or e}") from None
    if len(raw) != n:
        raise _fail(source, f"header cut short: read {len(raw):,} of {n:,} bytes")
    meta, tensors = parse_header(raw, size - 8 - n, source, Path(path).name)
    return Header(Path(path).name, size, 8 + n, tuple(tensors), meta)


# --- sharded checkpoints and folders ----------------------------------------------------

_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.safetensors$")
# Weight files we recognise but never open: pickles are never unpickled.
_OTHER_WEIGHTS = {
    ".bin": "PyTorch pickle; never unpickled",
    ".pt": "PyTorch pickle; never unpickled",
    ".pth": "PyTorch pickle; never unpickled",
    ".ckpt": "pickle checkpoint; never unpickled",
    ".pkl": "pickle; never unpickled",
    ".h5": "TensorFlow weights; not read",
    ".msgpack": "Flax weights; not read",
    ".onnx": "ONNX export; not read",
    ".gguf": "GGUF file; count it on its own",
}


@dataclass(frozen=True)
class ShardSet:
    """One complete set of weight files: a single file, or an index and its shards."""

    label: str  # how the report names it
    files: tuple[Path, ...]
    index: Path | None = None
    weight_map: Mapping[str, str] | None = None
    index_metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        """Which set a folder's reader prefers: transformers' own names first, exports last."""
        first = (self.index or self.files[0]).name
        if first in ("model.safetensors.index.json", "model.safetensors"):
            return 0
        if first.startswith(("consolidated", "adapter_")):
            return 3
        return 1 if self.index else 2


def _shard_name(folder: Path, value: Any, source: str) -> Path:
    if not isinstance(value, str) or not value or "\\" in value or value.startswith("/"):
        raise _fail(source, f"weight_map names a shard {short(str(value))} that is not a file name")
    if ".." in Path(value).parts:
        raise _fail(source, f"weight_map shard {short(value)} points outside the folder")
    if "\0" in value or any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in Path(value).parts):
        raise _fail(source, f"weight_map shard {short(value)} is not a file name (a part over 255 bytes, or NUL)")
    return folder / value


def _is_file(path: Path, shard: str, source: str) -> bool:
    """Whether a shard the index names is a file: ``Path.is_file`` answers False only for a few
    errors, and raises the rest (a path past PATH_MAX: ENAMETOOLONG; EACCES; EIO)."""
    try:
        return path.is_file()
    except OSError as e:
        raise _fail(source, f"weight_map shard {short(shard)} cannot be opened: {e.strerror or e}") from None


def read_index(path: Path) -> ShardSet:
    """A ``*.safetensors.index.json``: its shards in order, each checked to exist."""
    source = str(path)
    try:
        info = path.stat()
    except OSError:
        raise _fail(source, "no such file") from None
    if not stat.S_ISREG(info.st_mode):
        raise _fail(source, "is not a regular file")
    size = info.st_size
    if size > MAX_INDEX_BYTES:
        raise _fail(source, f"index is {size:,} bytes; at most {MAX_INDEX_BYTES:,} are read")
    data = read_json(path) if size <= (16 << 20) else _read_big_json(path)
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ParamcountError("missing or empty", source=source, field="weight_map")
    shards: dict[str, Path] = {}
    for shard in weight_map.values():
        if not isinstance(shard, str) or shard not in shards:
            shards[shard] = _shard_name(path.parent, shard, source)
    missing = [s for s, p in shards.items() if not _is_file(p, s, source)]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise _fail(source, f"shard {', '.join(missing[:3])}{more} is missing from the folder")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    label = f"{path.name} ({len(shards)} shard{'s' if len(shards) != 1 else ''})"
    return ShardSet(label, tuple(shards.values()), path, weight_map, meta)


def _read_big_json(path: Path) -> dict[str, Any]:
    data = loads(read_regular(path, MAX_INDEX_BYTES, str(path), "the index"), str(path))
    if not isinstance(data, dict):
        raise _fail(str(path), f"expected a JSON object, got {type(data).__name__}")
    return data


def _unindexed(files: list[Path]) -> list[ShardSet]:
    """Files no index names: ``x-00001-of-00003.safetensors`` groups, then single files."""
    groups: dict[tuple[str, int], list[Path]] = {}
    sets = []
    for f in files:
        m = _SHARD.match(f.name)
        if m:
            groups.setdefault((m["stem"], int(m["n"])), []).append(f)
        else:
            sets.append(ShardSet(f.name, (f,)))
    for (stem, n), members in groups.items():
        members.sort()
        label = f"{stem}-*-of-{n:05d}.safetensors ({len(members)} of {n} shards, no index)"
        sets.append(ShardSet(label, tuple(members)))
    return sets


def folder_sets(folder: Path) -> tuple[list[ShardSet], list[str]]:
    """Every safetensors set in ``folder``, preferred first, and the other weight files seen."""
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_file())
    except OSError as e:
        raise _fail(str(folder), f"cannot list the folder: {e.strerror or e}") from None
    indexed = [read_index(p) for p in entries if p.name.endswith(".safetensors.index.json")]
    covered = {f for s in indexed for f in s.files}
    loose = [p for p in entries if p.name.endswith(".safetensors") and p not in covered]
    sets = sorted(indexed + _unindexed(loose), key=lambda s: s.rank)
    others = []
    for p in entries:
        why = next((w for ext, w in _OTHER_WEIGHTS.items() if p.name.endswith(ext)), None)
        if why:
            others.append(f"{p.name} ({why})")
    return sets, others


def complete(s: ShardSet, source: str) -> None:
    """An unindexed ``-of-N`` group must hold all N shards."""
    m = _SHARD.match(s.files[0].name) if s.index is None else None
    if m and len(s.files) != int(m["n"]):
        have = {int(_SHARD.match(f.name)["i"]) for f in s.files}
        gone = [f"{m['stem']}-{i:05d}-of-{m['n']}.safetensors" for i in range(1, int(m["n"]) + 1) if i not in have]
        raise _fail(source, f"shard {', '.join(gone[:3])}{' …' if len(gone) > 3 else ''} is missing from the folder")


@dataclass(frozen=True)
class Read:
    """The headers of a shard set, merged."""

    shard_set: ShardSet
    headers: tuple[Header, ...]
    tensors: tuple[Stored, ...]
    notes: tuple[str, ...] = ()

    @property
    def file_bytes(self) -> int:
        return sum(h.size for h in self.headers)

    @property
    def header_bytes(self) -> int:
        return sum(h.header_bytes for h in self.headers)


def read_set(s: ShardSet, source: str) -> Read:
    """Read every header of ``s`` and check the index against what the shards hold."""
    complete(s, source)
    headers = _headers(s.files, source)
    seen: dict[str, str] = {}
    tensors: list[Stored] = []
    for h in headers:
        for t in h.tensors:
            if t.name in seen:
                raise _fail(source, f"tensor {short(t.name)} is stored twice: in {seen[t.name]} and {h.file}")
            seen[t.name] = h.file
            tensors.append(t)
    return Read(s, headers, tuple(tensors), tuple(_index_notes(s, seen, tensors)))


def _headers(files: Iterable[Path], source: str) -> tuple[Header, ...]:
    """Each file's header, refusing the set once its tensors pass MAX_TENSORS (not after reading all)."""
    out, total = [], 0
    for f in files:
        out.append(read_header(f))
        total += len(out[-1].tensors)
        if total > MAX_TENSORS:
            raise _fail(source, f"the shards hold more than {MAX_TENSORS:,} tensors; at most that many are read")
    return tuple(out)


def _index_notes(s: ShardSet, seen: Mapping[str, str], tensors: list[Stored]) -> list[str]:
    if s.weight_map is None:
        return []
    notes = []
    names = {f: Path(f).name for f in set(s.weight_map.values())}
    wrong = [n for n, f in s.weight_map.items() if seen.get(n) != names[f]]
    unlisted = [n for n in seen if n not in s.weight_map]
    if wrong:
        notes.append(
            f"the index places {len(wrong)} tensor(s) in a shard that does not hold them (first: {short(wrong[0])})"
        )
    if unlisted:
        notes.append(f"{len(unlisted)} stored tensor(s) are not in the index (first: {short(unlisted[0])})")
    total = s.index_metadata.get("total_size")
    data = sum(t.nbytes for t in tensors)
    if isinstance(total, int) and not isinstance(total, bool) and total != data:
        notes.append(f"the index says total_size {total:,} bytes; the shards hold {data:,} bytes of tensor data")
    return notes
