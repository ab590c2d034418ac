"""Plain dimensions for a model that does not exist yet: a family plus config fields."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ..errors import ParamcountError
from .configfile import MAX_DEPTH, depth

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

# Friendly flags -> the standard transformers field each family reads (or aliases).
FLAGS = {
    "layers": "num_hidden_layers",
    "hidden": "hidden_size",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "intermediate": "intermediate_size",
    "vocab": "vocab_size",
    "context": "max_position_embeddings",
}


def parse_set(items: Sequence[str]) -> dict[str, Any]:
    """``name=value`` pairs; a value is read as JSON (numbers, true, null, lists) else as text."""
    fields: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name.strip():
            raise ParamcountError(f"expected name=value, got {item!r}", field="--set")
        try:
            fields[name.strip()] = json.loads(text, parse_constant=_infinite, parse_float=_finite)
            if depth(fields[name.strip()]) > MAX_DEPTH:  # parsed, but too deep for what walks it
                raise RecursionError
        except _NotFinite:
            why = f"{name.strip()}: {text[:40]!r} holds NaN or infinity, not a finite number"
            raise ParamcountError(why, field="--set") from None
        except json.JSONDecodeError:
            fields[name.strip()] = text
        except (RecursionError, ValueError):  # [[[[… past the recursion limit; 5,000-digit ints
            why = "nested too deeply" if text.lstrip().startswith(("[", "{")) else "a number too long"
            raise ParamcountError(f"{name.strip()}: {why} to read", field="--set") from None
    return fields


class _NotFinite(Exception):
    """NaN, Infinity or a float past 1.8e308 in a --set value: no field means any of them."""


def _infinite(text: str) -> float:
    raise _NotFinite(text)


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0:  # inf - inf and nan - nan are NaN: 1e400 reads as inf
        raise _NotFinite(text)
    return value


def config(arch: str, dims: Mapping[str, int | None], extra: Mapping[str, Any] = ()) -> dict[str, Any]:
    """A config dict for family ``arch`` from flag values (None = not given) and extra fields."""
    from ..arch import family

    rename = family(arch, f"--arch {arch}").flag_fields
    raw: dict[str, Any] = {"model_type": arch}
    raw.update({rename.get(FLAGS[k], FLAGS[k]): v for k, v in dims.items() if v is not None})
    raw.update(extra)
    return raw
