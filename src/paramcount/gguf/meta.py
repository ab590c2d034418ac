"""What a GGUF model needs beyond its tensor tree: the file's metadata and its layers' widths.

``Model.config`` of a GGUF model holds the ``{arch}.*`` keys the planner reads, without the prefix
(``ARCH_KEYS`` in :mod:`paramcount.gguf.reader`), and ``general.file_type``; the same whether
the file was read from disk or from header bytes alone (the web page's upload). A key the file
does not state is an error where it matters, never a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import BadSource, ParamcountError
from .reader import shown

GGUF = "GGUF"  # Model.class_name of a model read from a GGUF file


def is_gguf(model: Any) -> bool:
    return getattr(model, "class_name", None) == GGUF


# No count, width or length of a real model comes near 2^26 (llama.cpp reads them as uint32);
# past it the file is refused rather than planned with absurd arithmetic.
MAX_VALUE = 1 << 26
MAX_LAYERS = 512  # llama.cpp's LLAMA_MAX_LAYERS: get_key_or_arr refuses more blocks


@dataclass(frozen=True)
class Meta:
    """The ``{arch}.*`` metadata of a GGUF model, without the prefix: the one view every planner
    reads it through. Each value is checked where it is read (a key the planner for this
    architecture never reads may be anything): a whole number in range, or an array of them with
    one entry per block (``block_count``, as llama.cpp's ``get_key_or_arr`` wants); anything
    else fails in one line naming the file, the key and the value."""

    arch: str
    values: Mapping[str, Any]
    file_type: str | None = None  # "Q4_K_M", from general.file_type
    source: str | None = None  # the file, for the messages

    def has(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        """The value as the file states it, unchecked: for readers that check it themselves
        (gguf_diff takes a head count only if it is an int); planners use the accessors below."""
        return self.values.get(key, default)

    def integer(self, key: str, default: Any = ..., low: int = 1, high: int = MAX_VALUE) -> Any:
        """A whole number from ``low`` to ``high``; ``default`` when the file does not state the
        key (a missing key without a default is :meth:`missing`)."""
        if key not in self.values:
            if default is ...:
                raise self.missing(key)
            return default
        return self._whole(key, self.values[key], low, high=high)

    def stated(self, key: str) -> bool:
        """Whether the file states ``key`` as a number above 0 (llama.cpp's ``is_mla()`` test)."""
        return self.integer(key, 0, low=0) > 0

    def per_layer(self, key: str, default: Any = ...) -> list[int]:
        """``get_key_or_arr``: one whole number (≥ 0) per block, from a number for all of them or
        an array of ``block_count`` entries; ``default`` (a number or such a list) when absent."""
        n = self.integer("block_count", high=MAX_LAYERS)
        if key not in self.values:
            if default is ...:
                raise self.missing(key)
            return list(default) if isinstance(default, list) else [default] * n
        value = self.values[key]
        if not isinstance(value, (list, tuple)):
            return [self._whole(key, value, 0)] * n
        said = self._layers(key, value, n)
        return [self._whole(key, v, 0, said) for v in value]

    def flags(self, key: str) -> list[bool] | None:
        """A true or false per block (``attention.recurrent_layers``), None when absent."""
        if key not in self.values:
            return None
        value, n = self.values[key], self.integer("block_count", high=MAX_LAYERS)
        said = self._layers(key, value, n, "true or false")
        if not all(isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)) for v in value):
            raise self.bad(key, value, said)
        return [bool(v) for v in value]

    def missing(self, key: str) -> ParamcountError:
        from ..arch.cache import NoLayout

        return NoLayout(f"{self.arch}.{key} is needed for the KV cache, but the file does not state it")

    def bad(self, key: str, value: Any, expected: str) -> BadSource:
        return BadSource(f"{self.arch}.{key}: expected {expected}, got {shown(value)}", source=self.source)

    def _whole(self, key: str, value: Any, low: int, expected: str | None = None, high: int = MAX_VALUE) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.bad(key, value, expected or f"a whole number from {low} to {high:,}")
        return value

    def _layers(self, key: str, value: Any, n: int, what: str = "whole numbers") -> str:
        """What a per-block array must hold; refused unless it is a list of ``n`` entries."""
        said = f"{n} {what}, one per block (block_count)"
        if not isinstance(value, list) or len(value) != n:
            raise self.bad(key, value, said)
        return said


def metadata(model: Any) -> Meta:
    """The model's GGUF metadata, as its reader kept it in ``Model.config``."""
    values = dict(getattr(model, "config", None) or {})
    return Meta(model.model_type, values, file_type(values.get("general.file_type")), model.source)


# ``general.file_type`` values as llama.cpp names them (``enum llama_ftype``; a test holds the
# table equal to gguf-py's ``LlamaFileType``, so reading a file needs no gguf package).
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
    18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
    25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
    32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}  # fmt: skip


def file_type(value: Any) -> str | None:
    """``general.file_type`` as llama.cpp names it (15 -> ``Q4_K_M``), or None if unknown."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return FILE_TYPES.get(value)
