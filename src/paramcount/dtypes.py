"""Storage formats as integer tables: elements per block and bytes per block.

A format stores ``elements`` values in ``bytes`` bytes; a tensor of n values takes
n / elements × bytes bytes, and n must be a whole number of blocks. Bits per weight are
never stored or rounded: 4-bit integers are ``(2, 1)``, GGUF Q4_K is ``(256, 144)``.

The GGUF rows are copied as integers from gguf-py's ``GGML_QUANT_SIZES`` (the ``gguf``
package, version 0.19.0); a test holds them equal to it. Q8_1 is left out: it is an
intermediate type of llama.cpp's dot products, never stored in a file, and gguf-py's
40-byte block disagrees with ggml's 36-byte ``block_q8_1``.
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import ParamcountError


class Block(NamedTuple):
    """``elements`` values stored in ``bytes`` bytes (equal to a plain tuple)."""

    elements: int
    bytes: int


DTYPES: dict[str, Block] = {
    # Plain element types, as torch / safetensors store them.
    "fp64": Block(1, 8),
    "fp32": Block(1, 4),
    "fp16": Block(1, 2),
    "bf16": Block(1, 2),
    "fp8_e4m3": Block(1, 1),
    "fp8_e5m2": Block(1, 1),
    "int64": Block(1, 8),
    "int32": Block(1, 4),
    "int16": Block(1, 2),
    "int8": Block(1, 1),
    "uint8": Block(1, 1),
    "int4": Block(2, 1),  # packed two per byte, no scales
    # GGUF / GGML types: (block size, type size) as ggml defines them.
    "F64": Block(1, 8),
    "F32": Block(1, 4),
    "F16": Block(1, 2),
    "BF16": Block(1, 2),
    "I64": Block(1, 8),
    "I32": Block(1, 4),
    "I16": Block(1, 2),
    "I8": Block(1, 1),
    "Q4_0": Block(32, 18),  # 16 bytes of nibbles + an f16 scale
    "Q4_1": Block(32, 20),  # + an f16 minimum
    "Q5_0": Block(32, 22),
    "Q5_1": Block(32, 24),
    "Q8_0": Block(32, 34),  # 32 int8 + an f16 scale
    "Q2_K": Block(256, 84),
    "Q3_K": Block(256, 110),
    "Q4_K": Block(256, 144),
    "Q5_K": Block(256, 176),
    "Q6_K": Block(256, 210),
    "Q8_K": Block(256, 292),
    "IQ2_XXS": Block(256, 66),
    "IQ2_XS": Block(256, 74),
    "IQ2_S": Block(256, 82),
    "IQ3_XXS": Block(256, 98),
    "IQ3_S": Block(256, 110),
    "IQ1_S": Block(256, 50),
    "IQ1_M": Block(256, 56),
    "IQ4_NL": Block(32, 18),
    "IQ4_XS": Block(256, 136),
    "TQ1_0": Block(256, 54),
    "TQ2_0": Block(256, 66),
    "MXFP4": Block(32, 17),  # 32 fp4 values + an E8M0 scale
    "NVFP4": Block(64, 36),
    "Q1_0": Block(128, 18),
}

# The GGUF / GGML names above (upper case, as ggml spells them).
GGML_TYPES = tuple(k for k in DTYPES if k[0].isupper())

# The type ids a GGUF tensor info stores (ggml.h's ``enum ggml_type``; gaps are types llama.cpp
# removed), so that a GGUF header is read with no package beyond this one; a test holds them
# equal to gguf-py's ``GGMLQuantizationType``.
GGML_IDS: dict[str, int] = {
    "F32": 0,
    "F16": 1,
    "Q4_0": 2,
    "Q4_1": 3,
    "Q5_0": 6,
    "Q5_1": 7,
    "Q8_0": 8,
    "Q2_K": 10,
    "Q3_K": 11,
    "Q4_K": 12,
    "Q5_K": 13,
    "Q6_K": 14,
    "Q8_K": 15,
    "IQ2_XXS": 16,
    "IQ2_XS": 17,
    "IQ3_XXS": 18,
    "IQ1_S": 19,
    "IQ4_NL": 20,
    "IQ3_S": 21,
    "IQ2_S": 22,
    "IQ4_XS": 23,
    "I8": 24,
    "I16": 25,
    "I32": 26,
    "I64": 27,
    "F64": 28,
    "IQ1_M": 29,
    "BF16": 30,
    "TQ1_0": 34,
    "TQ2_0": 35,
    "MXFP4": 39,
    "NVFP4": 40,
    "Q1_0": 41,
}

_ALIASES = {
    "float64": "fp64",
    "double": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "fp8": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "f8_e4m3": "fp8_e4m3",
    "f8_e5m2": "fp8_e5m2",
}


def canonical(name: str) -> str:
    """The table key for a dtype name: ``float16`` -> ``fp16``, ``q4_k`` -> ``Q4_K``."""
    if not isinstance(name, str):
        raise ParamcountError(f"dtype must be a name, not {name!r}", field="dtype")
    if name in DTYPES:
        return name
    low = name.lower().removeprefix("torch.")
    if low in DTYPES:
        return low
    if low in _ALIASES:
        return _ALIASES[low]
    if name.upper() in DTYPES and name.upper() in GGML_TYPES:
        return name.upper()
    raise ParamcountError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}", field="dtype")


def block(name: str) -> Block:
    """(elements per block, bytes per block) of a dtype or quant type."""
    return DTYPES[canonical(name)]


def nbytes(dtype: str, n_elements: int) -> int:
    """Exact bytes of ``n_elements`` values stored as ``dtype``.

    The count must fill whole blocks (a Q4_K tensor holds multiples of 256 values, a
    packed int4 tensor an even number); anything else is a ParamcountError, never rounded.
    """
    key = canonical(dtype)
    per, size = DTYPES[key]
    if not isinstance(n_elements, int) or isinstance(n_elements, bool) or n_elements < 0:
        raise ParamcountError(f"element count must be a whole number ≥ 0, not {n_elements!r}", field="dtype")
    if n_elements % per:
        raise ParamcountError(
            f"{n_elements:,} values do not fill whole {key} blocks of {per}"
            f" ({n_elements // per:,} blocks leave {n_elements % per} over)",
            field="dtype",
        )
    return n_elements // per * size
