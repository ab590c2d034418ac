"""Quantised checkpoints: from packed storage back to the unquantised model's parameters.

Packed storage is not a parameter count. GPTQ packs 8 four-bit values per int32 along the
input dimension (``qweight`` [in·b/32, out]); AWQ packs along the output dimension
([in, out·b/32]); bitsandbytes 4-bit packs two per uint8 into a flat [n/2, 1] column; MLX packs
into uint32 rows; NVFP4 two per uint8; mxfp4 ``*_blocks`` hold 32 fp4 values per 16 bytes. The
logical count of a packed tensor is its element count times the values each element holds;
scales, zeros, ``g_idx``, absmax, quant maps and the like are bookkeeping, never parameters.
Only headers are read: names, dtypes and shapes say everything needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .safetensors import Stored


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of the unquantised model and the stored tensor that holds it."""

    name: str  # the name the unquantised model gives it
    shape: tuple[int, ...] | None  # logical shape; None where the packing hides it (bitsandbytes 4-bit)
    count: int
    storage: str  # "BF16", or how it is packed: "int4 GPTQ (I32)"
    stored: Stored
    scheme: str | None = None  # None for a plain tensor

    @property
    def nbytes(self) -> int:
        return self.stored.nbytes


@dataclass(frozen=True, slots=True)
class Extra:
    """A stored tensor that is not a parameter: quantisation bookkeeping or a buffer."""

    tensor: Stored
    role: str  # "GPTQ scales", "causal mask buffer", …


@dataclass(frozen=True)
class Split:
    params: tuple[Param, ...]
    bookkeeping: tuple[Extra, ...]
    notes: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ()  # the packings found, in order of first use


@dataclass
class _State:
    by_name: Mapping[str, Stored]
    qc: Mapping[str, Any]
    params: list[Param] = field(default_factory=list)
    extras: list[Extra] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)
    schemes: dict[str, None] = field(default_factory=dict)

    def get(self, name: str) -> Stored | None:
        return self.by_name.get(name)

    def book(self, name: str, role: str) -> None:
        t = self.by_name.get(name)
        if t is not None and name not in self.claimed:
            self.claimed.add(name)
            self.extras.append(Extra(t, role))

    def param(self, name: str, shape: tuple[int, ...] | None, count: int, storage: str, t: Stored, scheme: str) -> None:
        self.claimed.add(t.name)
        self.schemes[scheme] = None
        self.params.append(Param(name, shape, count, storage, t, scheme))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


VALID_BITS = (2, 3, 4, 5, 6, 8)
FP8 = ("F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ")

# Names that only quantisation toolkits store (compressed-tensors, modelopt, fbgemm, vLLM kv scales).
_SCALE_SUFFIXES = (
    "weight_scale",
    "weight_scale_inv",
    "weight_scale_2",
    "weight_global_scale",
    "weight_zero_point",
    "weight_g_idx",
    "weight_shape",
    "input_scale",
    "input_global_scale",
    "input_zero_point",
    "output_scale",
    "activation_scale_ub",
    "k_scale",
    "v_scale",
    "q_scale",
    "prob_scale",
    "qzeros",
    "g_idx",
    "SCB",
    "weight_format",
)


def quant_config(config: Mapping[str, Any] | None, side: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The quantisation settings: config.json's ``quantization_config`` (or MLX's ``quantization``),
    else a side file (AutoGPTQ's quantize_config.json, AWQ's quant_config.json)."""
    config = config or {}
    for key in ("quantization_config", "quantization"):
        qc = config.get(key)
        if isinstance(qc, Mapping) and qc:
            out = dict(qc)
            if key == "quantization" and "quant_method" not in out:
                out["quant_method"] = "mlx"
            return out
    return dict(side) if isinstance(side, Mapping) else {}


def _setting(qc: Mapping[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = qc.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _method(qc: Mapping[str, Any]) -> str:
    m = qc.get("quant_method") or qc.get("quant_algo") or ""
    return str(m).lower() if isinstance(m, str) else ""


def _valid(bits: float | None) -> int | None:
    return int(bits) if bits is not None and bits == int(bits) and int(bits) in VALID_BITS else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _gptq_awq(s: _State, t: Stored) -> None:
    """``qweight`` int32 with ``qzeros``, ``scales`` and (GPTQ) ``g_idx`` beside it."""
    p = t.name[: -len(".qweight")]
    scales, zeros, gidx = s.get(p + ".scales"), s.get(p + ".qzeros"), s.get(p + ".g_idx")
    method = _method(s.qc)
    bits = _valid(_setting(s.qc, "bits", "w_bit"))
    if bits is None and zeros is not None and scales is not None and len(zeros.shape) == len(scales.shape) == 2:
        bits = _valid(_ratio(32 * zeros.shape[1], scales.shape[1]))
    if bits is None and gidx is not None and len(t.shape) == 2 and gidx.shape:
        bits = _valid(_ratio(32 * t.shape[0], gidx.shape[0]))
    if bits is None:
        bits = 4
        s.note("bit width of qweight tensors not given by a quantization_config nor their shapes; assumed 4")
    per = 32 // bits if 32 % bits == 0 else None
    scheme = _packing_axis(t, scales, bits, method)
    count = t.count * 32 // bits
    if t.count * 32 % bits:
        s.note(f"{t.name}: {t.count} int32 values do not hold a whole number of {bits}-bit values")
    shape = None
    if len(t.shape) == 2:
        rows, cols = t.shape
        if scheme == "GPTQ" and rows * 32 % bits == 0:
            shape = (cols, rows * 32 // bits)
        elif scheme == "AWQ" and per:
            shape = (cols * per, rows)
    s.param(p + ".weight", shape, count, f"int{bits} {scheme} ({t.dtype})", t, scheme)
    for suffix, role in ((".qzeros", "zeros"), (".scales", "scales"), (".g_idx", "g_idx")):
        s.book(p + suffix, f"{scheme} {role}")


def _packing_axis(t: Stored, scales: Stored | None, bits: int, method: str) -> str:
    """GPTQ packs rows (qweight has the output width), AWQ packs columns (scales are wider)."""
    if scales is not None and len(t.shape) == 2 and len(scales.shape) == 2:
        if t.shape[1] == scales.shape[1]:
            return "GPTQ"
        if 32 % bits == 0 and t.shape[1] * (32 // bits) == scales.shape[1]:
            return "AWQ"
    return "AWQ" if "awq" in method else "GPTQ"


def _mlx_bits(s: _State, prefix: str, t: Stored, scales: Stored) -> int:
    qc = s.qc
    layer = qc.get(prefix)
    if isinstance(layer, Mapping):
        qc = layer
    bits = _valid(_setting(qc, "bits"))
    if bits is None and len(t.shape) >= 1 and len(scales.shape) >= 1:
        group = _setting(qc, "group_size") or 64
        bits = _valid(_ratio(t.shape[-1] * 32, scales.shape[-1] * group))
        if bits is not None and _setting(qc, "group_size") is None:
            s.note("MLX bit width inferred from shapes assuming group size 64 (mlx's default)")
    if bits is None:
        s.note(f"{t.name}: MLX bit width not found; assumed 4")
        bits = 4
    return bits


def _mlx(s: _State, t: Stored, scales: Stored) -> None:
    """mlx-lm: uint32 ``weight`` packed along the last axis, ``scales`` and ``biases`` per group."""
    p = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
    bits = _mlx_bits(s, p, t, scales)
    shape = (*t.shape[:-1], t.shape[-1] * 32 // bits) if t.shape and t.shape[-1] * 32 % bits == 0 else None
    s.param(t.name, shape, t.count * 32 // bits, f"int{bits} MLX ({t.dtype})", t, "MLX")
    s.book(p + ".scales", "MLX scales")
    s.book(p + ".biases", "MLX biases (per-group offsets)")


def _bnb4(s: _State, t: Stored, extras: Sequence[str]) -> None:
    """bitsandbytes 4-bit: the weight is a [n/2, 1] uint8 column; quant_state says the rest."""
    extras = [e for e in extras if _is_bnb(e)]
    kind = next((e.rsplit("__", 1)[1] for e in extras if ".quant_state.bitsandbytes__" in e), "4-bit")
    s.param(t.name, None, t.count * 2, f"{kind} bitsandbytes ({t.dtype})", t, "bitsandbytes 4-bit")
    for e in extras:
        s.book(e, "bitsandbytes " + e[len(t.name) + 1 :].split(".", 1)[0])


def _blocks(s: _State, t: Stored) -> None:
    """mxfp4 (gpt-oss): ``x_blocks`` [..., blocks, 16] uint8 holds 32 fp4 values per block."""
    base = t.name[: -len("_blocks")]
    shape = (*t.shape[:-2], t.shape[-2] * t.shape[-1] * 2) if len(t.shape) >= 2 else None
    s.param(base, shape, t.count * 2, f"mxfp4 ({t.dtype})", t, "mxfp4")
    s.book(base + "_scales", "mxfp4 block scales (E8M0)")


def _compressed(s: _State, t: Stored) -> None:
    """compressed-tensors: ``weight_packed`` int32 (pack-quantized) or uint8 (nvfp4)."""
    p = t.name[: -len(".weight_packed")]
    bits = 4 if t.dtype == "U8" else _compressed_bits(s)
    per = (8 if t.dtype == "U8" else 32) // bits
    label = "fp4" if t.dtype == "U8" else f"int{bits}"
    shape = (*t.shape[:-1], t.shape[-1] * per) if t.shape else None
    s.param(p + ".weight", shape, t.count * per, f"{label} compressed-tensors ({t.dtype})", t, "compressed-tensors")
    for suffix in _SCALE_SUFFIXES:
        s.book(f"{p}.{suffix}", f"compressed-tensors {suffix}")


def _compressed_bits(s: _State) -> int:
    for group in (s.qc.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        bits = _valid(_setting(weights, "num_bits")) if isinstance(weights, Mapping) else None
        if bits and 32 % bits == 0:
            return bits
    s.note("compressed-tensors bit width not in quantization_config; assumed 4")
    return 4


def _scaled(s: _State, t: Stored, scale: Stored | None) -> None:
    """FP8 / int8 weights (one value per element) and NVFP4 (two per uint8), with scales beside."""
    p = t.name[: -len(".weight")]
    nvfp4 = t.dtype == "U8" and (
        (scale is not None and scale.dtype in FP8) or "nvfp4" in str(s.qc.get("quant_algo", "")).lower()
    )
    if nvfp4:
        shape = (*t.shape[:-1], t.shape[-1] * 2) if t.shape else None
        s.param(t.name, shape, t.count * 2, f"fp4 NVFP4 ({t.dtype})", t, "NVFP4")
        scheme = "NVFP4"
    else:
        scheme = "FP8" if t.dtype in FP8 else f"{t.dtype} scaled"
        s.param(t.name, t.shape, t.count, t.dtype, t, scheme)
    for suffix in _SCALE_SUFFIXES:
        s.book(f"{p}.{suffix}", f"{scheme} {suffix}")


def _under(names: Sequence[str], by_name: Mapping[str, Stored]) -> dict[str, list[str]]:
    """Tensor name -> tensors named beneath it (bitsandbytes stores ``w.weight.absmax``)."""
    out: dict[str, list[str]] = {}
    for name in names:
        i = name.find(".")
        while i != -1:
            if name[:i] in by_name:
                out.setdefault(name[:i], []).append(name)
            i = name.find(".", i + 1)
    return out


def _packed(s: _State, t: Stored, under: Mapping[str, list[str]]) -> bool:
    """Recognise ``t`` as a packed or scaled weight; True when it was claimed."""
    n = t.name
    if n.endswith(".qweight"):
        _gptq_awq(s, t)
    elif n.endswith("_blocks") and s.get(n[: -len("_blocks")] + "_scales") is not None:
        _blocks(s, t)
    elif n.endswith(".weight_packed"):
        _compressed(s, t)
    elif n.endswith(".weight") and t.dtype == "U8" and any(_is_bnb(e) for e in under.get(n, ())):
        _bnb4(s, t, under[n])
    elif n.endswith(".weight") and s.get(n[:-7] + ".SCB") is not None:
        s.param(n, t.shape, t.count, f"int8 bitsandbytes ({t.dtype})", t, "bitsandbytes 8-bit")
        s.book(n[:-7] + ".SCB", "bitsandbytes SCB (row scales)")
        s.book(n[:-7] + ".weight_format", "bitsandbytes weight_format")
    elif t.dtype == "U32" and s.get(n.rsplit(".", 1)[0] + ".scales") is not None:
        _mlx(s, t, s.get(n.rsplit(".", 1)[0] + ".scales"))
    elif n.endswith(".weight") and (t.dtype in FP8 or _has_scale(s, n[:-7])):
        _scaled(s, t, s.get(n[:-7] + ".weight_scale"))
    else:
        return False
    return True


def _is_bnb(name: str) -> bool:
    return any(k in name for k in (".absmax", ".quant_map", ".quant_state.", ".nested_"))


def _has_scale(s: _State, prefix: str) -> bool:
    return any(s.get(f"{prefix}.{x}") is not None for x in ("weight_scale", "weight_scale_inv"))


def classify(tensors: Sequence[Stored], config: Mapping[str, Any] | None = None) -> Split:
    """Each stored tensor as a parameter (with its logical count) or as bookkeeping.

    ``config`` is the quantisation settings (see :func:`quant_config`); shapes decide where it
    is silent. Buffers are not decided here (see the checkpoint reader).
    """
    by_name = {t.name: t for t in tensors}
    s = _State(by_name, config or {})
    under = _under(list(by_name), by_name)
    rest = [t for t in tensors if t.name not in s.claimed and not _packed(s, t, under)]
    quantised = bool(s.schemes) or bool(_method(s.qc))
    for t in rest:
        if t.name in s.claimed:
            continue
        last = t.name.rsplit(".", 1)[-1]
        if quantised and last in _SCALE_SUFFIXES:
            s.book(t.name, f"quantisation {last}")
        else:
            s.params.append(Param(t.name, t.shape, t.count, t.dtype, t))
    return Split(tuple(s.params), tuple(s.extras), tuple(s.notes), tuple(s.schemes))


def describe(qc: Mapping[str, Any], schemes: Sequence[str]) -> str | None:
    """One line on how the checkpoint is quantised, from its config and what was found."""
    method = _method(qc)
    if not method and not schemes:
        return None
    parts = [method or "not declared in config.json"]
    bits = _setting(qc, "bits", "w_bit")
    group = _setting(qc, "group_size", "q_group_size")
    if bits:
        parts.append(f"{bits}-bit")
    if group:
        parts.append(f"group size {group}")
    if qc.get("load_in_4bit"):
        parts.append(f"4-bit {qc.get('bnb_4bit_quant_type', '')}".strip())
    if qc.get("load_in_8bit"):
        parts.append("8-bit")
    if isinstance(qc.get("weight_block_size"), list):
        parts.append("blocks " + "×".join(str(b) for b in qc["weight_block_size"]))
    found = f"; packed tensors found: {', '.join(schemes)}" if schemes else ""
    return ", ".join(parts) + found
