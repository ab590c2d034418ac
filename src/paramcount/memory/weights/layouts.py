"""What one quantised linear layer is stored as: the tensors of each library's layout.

Each function returns the :class:`Part` list of one layer, from its shape alone; the counts
are checked against the libraries themselves in the tests (bitsandbytes' ``quantize_4bit``
on CPU, GPTQ/AWQ checkpoints read back by the quantised-checkpoint reader).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import nbytes
from ...errors import ParamcountError
from ...slots import Slot

BNB_BLOCK = 64  # bitsandbytes Params4bit blocksize (transformers never changes it)
BNB_NESTED_BLOCK = 256  # blocks of absmax values under double quantisation
BNB_MAP = 16  # the nf4/fp4 quant map: 16 fp32 values per layer
BNB_NESTED_MAP = 256  # the 8-bit dynamic map of the nested absmax: 256 fp32 values per layer


@dataclass(frozen=True)
class Part:
    """One stored tensor of one copy: ``elements`` values of ``dtype`` in ``bytes``."""

    what: str  # "weight", "absmax", "qzeros", …
    dtype: str
    elements: int
    bytes: int


def part(what: str, dtype: str, elements: int) -> Part:
    return Part(what, dtype, elements, nbytes(dtype, elements))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def bnb4(n: int, dq: bool) -> tuple[Part, ...]:
    """bitsandbytes Params4bit and its QuantState, per layer (checked against bitsandbytes)."""
    blocks = ceil_div(n, BNB_BLOCK)
    data = Part("packed 4-bit values", "uint8", ceil_div(n, 2), ceil_div(n, 2))
    if not dq:
        return data, part("absmax", "fp32", blocks), part("quant map", "fp32", BNB_MAP)
    return (
        data,
        part("absmax (8-bit)", "uint8", blocks),
        part("quant map", "fp32", BNB_MAP),
        part("nested absmax", "fp32", ceil_div(blocks, BNB_NESTED_BLOCK)),
        part("nested quant map", "fp32", BNB_NESTED_MAP),
        part("nested offset", "fp32", 1),
    )


def gptq(s: Slot, bits: int, group: int) -> tuple[Part, ...]:
    inp, out = s.in_out
    _packs(s, inp * bits, out * bits, "GPTQ")
    groups = 1 if group == -1 else ceil_div(inp, group)
    return (
        part("qweight", "int32", inp * bits // 32 * out),
        part("qzeros", "int32", groups * (out * bits // 32)),
        part("scales", "fp16", groups * out),
        part("g_idx", "int32", inp),
    )


def awq(s: Slot, group: int) -> tuple[Part, ...]:
    inp, out = s.in_out
    _packs(s, 32, out * 4, "AWQ")
    if inp % group:
        raise ParamcountError(
            f"{s.name}: AWQ needs the input width {inp} to be a multiple of group {group}", field="group_size"
        )
    return (
        part("qweight", "int32", inp * (out // 8)),
        part("qzeros", "int32", inp // group * (out // 8)),
        part("scales", "fp16", inp // group * out),
    )


def _packs(s: Slot, in_bits: int, out_bits: int, what: str) -> None:
    if in_bits % 32 or out_bits % 32:
        raise ParamcountError(
            f"{s.name}: {what} packs values into int32; shape {s.shape} does not fill whole int32s", field="dtype"
        )
