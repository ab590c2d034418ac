"""A config's ``quantization_config`` read as a weights scheme: what vLLM's and transformers'
plans share (moved here from ``runtimes.vllm.quant_config`` so that both runtimes read it alike).

GPTQ is planned at 4 or 8 bits and AWQ at 4 (the ``gptq-int4``, ``gptq-int8`` and ``awq-int4``
layouts of :mod:`paramcount.memory.weights.layouts`); other widths are refused in one line.
"""

from __future__ import annotations

from typing import Any

from ...errors import ParamcountError, brief

FP8_METHODS = ("fbgemm_fp8", "fp8")  # vLLM's FBGEMMFp8Config and Fp8Config


def config_scheme(model: Any, runtime: str = "vLLM") -> str | None:
    """The scheme ``runtime`` loads a checkpoint's quantization_config as, where planned here: fp8 for
    FP8 methods, nf4 or fp4 for bitsandbytes 4-bit (BitsAndBytesConfig, bnb_4bit_quant_type)."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    if not isinstance(q, dict):
        return None
    if q.get("quant_method") in FP8_METHODS:
        return "fp8"
    if q.get("quant_method") == "bitsandbytes" and q.get("load_in_4bit"):
        return "fp4" if q.get("bnb_4bit_quant_type") == "fp4" else "nf4"
    if q.get("quant_method") in ("gptq", "awq"):
        return _gptq_awq(q, runtime)
    return None


def _gptq_awq(q: dict[str, Any], runtime: str) -> str:
    """GPTQConfig / AWQConfig (vllm/model_executor/layers/quantization/gptq.py, awq.py): the
    weight bits of ``bits`` (``w_bit``); the plan holds GPTQ at 4 or 8 bits and AWQ at 4."""
    method = q["quant_method"]
    bits = q.get("bits", q.get("w_bit", 4))
    allowed = (4, 8) if method == "gptq" else (4,)
    if isinstance(bits, bool) or bits not in allowed:
        raise ParamcountError(
            f"quantization_config: {method.upper()} at {brief(bits)} bits is not planned for {runtime} "
            f"(planned: {' or '.join(map(str, allowed))} bits)",
            field="quantization_config.bits",
        )
    return f"{method}-int{bits}"


def config_group(model: Any) -> int | None:
    """The group size a GPTQ/AWQ checkpoint's quantization_config names (None: the scheme's 128)."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    if not isinstance(q, dict) or q.get("quant_method") not in ("gptq", "awq"):
        return None
    g = q.get("group_size", q.get("q_group_size"))
    if g is None:
        return None
    valid = (
        isinstance(g, int)
        and not isinstance(g, bool)
        and (0 < g <= 1 << 30 or (g == -1 and q["quant_method"] == "gptq"))
    )
    if not valid:
        also = " or -1 (one group per row)" if q["quant_method"] == "gptq" else ""
        raise ParamcountError(
            f"quantization_config.group_size must be a positive integer{also}, not {brief(g)}",
            field="quantization_config.group_size",
        )
    return g


def unplanned(model: Any, runtime: str, planned: tuple[str, ...]) -> None:
    """Refuse a config whose quantization_config names a method ``runtime``'s plan does not load (its
    shapes at bf16 would look exact and be wrong); --dtype plans the shapes at a named scheme instead."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    if q is None:
        return
    name = q.get("quant_method") if isinstance(q, dict) else None
    if isinstance(q, dict) and name == "bitsandbytes" and not q.get("load_in_4bit"):
        name = "bitsandbytes (8-bit)"
    if name not in planned:
        raise ParamcountError(
            f"{brief(name)} is not planned for {runtime} from a config (planned: "
            f"{', '.join('bitsandbytes 4-bit' if p == 'bitsandbytes' else p for p in planned)}); "
            "give --dtype to plan the weights at a scheme",
            field="quantization_config.quant_method",
        )
