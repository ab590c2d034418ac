"""What every weights figure is made of: the schemes, one row per group of tensors stored alike,
and the term they add up to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...dtypes import DTYPES
from ...errors import ParamcountError
from ...gguf import types as gg
from ...ir import KINDS
from ..core.terms import GB, GIB, Term
from .layouts import Part

GROUP = 128  # GPTQ's and AWQ's usual group size

# transformers' `_keep_in_fp32_modules` for the families modelled: fp32 when loading in fp16,
# never quantised by bitsandbytes. (The `_strict` lists name only buffers here, not weights.)
FP32_MODULES = {"t5": ("wo",), "mt5": ("wo",)}

KEEP_WORDS = (*KINDS, "output", "outside", "none", "default")


@dataclass(frozen=True)
class Scheme:
    """How a scheme stores what it quantises (``qtype``) and what it leaves (``base``)."""

    name: str
    method: str  # cast | bnb4 | bnb8 | gptq | awq | gguf
    qtype: str  # the storage of quantised tensors: "int4", "nf4", "Q4_K", or a mix name
    base: str  # the dtype of tensors kept in high precision
    keep: tuple[str, ...] = ()  # what stays in ``base`` by default
    bits: int = 0


def _schemes() -> dict[str, Scheme]:
    out = {
        "fp32": Scheme("fp32", "cast", "fp32", "fp32"),
        "fp16": Scheme("fp16", "cast", "fp16", "fp32"),
        "bf16": Scheme("bf16", "cast", "bf16", "fp32"),
        "fp8": Scheme("fp8", "cast", "fp8_e4m3", "bf16"),
        "fp8_e5m2": Scheme("fp8_e5m2", "cast", "fp8_e5m2", "bf16"),
        "int8": Scheme("int8", "cast", "int8", "bf16"),
        "int4": Scheme("int4", "cast", "int4", "bf16"),
        "nf4": Scheme("nf4", "bnb4", "nf4", "bf16", ("output",), 4),
        "fp4": Scheme("fp4", "bnb4", "fp4", "bf16", ("output",), 4),
        "bnb-int8": Scheme("bnb-int8", "bnb8", "int8", "bf16", ("output",), 8),
        "gptq-int4": Scheme("gptq-int4", "gptq", "int4", "fp16", ("outside", "router"), 4),
        "gptq-int8": Scheme("gptq-int8", "gptq", "int8", "fp16", ("outside", "router"), 8),
        "awq-int4": Scheme("awq-int4", "awq", "int4", "fp16", ("outside", "router"), 4),
        "stored": Scheme("stored", "stored", "stored", "stored"),
    }
    out.update({t: Scheme(t, "gguf", t.upper(), "F16") for t in gg.PURE})
    out.update({m: Scheme(m, "gguf", m, "F16") for m in gg.MIXES})
    return out


_SCHEME = _schemes()
SCHEMES: tuple[str, ...] = tuple(_SCHEME)
ALIASES = {
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "fp8_e4m3": "fp8",
    "llm.int8": "bnb-int8",
    "llm-int8": "bnb-int8",
    "bnb-nf4": "nf4",
    "bnb-fp4": "fp4",
    "gptq": "gptq-int4",
    "awq": "awq-int4",
}


def scheme(name: str) -> Scheme:
    """The scheme called ``name`` (case-insensitive; ``Q4_K_M`` is ``q4_k_m``)."""
    key = name.strip().lower() if isinstance(name, str) else None
    key = ALIASES.get(key, key)
    if key not in _SCHEME:
        raise ParamcountError(f"unknown scheme {name!r}; choose one of: {', '.join(SCHEMES)}", field="dtype")
    return _SCHEME[key]


@dataclass(frozen=True)
class Row:
    """A tensor, or a group of identical ones across repeats, and how it is stored."""

    name: str  # full name, repeats as ranges: "model.layers.0–31.mlp.down_proj.weight"
    count: int  # tensors in the group
    shape: tuple[int, ...]  # of one tensor (the unquantised parameter)
    format: str  # "nf4", "bf16", "Q4_K", "GPTQ int4, group 128", "tied"
    role: str  # "quantised", "kept", "not quantised", "fp32 (transformers)", "tied", "stored", "bookkeeping"
    parts: tuple[Part, ...]  # what one tensor is stored as
    kind: str = "other"

    @property
    def parameters(self) -> int:
        """Parameters held (0 for a tie, counted where it is stored, and for quantisation bookkeeping)."""
        return 0 if self.role in ("tied", "bookkeeping") else self.count * numel(self.shape)

    @property
    def bytes(self) -> int:
        return self.count * sum(p.bytes for p in self.parts)


def numel(shape: Sequence[int]) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


@dataclass(frozen=True)
class Weights:
    """The weights of ``model`` under ``scheme``: rows of tensors and their exact bytes."""

    model: str
    scheme: str
    rows: tuple[Row, ...]
    keep: tuple[str, ...]  # the keep items in force
    options: str = ""  # "double quant", "group 128", "Q4_K_M GGUF file", …
    note: str = ""  # what is assumed, where the scheme's own words do not say it (stored weights)
    bound: bool = False  # an upper bound, not the file's exact bytes (the note says why)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.rows)

    @property
    def parameters(self) -> int:
        return sum(r.parameters for r in self.rows)

    def unquantised(self) -> tuple[int, tuple[str, ...]]:
        """Parameters a quantising scheme leaves in high precision (kept by --keep, or not
        quantised by the library, such as bitsandbytes with fused 3-D experts), and their components."""
        rows = [r for r in self.rows if r.role in ("kept", "not quantised") and r.parameters]
        return sum(r.parameters for r in rows), tuple(sorted({r.kind for r in rows}))

    @property
    def gb(self) -> float:
        return self.bytes / GB

    @property
    def gib(self) -> float:
        return self.bytes / GIB

    @property
    def by_dtype(self) -> dict[str, int]:
        """Bytes per storage dtype (``uint8``, ``fp32``, ``Q4_K``, …), largest first."""
        return _largest_first(self._sums(lambda r, p: p.dtype, lambda r, p: r.count * p.bytes))

    def by_format(self) -> dict[str, int]:
        """Bytes per row format (``nf4``, ``bf16``, ``Q6_K``, …), largest first."""
        acc: dict[str, int] = {}
        for r in self.rows:
            acc[r.format] = acc.get(r.format, 0) + r.bytes
        return _largest_first(acc)

    def _sums(self, key, value) -> dict[str, int]:
        acc: dict[str, int] = {}
        for r in self.rows:
            for p in r.parts:
                acc[key(r, p)] = acc.get(key(r, p), 0) + value(r, p)
        return acc

    def term(self) -> Term:
        """The figure as a memory-plan term, with parts per format."""
        elements = self._sums(lambda r, p: p.dtype, lambda r, p: r.count * p.elements)
        parts = tuple(_format_term(self, f) for f in self.by_format() if f != "tied")
        return Term(
            key="weights",
            label=f"weights ({self.scheme}{', ' + self.options if self.options else ''})",
            bytes=self.bytes,
            formula=_formula(elements, self.by_dtype, self.bytes),
            assumption=self.note or assumption(self),
            estimate=self.bound,
            parts=parts,
        )


def _largest_first(acc: dict[str, int]) -> dict[str, int]:
    return dict(sorted(acc.items(), key=lambda kv: (-kv[1], kv[0])))


def _formula(elements: dict[str, int], sizes: dict[str, int], total: int) -> str:
    """``n × s B`` per element type, ``n / block × s B`` per block type, then the total; a type
    without a table row (a checkpoint's ``U32``, ``BOOL``) as its bytes."""
    terms = []
    for dtype in sizes:
        per, size = DTYPES.get(dtype, (0, 0))
        n = elements[dtype]
        if not per:
            terms.append(f"{sizes[dtype]:,} B ({dtype})")
        else:
            terms.append(f"{n:,} × {size} B ({dtype})" if per == 1 else f"{n:,} / {per} × {size} B ({dtype})")
    return " + ".join(terms or ["0"]) + f" = {total:,} B"


def _format_term(w: Weights, fmt: str) -> Term:
    rows = [r for r in w.rows if r.format == fmt]
    sub = Weights(w.model, w.scheme, tuple(rows), w.keep, w.options)
    elements = sub._sums(lambda r, p: p.dtype, lambda r, p: r.count * p.elements)
    n = sum(r.count for r in rows)
    return Term(
        key=f"weights.{fmt}",
        label=f"{fmt}: {n:,} tensors, {sub.parameters:,} parameters",
        bytes=sub.bytes,
        formula=_formula(elements, sub.by_dtype, sub.bytes),
        assumption=", ".join(sorted({r.role for r in rows})),
        estimate=False,
    )


def assumption(w: Weights) -> str:
    high = sorted({_kind_words(r) for r in w.rows if r.role in ("kept", "not quantised") and r.bytes})
    fp32 = [r.name for r in w.rows if r.role == "fp32 (transformers)"]
    s = scheme(w.scheme)
    text = f"scheme {w.scheme}" + (f" ({w.options})" if w.options else "")
    if s.method != "cast" or high:
        text += f"; in {_base_label(w)}: {', '.join(high) if high else 'nothing'}"
    if fp32:
        text += f"; kept in fp32 as transformers loads them: {len(fp32)} groups"
    return text + f"; keep: {','.join(w.keep) or 'none'} (--dtype, --keep)"


def _base_label(w: Weights) -> str:
    return "/".join(sorted({r.format for r in w.rows if r.role in ("kept", "not quantised")})) or scheme(w.scheme).base


def _kind_words(r: Row) -> str:
    if r.name.rsplit(".", 1)[-1] == "bias":
        return "biases"
    return r.kind.replace("_", " ")
