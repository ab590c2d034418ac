"""A GGUF file (llama.cpp and friends) becomes a Model from its header alone.

The header is parsed here, with bounds on every count and length, from a read-only memory
map: only the pages holding the header are read, never tensor data. The ``gguf`` package
supplies the format's constants and the quant block table (``GGML_QUANT_SIZES``: elements per
block and bytes per block), so a tensor's bytes are exact, not rounded bits per weight.
Shapes are given in PyTorch order (rows first), the reverse of GGUF's ``ne`` order.
"""

from __future__ import annotations

import functools
import itertools
import math
import mmap
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dtypes import DTYPES, GGML_IDS
from ..errors import ParamcountError, brief
from ..files import open_regular
from ..flat import kind_of, tree
from ..model import Model

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32  # general.alignment when the file does not say (GGUF_DEFAULT_ALIGNMENT)
MAX_NAME_BYTES = 1 << 16  # ggml allows 64-byte tensor names; be lenient, not unbounded
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_ARRAY_NESTING = 4
MAX_KEPT_ARRAY = 1024  # per-layer arrays (head counts) are kept; vocabularies only counted
MAX_KEPT_STRING = 4096
MAX_ELEMENTS = 1 << 62  # ggml counts elements in int64
MAX_TENSORS = 1 << 17  # as safetensors.MAX_TENSORS (ggml puts a layer's experts in one tensor)
# The work a header may ask for, whatever its size: real files hold tens of metadata keys and
# at most about a million array strings (a vocabulary and its merges); every count is checked
# before the items are read, and arrays of numbers are skipped by seeking, never read.
MAX_METADATA = 1 << 16  # metadata entries
MAX_WALKED = 1 << 22  # array items read one by one (strings, nested arrays, per-layer numbers), in all
MAX_KEPT_BYTES = 1 << 25  # metadata keys, kept strings and tensor names, in all

# Ollama's gpt-oss files store MXFP4 as ggml type 4 (once Q4_2, removed from ggml; llama.cpp's
# MXFP4 is 39): ollama v0.11.0-v0.11.7 convert/reader.go ``tensorKindMXFP4 = 4``, written by
# convert/convert_gptoss.go for the experts (ffn_{gate,up}_exps or the fused ffn_gate_up_exps, and
# ffn_down_exps), each block a 1-byte E8M0 scale then 16 bytes of 32 fp4 values: 17 bytes per 32,
# ggml's block_mxfp4 size, in another nibble order. Ollama reads type 4 as MXFP4 (fs/ggml/ggml.go
# BlockSize 32, TypeSize ``1 + blockSize/2``, v0.11.0 until v0.30's 9db4bdbad; ml/backend/ggml/ggml.go
# Backend.Load repacks a Kind-4 tensor into ggml type 39 from v0.11.5; before, its vendored ggml.h
# had ``GGML_TYPE_MXFP4 = 4``), for any architecture. Only that converter writes
# type 4, and only it names the architecture ``gptoss`` (gptossModel.KV; llama.cpp's converter
# writes ``gpt-oss`` with type 39): there type 4 is MXFP4, anywhere else refused. llama.cpp
# refuses it (ggml.c type_traits[4] "DEPRECATED", block size 0: gguf.cpp gguf_init_from_file_impl
# "not a multiple of block size (0)").
OLLAMA_MXFP4, OLLAMA_MXFP4_ARCH = 4, "gptoss"

# GGUFValueType -> struct code, for the fixed-size scalar types.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# GGUFValueType names, for messages about a value of the wrong type
VALUE_TYPES = {
    0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32", 7: "bool",
    8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64",
}  # fmt: skip

# Component of a tensor from its GGUF name (the part after ``blk.N.``), checked in order.
_KINDS = [
    ("norms", r"(^|_)norm(_|$)"),
    ("router", r"^ffn_gate_inp(_shexp)?$|^exp_probs_b$"),
    ("experts", r"_(ch)?exps$|_shexp$"),
    ("embeddings", r"^(token_embd|position_embd|token_types)$"),  # gguf-py TENSOR_NAMES
    ("output_head", r"^(output|cls|cls_out)$"),
    ("attention", r"^attn"),
    ("feed_forward", r"^ffn"),
]
_KIND_RX = [(kind, re.compile(rx)) for kind, rx in _KINDS]
_STEM = re.compile(r"^(?:blk\.\d+\.)?(.*?)(?:\.(weight|bias|scale))?$")
_BLOCK = re.compile(r"^blk\.\d+\.")

# Architecture metadata worth showing, as ``{arch}.<key>``.
# Model.config's key for GGUFFile.data_order (not a GGUF key: the layout of the file's data section)
DATA_ORDER = "paramcount.data_order"
OLLAMA_TYPE_4 = "paramcount.ollama_type_4"  # the tensors stored as Ollama's MXFP4 type 4 (OLLAMA_MXFP4)
ARCH_KEYS = (
    "block_count",
    "context_length",
    "embedding_length",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "expert_count",
    "expert_used_count",
    "expert_shared_count",
    "expert_feed_forward_length",
    "leading_dense_block_count",
    "vocab_size",
    # what the memory planner's KV cache reads (llama.cpp's hparams)
    "attention.sliding_window",
    "attention.kv_lora_rank",
    "attention.key_length_mla",
    "attention.value_length_mla",
    "rope.dimension_count",
    "nextn_predict_layers",  # multi-token-prediction blocks: no KV cache, not loaded by default
    # what llama.cpp's recurrent and hybrid memory reads (memory/runtimes/llamacpp/recurrent.py)
    "ssm.conv_kernel",
    "ssm.inner_size",
    "ssm.state_size",
    "ssm.group_count",
    "ssm.time_step_rank",
    "shortconv.l_cache",
    "kda.head_dim",
    "full_attention_interval",
    "attention.recurrent_layers",
    # Granite 4.0-H's switch for rotary positions (src/models/granite-hybrid.cpp: has_rope): its
    # compute graph takes no inp_pos without them (memory/runtimes/llamacpp/plan.py graph_inputs)
    "rope.scaling.finetuned",
)


def kind(name: str) -> str:
    """The component of a GGUF tensor (``blk.3.ffn_gate_exps.weight`` is experts)."""
    return _kind(_BLOCK.sub("blk.0.", name, count=1))  # no rule reads the block's number


@functools.lru_cache(maxsize=4096)  # a file's names repeat in every block
def _kind(name: str) -> str:
    m = _STEM.match(name)
    stem = m.group(1) if m else name
    return next((k for k, rx in _KIND_RX if rx.search(stem)), None) or kind_of(name)


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    shape: tuple[int, ...]  # PyTorch order: the reverse of the file's ne[]
    type_name: str  # Q4_K, F16, …
    type_id: int
    offset: int  # from the start of the data section
    elements: int
    nbytes: int


@dataclass(frozen=True)
class TypeSplit:
    """The tensors of one quant type."""

    type_name: str
    tensors: int
    elements: int
    nbytes: int

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.nbytes / self.elements if self.elements else 0.0


@dataclass(frozen=True)
class GGUFFile:
    path: str
    version: int
    byte_order: str  # "<" or ">"
    alignment: int
    data_offset: int
    file_size: int
    metadata: Mapping[str, Any]  # arrays longer than MAX_KEPT_ARRAY become ("array", type, length)
    tensors: tuple[GGUFTensor, ...]

    @property
    def elements(self) -> int:
        return sum(t.elements for t in self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def bits_per_weight(self) -> float:
        """Tensor bytes × 8 / elements: the file's effective bits per weight."""
        return 8 * self.nbytes / self.elements if self.elements else 0.0

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None

    def by_type(self) -> list[TypeSplit]:
        """Tensors, elements and bytes per quant type, most bytes first."""
        acc: dict[str, list[int]] = {}
        for t in self.tensors:
            row = acc.setdefault(t.type_name, [0, 0, 0])
            row[0] += 1
            row[1] += t.elements
            row[2] += t.nbytes
        rows = [TypeSplit(name, *vals) for name, vals in acc.items()]
        return sorted(rows, key=lambda r: (-r.nbytes, r.type_name))

    def data_order(self) -> tuple[str, ...]:
        """The tensors' names in the order of the data section, each starting on
        ``general.alignment``; empty for a split file (each shard is a mapping of its own).
        llama.cpp maps the span from the first tensor it keeps in CPU memory to the end of the
        last (``llama_model_loader::get_mapping_range``), padding and other tensors included."""
        if self.metadata.get("split.count", 1) != 1:
            return ()
        return tuple(t.name for t in sorted(self.tensors, key=lambda t: t.offset))

    def arch_metadata(self) -> dict[str, Any]:
        """``block_count``, ``context_length``, head counts, … without the ``{arch}.`` prefix."""
        arch = self.architecture
        out: dict[str, Any] = {}
        if arch:
            for key in ARCH_KEYS:
                value = self.metadata.get(f"{arch}.{key}")
                if value is not None:
                    out[key] = value
        if isinstance(self.metadata.get("general.file_type"), int):
            out["general.file_type"] = self.metadata["general.file_type"]  # 15: Q4_K_M, as llama.cpp names it
        tokens = self.metadata.get("tokenizer.ggml.tokens")
        if "vocab_size" not in out and isinstance(tokens, tuple) and tokens[:1] == ("array",):
            out["vocab_size"] = tokens[2]
        return out


class _Reader:
    """Bounded little- or big-endian reads from the memory-mapped header."""

    def __init__(self, buf: mmap.mmap | bytes, source: str):
        self.buf, self.source, self.pos, self.order = buf, source, 0, "<"
        self.size = len(buf)
        self.walked = self.kept = 0  # array items walked and bytes kept so far (MAX_WALKED, MAX_KEPT_BYTES)

    def fail(self, message: str) -> ParamcountError:
        return ParamcountError(message, source=self.source)

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise self.fail(f"truncated: {what} needs {n:,} bytes at offset {self.pos:,}; the file has {self.size:,}")

    def scalar(self, code: str, what: str, many: bool = False) -> Any:
        fmt = struct.Struct(self.order + code)  # standard sizes, no padding ("IQ" is 12 bytes)
        self.need(fmt.size, what)
        values = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return values if many else values[0]

    def u32(self, what: str) -> int:
        return self.scalar("I", what)

    def u64(self, what: str) -> int:
        return self.scalar("Q", what)

    def string(self, what: str, limit: int | None = None) -> bytes:
        n = self.u64(f"the length of {what}")
        if limit is not None and n > limit:
            raise self.fail(f"{what} is {n:,} bytes long; at most {limit:,} allowed")
        self.need(n, what)
        self.keep(n, what)
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return data

    def keep(self, n: int, what: str) -> None:
        self.kept += n
        if self.kept > MAX_KEPT_BYTES:
            raise self.fail(f"{what}: the names and strings kept pass {MAX_KEPT_BYTES:,} bytes; at most that is read")

    def walk(self, n: int, key: str) -> None:
        """Count ``n`` array items about to be read one by one, refusing past MAX_WALKED."""
        self.walked += n
        if self.walked > MAX_WALKED:
            raise self.fail(
                f"metadata {key}: the arrays hold more than {MAX_WALKED:,} items read one by one (strings, nested"
                " arrays, per-layer numbers) in all; at most that many are read"
            )

    def remaining(self) -> int:
        return self.size - self.pos


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _value(r: _Reader, vtype: int, key: str, depth: int = 0) -> Any:
    if vtype in _SCALAR:
        return r.scalar(_SCALAR[vtype], key)
    if vtype == _STRING:
        n = r.u64(f"the length of {key}")
        r.need(n, key)
        r.keep(min(n, MAX_KEPT_STRING), key)
        value = _text(bytes(r.buf[r.pos : r.pos + min(n, MAX_KEPT_STRING)]))
        r.pos += n
        return value
    if vtype == _ARRAY:
        return _array(r, key, depth)
    raise r.fail(f"metadata {key}: unknown value type {vtype}")


def _array(r: _Reader, key: str, depth: int) -> Any:
    """A per-layer array of numbers that is read (``{arch}.attention.head_count_kv``) as a list;
    any other array (a vocabulary, merges, nested arrays) walked and kept as ("array", type, length),
    so memory stays proportional to what is kept, not to the file."""
    if depth >= MAX_ARRAY_NESTING:
        raise r.fail(f"metadata {key}: arrays nested more than {MAX_ARRAY_NESTING} deep")
    item = r.u32(f"the item type of {key}")
    count = r.u64(f"the length of {key}")
    smallest = struct.calcsize(_SCALAR[item]) if item in _SCALAR else (8 if item in (_STRING, _ARRAY) else None)
    if smallest is None:
        raise r.fail(f"metadata {key}: unknown array item type {item}")
    if count * smallest > r.remaining():
        raise r.fail(f"metadata {key}: array of {count:,} items cannot fit in the {r.remaining():,} bytes left")
    if item in _SCALAR and count <= MAX_KEPT_ARRAY and depth == 0 and _read_key(key):
        r.walk(count, key)
        return list(r.scalar(f"{count}{_SCALAR[item]}", key, many=True))
    _skip_items(r, item, count, key, depth)
    return ("array", item, count)


def _read_key(key: str) -> bool:
    """Whether anything reads the metadata ``key`` (an ``{arch}.`` key of ARCH_KEYS)."""
    return any(key.endswith("." + k) for k in ARCH_KEYS)


def _skip_items(r: _Reader, item: int, count: int, key: str, depth: int) -> None:
    if item in _SCALAR:
        r.pos += count * struct.calcsize(_SCALAR[item])  # fits: _array checked it against the bytes left
        return
    r.walk(count, key)
    if item == _STRING:
        _skip_strings(r, count, key)
    else:
        for _ in range(count):
            _array(r, key, depth + 1)


def _skip_strings(r: _Reader, count: int, key: str) -> None:
    """Past ``count`` strings, each a length and its bytes, so read one by one: a tight loop
    (a vocabulary has hundreds of thousands), of at most MAX_WALKED in all."""
    length, buf, pos, size = struct.Struct(r.order + "Q").unpack_from, r.buf, r.pos, r.size
    for _ in range(count):
        if pos + 8 > size:
            break
        pos += 8 + length(buf, pos)[0]
    else:
        if pos <= size:
            r.pos = pos
            return
    raise r.fail(f"truncated: the strings of {key} run past the end of the file ({size:,} bytes)")


def _metadata(r: _Reader, kv_count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(kv_count):
        key = _text(r.string(f"metadata key {i}", MAX_NAME_BYTES))
        vtype = r.u32(f"the type of metadata {key}")
        out[key] = _value(r, vtype, key)
    return out


def _alignment(meta: Mapping[str, Any], default: int, r: _Reader) -> int:
    align = meta.get("general.alignment", default)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align & (align - 1) or align > 1 << 30:
        raise r.fail(f"general.alignment {align!r} is not a power of two")
    return align


def _types(meta: Mapping[str, Any]) -> tuple[dict[int, Any], dict[int, str]]:
    """Each ggml type id's (elements, bytes) per block and name; in Ollama's own gpt-oss files
    (:data:`OLLAMA_MXFP4_ARCH`) type 4 too, as MXFP4."""
    sizes = {i: DTYPES[name] for name, i in GGML_IDS.items()}
    names = {i: name for name, i in GGML_IDS.items()}
    if meta.get("general.architecture") == OLLAMA_MXFP4_ARCH:
        sizes[OLLAMA_MXFP4], names[OLLAMA_MXFP4] = DTYPES["MXFP4"], "MXFP4"
    return sizes, names


def _tensor_info(r: _Reader, i: int, sizes: Mapping[int, tuple[int, int]], names: Mapping[int, str]) -> GGUFTensor:
    name = _text(r.string(f"the name of tensor {i}", MAX_NAME_BYTES))
    n_dims = r.u32(f"the rank of {name}")
    if n_dims > MAX_DIMS:
        raise r.fail(f"tensor {name}: {n_dims} dimensions; GGUF allows at most {MAX_DIMS}")
    ne = list(r.scalar(f"{n_dims}Q", f"the dimensions of {name}", many=True))
    type_id, offset = r.scalar("IQ", f"the type and data offset of {name}", many=True)
    if type_id == OLLAMA_MXFP4 and type_id not in sizes:
        raise r.fail(
            f"tensor {name}: ggml type 4 (Q4_2, removed from ggml); only Ollama's own gpt-oss files "
            f"(architecture {OLLAMA_MXFP4_ARCH}) use it, for MXFP4"
        )
    if type_id not in sizes:
        raise r.fail(f"tensor {name}: unknown ggml type {type_id}")
    elements = math.prod(ne)
    if any(d >= 1 << 63 for d in ne) or elements > MAX_ELEMENTS:
        raise r.fail(f"tensor {name}: dimensions {ne} are absurd ({elements:,} elements)")
    block, type_size = sizes[type_id]
    if ne and ne[0] % block:
        raise r.fail(f"tensor {name}: row length {ne[0]:,} is not a multiple of {names[type_id]}'s block of {block}")
    return GGUFTensor(
        name, tuple(reversed(ne)), names[type_id], type_id, offset, elements, elements // block * type_size
    )


def _check_data(r: _Reader, tensors: list[GGUFTensor], data_offset: int, alignment: int) -> None:
    seen: set[str] = set()
    for t in tensors:
        if t.name in seen:
            raise r.fail(f"tensor {t.name} appears twice")
        seen.add(t.name)
        if t.offset % alignment:
            raise r.fail(f"tensor {t.name}: data offset {t.offset:,} is not aligned to {alignment}")
        end = data_offset + t.offset + t.nbytes
        if end > r.size:
            raise r.fail(f"truncated: tensor {t.name}'s data ends at byte {end:,}; the file has {r.size:,}")
    ordered = sorted(tensors, key=lambda t: t.offset)
    for a, b in itertools.pairwise(ordered):
        if a.offset + a.nbytes > b.offset:
            raise r.fail(f"tensors {a.name} and {b.name} overlap in the data section")


def parse(buf: mmap.mmap | bytes, source: str) -> GGUFFile:
    """The header of a GGUF file held in ``buf`` (only header bytes are read)."""
    r = _Reader(buf, source)
    if not len(buf):
        raise r.fail("empty file, not GGUF")
    if len(buf) < 4 or bytes(buf[:4]) != MAGIC:
        found = bytes(buf[:4])
        raise r.fail(f"not a GGUF file: bad magic {found!r}, expected {MAGIC!r}")
    r.pos = 4
    version = r.u32("the version")
    if version & 0xFFFF == 0:  # written on the other endianness
        r.order = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in (2, 3):
        raise r.fail(f"GGUF version {version} is not supported (2 and 3 are)")
    tensor_count = r.u64("the tensor count")
    kv_count = r.u64("the metadata count")
    # each metadata entry takes at least 13 bytes and each tensor info at least 24
    if kv_count * 13 + tensor_count * 24 > r.remaining():
        raise r.fail(
            f"header claims {tensor_count:,} tensors and {kv_count:,} metadata entries; "
            f"the {r.size:,}-byte file cannot hold them"
        )
    if tensor_count > MAX_TENSORS:
        raise r.fail(f"header holds {tensor_count:,} tensors; at most {MAX_TENSORS:,} are read")
    if kv_count > MAX_METADATA:
        raise r.fail(f"header holds {kv_count:,} metadata entries; at most {MAX_METADATA:,} are read")
    meta = _metadata(r, kv_count)
    sizes, names = _types(meta)
    tensors = [_tensor_info(r, i, sizes, names) for i in range(tensor_count)]
    alignment = _alignment(meta, DEFAULT_ALIGNMENT, r)
    data_offset = -(-r.pos // alignment) * alignment
    _check_data(r, tensors, data_offset, alignment)
    return GGUFFile(source, version, r.order, alignment, data_offset, r.size, meta, tuple(tensors))


def read_header(path: str | Path, *, links: bool = True) -> GGUFFile:
    """Parse ``path``'s GGUF header through a read-only memory map; tensor data stays unread.
    ``links=False``: a link as its last part is refused (a store's blob, already resolved)."""
    src = str(path)
    try:
        with open_regular(path, src, links=links) as f:  # a FIFO or a device: refused, never waited on
            size = f.seek(0, 2)
            if size < 24:  # magic, version and the two counts
                f.seek(0)
                return parse(f.read(size), src)
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return parse(buf, src)
    except FileNotFoundError:
        raise ParamcountError("no such file", source=src) from None
    except (OSError, ValueError) as e:
        raise ParamcountError(f"cannot read: {e.__class__.__name__}: {e}", source=src) from None


MAX_HEADER_BYTES = 32 << 20  # GGUF headers carry the tokenizer: ~8 MB for Llama 3, more for 256k vocabularies


class PastHeader(Exception):
    """A read went past the header bytes at hand (more must be fetched, or the header is too long)."""


class HeaderOnly(bytes):
    """The first bytes of a GGUF file that report the whole file's length.

    ``parse`` reads a buffer and checks every tensor's data against ``len(buf)``; a browser's
    upload or a range request holds only the header, so the length is the file's and any read
    past the bytes at hand fails (struct.error from the buffer itself, PastHeader from a slice)."""

    def __new__(cls, data: bytes, size: int) -> HeaderOnly:
        self = super().__new__(cls, data)
        self.file_size = size
        return self

    def __len__(self) -> int:
        return self.file_size

    def __getitem__(self, key):
        if isinstance(key, slice) and (key.stop is None or key.stop > bytes.__len__(self)):
            raise PastHeader
        return bytes.__getitem__(self, key)


def parse_prefix(data: bytes, size: int, source: str) -> GGUFFile | None:
    """The header of a ``size``-byte GGUF file from its first bytes ``data``; None when the header
    runs past them (the caller fetches more, up to MAX_HEADER_BYTES)."""
    try:
        return parse(HeaderOnly(data, size), source)
    except (PastHeader, struct.error):
        return None


_SHARD = re.compile(r"(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf", re.I)
MAX_SHARDS = 10_000


def read_shards(path: str | Path) -> GGUFFile:
    """The header of ``path``, or of all its shards merged when it is one of a split model.

    llama.cpp's gguf-split (and GGUFWriter) name shards ``NAME-00001-of-00003.gguf`` and
    write ``split.count`` into each; the first shard holds the model's metadata.
    """
    path = Path(path)
    first = read_header(path)
    count = first.metadata.get("split.count")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 1:
        return first
    m = _SHARD.fullmatch(path.name)
    if not m or int(m["count"]) != count or count > MAX_SHARDS:
        raise ParamcountError(
            f"split.count says {count} shards, but the name does not follow NAME-00001-of-{count:05d}.gguf",
            source=str(path),
        )
    files = []
    for i in range(1, count + 1):
        shard = path.with_name(f"{m['stem']}-{i:05d}-of-{count:05d}.gguf")
        if not shard.is_file():
            raise ParamcountError(f"shard {i} of {count} is missing: {shard.name}", source=str(path))
        files.append(first if shard.name == path.name else read_header(shard))
    return _merge(files, count, str(path.with_name(f"{m['stem']}-*-of-{count:05d}.gguf")))


def _merge(files: list[GGUFFile], count: int, source: str) -> GGUFFile:
    tensors = [t for f in files for t in f.tensors]
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ParamcountError(f"tensor {twice} is in more than one shard", source=source)
    main = next((f for f in files if f.metadata.get("general.architecture")), files[0])
    said = main.metadata.get("split.tensors.count")
    if isinstance(said, int) and said != len(tensors):
        raise ParamcountError(
            f"the {count} shards hold {len(tensors):,} tensors; split.tensors.count says {said:,}", source=source
        )
    return GGUFFile(
        source,
        main.version,
        main.byte_order,
        main.alignment,
        main.data_offset,
        sum(f.file_size for f in files),
        {**main.metadata, "split.count": count},
        tuple(tensors),
    )


def shown(value: Any) -> str:
    """A metadata value fit for a one-line message: escaped, cut short, and an array the reader
    did not keep (a vocabulary, an array of strings) said by its type and length."""
    if isinstance(value, tuple) and value[:1] == ("array",):
        return f"an array of {value[2]:,} {VALUE_TYPES.get(value[1], 'unknown')} values"
    if isinstance(value, list):
        return f"an array of {len(value):,}: {brief(value)}" if value else "an empty array"
    return brief(value)


def _split_line(s: TypeSplit) -> str:
    tensors = f"{s.tensors:,} tensor{'s' if s.tensors != 1 else ''}"
    return f"{s.type_name} {tensors}, {s.elements:,} elements, {s.nbytes:,} bytes ({s.bits_per_weight:.4f} bits each)"


def _notes(info: GGUFFile) -> list[str]:
    arch = info.architecture or "unknown architecture"
    shards = info.metadata.get("split.count")
    files = f" in {shards} shards" if isinstance(shards, int) and shards > 1 else ""
    notes = [
        f"GGUF v{info.version}, {arch}{files}: {len(info.tensors):,} tensors, {info.elements:,} elements in "
        f"{info.nbytes:,} bytes of tensor data, {info.bits_per_weight:.4f} bits per weight",
        "by type: " + "; ".join(_split_line(s) for s in info.by_type()),
    ]
    meta = info.arch_metadata()
    if meta:
        said = (v if isinstance(v, int | list) else shown(v) for v in meta.values())  # numbers as they are
        notes.append("metadata: " + ", ".join(f"{k} {v}" for k, v in zip(meta, said, strict=True)))
    names = {t.name for t in info.tensors}
    if "token_embd.weight" in names and "output.weight" not in names:
        notes.append("no output.weight: the output head reuses token_embd.weight (tied)")
    type_4 = ollama_type_4(info)
    if type_4:
        notes.append(
            f"MXFP4 as Ollama stores it: {len(type_4):,} tensors of ggml type 4 (llama.cpp's MXFP4 is 39), read "
            "as Ollama reads them (32 values in 17 bytes); llama.cpp cannot load this file"
        )
    if "rope_freqs.weight" in names:
        notes.append("rope_freqs.weight is a stored RoPE frequency table, counted as the file counts it")
    return notes


def _config(info: GGUFFile) -> dict[str, Any]:
    """What the planners read: the architecture's metadata, and the layout of the data section
    (``general.alignment`` and the tensors' order: llama.cpp maps a span of the file)."""
    order = info.data_order()
    type_4 = ollama_type_4(info)
    return {
        **info.arch_metadata(), "general.alignment": info.alignment, **({DATA_ORDER: order} if order else {}),
        **({OLLAMA_TYPE_4: type_4} if type_4 else {}),
    }  # fmt: skip


def ollama_type_4(info: GGUFFile) -> tuple[str, ...]:
    """The tensors an Ollama gpt-oss file stores as ggml type 4 (MXFP4 in Ollama's numbering)."""
    return tuple(t.name for t in info.tensors if t.type_id == OLLAMA_MXFP4)


def to_model(info: GGUFFile) -> Model:
    flat = [(t.name, t.shape, t.type_name) for t in info.tensors]
    try:
        full = tree(flat, kind)
        body = tree([f for f in flat if f[0] != "output.weight"], kind)
    except ValueError as e:
        raise ParamcountError(f"tensor names do not form a tree: {e}", source=info.path) from None
    name = info.metadata.get("general.name")
    return Model(
        name=name if isinstance(name, str) and name else info.path,
        source=info.path,
        model_type=info.architecture or "unknown",
        class_name="GGUF",
        tree=full,
        backbone_class="GGUF without output.weight",
        backbone=body,
        config=_config(info),  # GGUF key names; the full metadata is read_header(path).metadata
        notes=tuple(_notes(info)),
    )


def from_file(path: str | Path) -> Model:
    """The Model of a GGUF file (all shards of a split model, given any one of them); a llama.cpp
    multimodal projector file (``clip`` architecture: an mmproj) is its towers."""
    info = read_shards(path)
    model = to_model(info)
    return with_towers(model) if is_mmproj(info) else model


# llama.cpp's mmproj files (architecture "clip") name their parts by prefix: the vision encoder
# ``v.``, the projector ``mm.``, an audio encoder ``a.`` (clip.cpp, tools/mtmd).
MMPROJ_TOWERS = {"v": "vision_encoder", "mm": "projector", "a": "audio_encoder"}


def is_mmproj(info: GGUFFile) -> bool:
    return info.architecture == "clip"


def with_towers(model: Model, towers: dict[str, str] | None = None, default: str | None = None) -> Model:
    """The model with each top-level block marked as its tower (by name, else ``default``)."""
    from ..ir import Block
    from ..records import replace

    towers = MMPROJ_TOWERS if towers is None else towers

    def mark(tree: Block) -> Block:
        children = tuple(
            replace(c, tower=towers.get(c.name, default)) if isinstance(c, Block) and towers.get(c.name, default) else c
            for c in tree.children
        )
        return replace(tree, children=children)

    return replace(model, tree=mark(model.tree), backbone=mark(model.backbone))


def with_mmproj(language: Model, mmproj: Model, source: str) -> Model:
    """A language model's GGUF and its mmproj file as one model of towers: the language model's
    tensors and the projector file's, each under its own names (they never collide: the
    projector's are prefixed ``v.``, ``mm.``, ``a.``)."""
    from ..ir import Block
    from ..records import replace

    lm, mm = with_towers(language, {}, "language_model"), with_towers(mmproj)
    clash = {c.name for c in lm.tree.children} & {c.name for c in mm.tree.children}
    if clash:
        raise ParamcountError(
            f"the two files both hold {sorted(clash)[0]}.*: not a model and its projector", source=source
        )
    tree = Block("", (*lm.tree.children, *mm.tree.children))
    backbone = Block("", (*lm.backbone.children, *mm.tree.children))
    notes = (*language.notes, f"with the multimodal projector {mmproj.source}: " + mmproj.notes[0])
    return replace(language, name=language.name, source=source, tree=tree, backbone=backbone, notes=notes)


def from_folder(folder: Path) -> Model | None:
    """A folder of GGUF files: one model (any shards of it) and at most one mmproj, counted as one
    model; None when the folder holds no GGUF file."""
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".gguf" and p.is_file())
    if not files:
        return None
    models, projectors = [], []
    for f in files:
        m = re.match(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})$", f.stem)
        if m and int(m["i"]) != 1:
            continue  # a later shard: read with the first
        info = read_shards(f)
        (projectors if is_mmproj(info) else models).append((f, info))
    if len(models) != 1 or len(projectors) > 1:
        found = ", ".join(f.name for f, _ in models + projectors)
        raise ParamcountError(
            f"holds {len(models)} models and {len(projectors)} projector files ({found}): give one file",
            source=str(folder),
        )
    language = to_model(models[0][1])
    if not projectors:
        return language
    return with_mmproj(language, with_towers(to_model(projectors[0][1])), str(folder))


def read(source: str | Path) -> Model | None:
    """A Model if ``source`` is a GGUF file (by its ``.gguf`` name or its magic), else None."""
    path = Path(source)
    if not path.is_file():
        return None
    if path.suffix.lower() != ".gguf":
        try:
            with open(path, "rb") as f:
                if f.read(4) != MAGIC:
                    return None
        except OSError:
            return None
    return from_file(path)


__all__ = [
    "GGUFFile",
    "GGUFTensor",
    "TypeSplit",
    "from_file",
    "from_folder",
    "kind",
    "read",
    "read_header",
    "read_shards",
    "to_model",
    "with_mmproj",
]
