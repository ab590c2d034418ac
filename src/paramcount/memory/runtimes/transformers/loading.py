"""How transformers loads a checkpoint's ``quantization_config`` on a GPU: kept or dequantised.

transformers 5.23 decides in each quantizer's ``validate_environment`` (``quantizers/``):

- ``mxfp4`` (gpt-oss; ``quantizer_mxfp4.py``): a pre-quantised checkpoint stays MXFP4 on a CUDA
  GPU of compute capability ≥ 7.5 with Triton ≥ 3.4 and the ``kernels`` package; below 7.5, or
  on a device that is not CUDA, XPU or CPU (Apple's MPS), it sets ``dequantize = True`` and loads
  the experts in bf16;
- ``fp8`` (``quantizer_finegrained_fp8.py``): stays FP8 on compute capability ≥ 8.9 (Ada,
  Hopper, Blackwell); on 8.x below 8.9 and older it dequantises to bf16, and so without a CUDA or
  XPU device;
- ``bitsandbytes`` (``quantizer_bnb_4bit.py``, ``quantizer_bnb_8bit.py``): stays quantised; it
  needs a CUDA, ROCm or XPU device.

A dequantised checkpoint's quantised tensors take 2 bytes a parameter (bf16) and their scales
go; its other tensors stay as stored. The GPU's capability is NVIDIA's published figure
(:mod:`paramcount.memory.core.gpus`); an AMD card's (ROCm reports its gfx version) and the software
found on the machine (Triton, ``kernels``) are not modelled: the line says what is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ....model import Model
from ...core.gpus import GPU
from ...weights.base import Row, Weights

_FILES = {"mxfp4": "quantizer_mxfp4.py", "fp8": "quantizer_finegrained_fp8.py"}
# method -> (the compute capability it stays quantised from, what it needs besides)
_NEEDS = {
    "mxfp4": ((7, 5), "with Triton ≥ 3.4 and the kernels package (assumed installed)"),
    "fp8": ((8, 9), ""),
}
_NAMES = {"mxfp4": "MXFP4", "fp8": "FP8", "bitsandbytes": "bitsandbytes"}
_WHAT = {"mxfp4": "the experts", "fp8": "the weights"}  # the MXFP4 quantizer converts gpt-oss's experts only


@dataclass(frozen=True)
class Loading:
    """What transformers does with the checkpoint's quantisation: ``kept`` True (stays quantised),
    False (dequantised to bf16) or None (no GPU named, or one whose answer is not modelled)."""

    method: str
    kept: bool | None
    why: str


def method(model: Model) -> str | None:
    """The config's ``quantization_config.quant_method`` where this module models it."""
    q = (model.config or {}).get("quantization_config")
    name = q.get("quant_method") if isinstance(q, Mapping) else None
    return name if name in _NAMES else None


def loading(model: Model, gpu: GPU | None) -> Loading | None:
    """How transformers loads ``model``'s quantised weights on ``gpu``; None if it has none."""
    name = method(model)
    if name is None:
        return None
    word = _NAMES[name]
    if name == "bitsandbytes":
        return Loading(name, True, f"{word} (quantization_config): the weights stay quantised on a CUDA GPU")
    least, needs = _NEEDS[name]
    low = f"{least[0]}.{least[1]}"
    floor = f"compute capability ≥ {low}"
    what, source = _WHAT[name], f"transformers 5.23 quantizers/{_FILES[name]} validate_environment"
    if gpu is None or (gpu.capability is None and gpu.kind != "apple"):
        where = "no GPU named (--gpu)" if gpu is None else f"{gpu.name}'s compute capability not modelled"
        said = f"transformers keeps {what} in {word} on a GPU of {floor} {needs}".rstrip()
        return Loading(name, None, f"{word} (quantization_config), {where}: {said}, else dequantises them to bf16")
    if gpu.capability is None:  # Apple: MPS is neither CUDA nor XPU
        return Loading(name, False, f"{word} dequantised to bf16 on {gpu.name}: not a CUDA GPU ({source})")
    has = f"{gpu.capability[0]}.{gpu.capability[1]}"
    if gpu.capability >= least:
        kept = f"{word} kept on {gpu.name}: compute capability {has} ≥ {low}{', ' + needs if needs else ''}"
        return Loading(name, True, f"{kept} ({source})")
    why = f"compute capability {has} < {low}"
    return Loading(name, False, f"{word} dequantised to bf16 on {gpu.name}: {why} ({source})")


_FLOATS = ("F64", "F32", "F16", "BF16")


def dequantised(w: Weights, why: str) -> Weights:
    """``w`` (a checkpoint's stored weights) as transformers holds them once it dequantises:
    every quantised tensor in bf16 without its scales, the others as stored."""
    from dataclasses import replace

    from ...weights.layouts import part

    def bf16(r: Row) -> Row:
        if r.format in _FLOATS or r.role in ("tied", "bookkeeping"):
            return r
        return Row(
            r.name, r.count, r.shape, "bf16 (dequantised)", "dequantised", (part("weight", "bf16", _n(r)),), r.kind
        )

    rows = tuple(bf16(r) for r in w.rows if r.role != "bookkeeping")
    return replace(w, rows=rows, options=f"{w.options}, dequantised to bf16", note=f"{w.note}; {why}")


def _n(r: Row) -> int:
    n = 1
    for d in r.shape:
        n *= int(d)
    return n


def shapes_note(model: Model, gpu: GPU | None, scheme: str) -> str | None:
    """For weights planned from the shapes at ``scheme`` (no checkpoint's stored bytes) of a
    config that has a ``quantization_config``: what transformers would load instead."""
    found = loading(model, gpu)
    if found is None:
        return None
    return f"{found.why}; the weights here are {scheme} from the shapes: a checkpoint folder gives the bytes it loads"
