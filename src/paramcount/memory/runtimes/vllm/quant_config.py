"""A checkpoint's ``quantization_config`` as vLLM follows it: the linear layers it names stay in
the model's 16-bit dtype.

vLLM's FP8 methods quantise linear layers only and skip those the config lists:
``FBGEMMFp8Config`` (quant_method ``fbgemm_fp8``, Meta's Llama 3.1 FP8 checkpoints) reads
``modules_to_not_convert``, ``Fp8Config`` reads ``ignored_layers`` (else ``modules_to_not_convert``);
``get_quant_method`` returns ``UnquantizedLinearMethod`` where ``is_layer_skipped`` finds the layer's prefix
in that list (vllm/model_executor/layers/quantization/fbgemm_fp8.py, fp8.py, utils/quant_utils.py).

GPTQ and AWQ checkpoints are planned at their ``bits`` and ``group_size`` (GPTQ 4 or 8 bits, AWQ
4; other widths refused in one line); AWQ's ``modules_to_not_convert`` stay 16-bit where a
listed name is part of a layer's name (``is_layer_skipped_awq``). How each kernel then holds
the layers is :mod:`paramcount.memory.runtimes.vllm.marlin`.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from ....errors import ParamcountError, brief
from ...weights.base import Row
from ...weights.layouts import Part
from ...weights.quant_config import config_group, config_scheme

__all__ = ["config_group", "config_scheme"]  # shared with the transformers plan (weights.quant_config)

SRC_IGNORED = (
    "vllm/model_executor/layers/quantization/fbgemm_fp8.py FBGEMMFp8Config (modules_to_not_convert), fp8.py "
    "Fp8Config (ignored_layers), utils/quant_utils.py is_layer_skipped; awq.py is_layer_skipped_awq "
    "(AWQConfig, AWQMarlinConfig: modules_to_not_convert)"
)
IGNORE_KEY = {"fbgemm_fp8": "modules_to_not_convert", "fp8": "ignored_layers"}
_LAYER_NAME = re.compile(r"^(?P<stack>.*\.layers)\.(?P<i>\d+)\.(?P<suffix>.+)$")
_RANGE = re.compile(r"^(?P<stack>.*\.layers)\.(?P<a>\d+)(?:–(?P<b>\d+))?\.(?P<suffix>.+)\.weight$")


def fp8_ignored(model: Any) -> list[str] | None:
    """The linear layers an FP8 checkpoint's quantization_config keeps unquantised (None: no such config)."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    if not isinstance(q, dict) or q.get("quant_method") not in IGNORE_KEY:
        return None
    # Fp8Config.from_config falls back to modules_to_not_convert where ignored_layers is absent
    names = q.get(IGNORE_KEY[q["quant_method"]]) or q.get("modules_to_not_convert") or []
    return [n for n in names if isinstance(n, str)][:100_000]


def awq_keep(model: Any, rows_for: Any) -> tuple[str | None, list[str]]:
    """The keep items for an AWQ checkpoint whose quantization_config lists ``modules_to_not_convert``
    (AWQConfig / AWQMarlinConfig: ``is_layer_skipped_awq`` leaves a linear layer unquantised where a
    listed name is a substring of its prefix): the scheme's own (outside the decoder layers,
    routers) and each quantised module so named; (None, []) when nothing is listed. A name
    for some decoder layers only is refused (this plan holds the layers as one row)."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    names = q.get("modules_to_not_convert") if isinstance(q, dict) and q.get("quant_method") == "awq" else None
    if names is not None and not isinstance(names, list):
        raise ParamcountError(
            f"quantization_config.modules_to_not_convert must be a list of module names, not {brief(names)}",
            field="quantization_config.modules_to_not_convert",
        )
    names = [n for n in (names or []) if isinstance(n, str) and n][:1000]
    if not names:
        return None, []
    some = [n for n in names if _LAYER_NAME.match(n + ".x")]
    if some:
        raise ParamcountError(
            f"quantization_config.modules_to_not_convert keeps {brief(some[0])} in some layers only; the vLLM "
            "plan follows AWQ names that hold in every layer or outside them",
            field="quantization_config.modules_to_not_convert",
        )
    base = "outside,router"
    modules = [r.name.rpartition(".")[0] for r in rows_for(base).rows if r.role == "quantised"]
    listed = list(dict.fromkeys(m for m in modules if any(n in m for n in names)))
    return (",".join([base, *listed]) if listed else None), listed


def kept_suffixes(names: list[str], layers: int) -> tuple[list[str], list[tuple[int, str]]]:
    """Keep items: module suffixes kept in every decoder layer and the names outside the layers;
    and the (layer, suffix) pairs kept in some layers only."""
    by_suffix: dict[str, set[int]] = {}
    outside = []
    for n in names:
        m = _LAYER_NAME.match(n)
        if m:
            by_suffix.setdefault(m.group("suffix"), set()).add(int(m.group("i")))
        else:
            outside.append(n)
    every = [*dict.fromkeys(outside), *(s for s, ls in by_suffix.items() if len(ls) >= layers)]
    some = sorted((i, s) for s, ls in by_suffix.items() if len(ls) < layers for i in ls)
    return every, some


def kept_rows(rows: list[Any], some: list[tuple[int, str]], act_bytes: int) -> list[Any]:
    """A row per linear layer kept 16-bit in some layers only: the bytes it holds beyond its fp8 copy,
    counted in that layer (so pipeline stages and TP shares find it)."""
    out = []
    for layer, suffix in some:
        row = next((r for r in rows if _holds(r, layer, suffix)), None)
        if row is None:
            continue
        elements = sum(p.elements for p in row.parts if p.dtype.startswith("fp8"))
        m = _RANGE.match(row.name)
        assert m is not None
        extra = elements * (act_bytes - 1)
        part = Part("kept 16-bit by the checkpoint's quantization_config, beyond its fp8 copy", "bf16", 0, extra)
        name = f"{m.group('stack')}.{layer}.{suffix}.weight"
        out.append(Row(name, 1, row.shape, "16-bit (quantization_config)", "bookkeeping", (part,), row.kind))
    return out


def matching(items: list[str], rows: list[Any]) -> list[str]:
    """The items that name a tensor of ``rows`` (as --keep matches them: the name, or a module of it)."""
    names = [r.name for r in rows]
    pats = [(i, (i, f"{i}.*", f"*.{i}", f"*.{i}.*")) for i in items]
    return [i for i, ps in pats if any(fnmatch.fnmatchcase(n, p) for n in names for p in ps)]


def _holds(r: Any, layer: int, suffix: str) -> bool:
    """Whether ``r`` is the fp8 row of ``suffix`` covering ``layer``."""
    m = _RANGE.match(r.name)
    if m is None or m.group("suffix") != suffix or r.role != "quantised":
        return False
    a = int(m.group("a"))
    return a <= layer <= int(m.group("b") or a)
