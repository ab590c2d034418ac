"""Weights exactly as a checkpoint stores them: the ``stored`` scheme.

- A GGUF file: every tensor in the type the file gives it (Q4_K, Q6_K, F32, …), its bytes from
  the GGML block tables (:mod:`paramcount.dtypes`), which equal the header's tensor sizes.
  llama.cpp maps the tensors as they are. It keeps ``token_embd`` (the input embeddings) in host
  memory, and a file without ``output.weight`` gets that table again as its output head on the
  GPU; the figure is the file's tensors, each once.
- A safetensors checkpoint: each parameter tensor as stored (packed GPTQ, AWQ or bitsandbytes
  values included) with its quantisation bookkeeping (scales, zeros, ``g_idx``, absmax, quant
  maps, …) on the same row: what transformers' ``from_pretrained`` loads with its default
  ``dtype="auto"``. Not counted: buffers the files hold (rotary ``inv_freq``, attention masks:
  transformers builds its own) and a tied tensor the files store a second time (loading shares
  one tensor).

Rows are grouped per storage format as the other schemes' are; a GGUF tree's repeated layers
stay grouped (a block of identical layers is one row with its copies), never unrolled.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...errors import ParamcountError
from ...gguf.meta import is_gguf, metadata
from ...ir import Block
from ...slots import slots
from .base import Row, Weights
from .layouts import Part, part

STORED = "stored"
# safetensors dtypes under the names of paramcount.dtypes; others (U32, BOOL, F8_E8M0) keep theirs
SAFETENSORS = {
    "F64": "fp64",
    "F32": "fp32",
    "F16": "fp16",
    "BF16": "bf16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "F8_E4M3": "fp8_e4m3",
    "F8_E5M2": "fp8_e5m2",
}
FLOATS = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}


def is_checkpoint(model: Any) -> bool:
    """Whether the model was read from weight files (GGUF or safetensors), not from shapes alone."""
    return is_gguf(model) or getattr(model, "checkpoint", None) is not None


def stored_weights(model: Any) -> Weights:
    """The weights of a checkpoint as its files store them (see the module docstring)."""
    if not is_checkpoint(model):
        raise _not_a_checkpoint()
    rows = tuple(_gguf_rows(model)) if is_gguf(model) else _safetensors_rows(model.checkpoint)
    return Weights(getattr(model, "name", ""), STORED, rows, (), describe(model), _assumption(model, rows))


def _not_a_checkpoint() -> ParamcountError:
    return ParamcountError(
        "weights as stored need a checkpoint (a .gguf or .safetensors file, or a model folder); "
        "this model was read from shapes alone: pick a precision (--dtype bf16, int4, q4_k_m, …)",
        field="dtype",
    )


def describe(model: Any) -> str:
    """``Q4_K_M GGUF file``, ``safetensors: GPTQ, F16``: what the weights are stored as."""
    if is_gguf(model):
        kind = metadata(model).file_type
        return f"{kind} GGUF file" if kind else "GGUF file"
    ck = model.checkpoint
    packed = list(dict.fromkeys(p.scheme for p in ck.params if p.scheme))
    floats = sorted({p.stored.dtype for p in ck.params if not p.scheme}, key=lambda d: -_bytes_of(ck, d))
    return "safetensors: " + ", ".join([*packed, *floats] or ["no tensors"])


def _bytes_of(ck: Any, dtype: str) -> int:
    return sum(p.nbytes for p in ck.params if not p.scheme and p.stored.dtype == dtype)


def compute_dtype(model: Any) -> str:
    """What a checkpoint computes in, which the KV cache and activations use by default: fp16 for
    GGUF (llama.cpp's f16 cache) and GPTQ/AWQ (fp16 kernels); bf16 for bitsandbytes and other
    packings (transformers' usual compute dtype); else the float type holding the most bytes."""
    if is_gguf(model):
        return "fp16"
    if not is_checkpoint(model):
        raise _not_a_checkpoint()
    ck = model.checkpoint
    packed = " ".join(p.scheme for p in ck.params if p.scheme).lower()
    if "gptq" in packed or "awq" in packed:
        return "fp16"
    if packed:
        return "bf16"
    floats = [d for d in {p.stored.dtype for p in ck.params} if SAFETENSORS.get(d) in FLOATS]
    return SAFETENSORS[max(floats, key=lambda d: _bytes_of(ck, d))] if floats else "bf16"


# --- GGUF ----------------------------------------------------------------------------------


def _dtypes(node: Block) -> Iterator[str | None]:
    """Each leaf's stored type, in the order :func:`~paramcount.slots.slots` walks them."""
    for child in node.children:
        if isinstance(child, Block):
            yield from _dtypes(child)
        else:
            yield getattr(child, "dtype", None)


def _gguf_rows(model: Any) -> Iterator[Row]:
    found = slots(model.tree, model.model_type)
    types = list(_dtypes(model.tree))
    for s, dtype in zip(found, types, strict=True):
        if dtype is None:
            raise ParamcountError(f"{s.name}: the file gives no type for this tensor", source=model.source)
        yield Row(s.name, s.copies, s.shape, dtype, "stored", (part("weight", dtype, s.elements),), s.kind)


# --- safetensors ---------------------------------------------------------------------------


def _piece(what: str, t: Any) -> Part:
    return Part(what, SAFETENSORS.get(t.dtype, t.dtype), t.count, t.nbytes)


def _safetensors_rows(ck: Any) -> tuple[Row, ...]:
    """One row per parameter tensor, its module's bookkeeping on the packed one's row."""
    rows: list[Row] = []
    owner: dict[str, int] = {}  # module -> the row its bookkeeping joins
    for p in ck.params:
        module = p.name.rsplit(".", 1)[0]
        if module not in owner or p.scheme:
            owner[module] = len(rows)
        what = p.stored.name.rsplit(".", 1)[-1]
        rows.append(Row(p.name, 1, p.shape or (p.count,), p.storage, "stored", (_piece(what, p.stored),)))
    for e in ck.bookkeeping:
        i = next((owner[m] for m in _prefixes(e.tensor.name) if m in owner), None)
        if i is None:
            rows.append(Row(e.tensor.name, 1, e.tensor.shape, e.role, "bookkeeping", (_piece(e.role, e.tensor),)))
        else:
            r = rows[i]
            rows[i] = Row(r.name, 1, r.shape, r.format, r.role, (*r.parts, _piece(e.role, e.tensor)), r.kind)
    return tuple(rows)


def _prefixes(name: str) -> Iterator[str]:
    """``a.b.c.d`` -> ``a.b.c``, ``a.b``, ``a``: the modules a bookkeeping tensor may belong to."""
    while "." in name:
        name = name.rsplit(".", 1)[0]
        yield name


def _assumption(model: Any, rows: tuple[Row, ...]) -> str:
    n = sum(r.count for r in rows)
    if is_gguf(model):
        return (
            f"every tensor of the file in its stored type ({n:,} tensors, sizes from the GGML block tables); "
            "llama.cpp keeps token_embd in host memory and, without output.weight, loads it again as the "
            "output head; --dtype recomputes the weights from the shapes instead"
        )
    ck = model.checkpoint
    left = [
        f"{len(xs)} {what} ({sum(x.tensor.nbytes for x in xs):,} B: {why})"
        for xs, what, why in (
            (ck.buffers, "buffer(s)", "transformers builds its own"),
            (ck.tied_copies, "stored copy(ies) of tied tensors", "loaded once"),
        )
        if xs
    ]
    return (
        f"parameters and quantisation bookkeeping as the files store them ({n:,} tensors), as from_pretrained "
        f"loads them (dtype='auto'); not counted: {', '.join(left) or 'nothing'}; --dtype recomputes from the shapes"
    )
