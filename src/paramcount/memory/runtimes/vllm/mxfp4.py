"""MXFP4 experts (gpt-oss) as vLLM holds them on the GPU named: each kernel backend pads the
experts' intermediate and hidden sizes before it allocates them.

vllm/model_executor/layers/quantization/mxfp4.py ``get_mxfp4_backend`` picks the backend by the
GPU (FlashInfer on SM100; Triton's kernels on SM90 and SM100 without FlashInfer; Marlin below SM90
and from SM110) and ``Mxfp4MoEMethod.create_weights`` pads: Marlin the intermediate size to 128
and the hidden size to 256 (its kernel needs n % 256 == 0 and k % 128 == 0), FlashInfer's SM100
path both to 256, Triton the intermediate size to 64. Each expert then holds uint8 weights (two
fp4 values a byte), one E8M0 scale per 32 values and bf16 biases, all at the padded sizes. vLLM
0.10.1 on an H100 took the Marlin path (its log in vllm-project/vllm#23278 warns "Weight-only FP4
compression will be used leveraging the Marlin kernel"); later releases log "Using Triton backend"
there (vllm-project/vllm#33155).
"""

from __future__ import annotations

import re
from typing import Any

from ....records import replace
from ...weights.layouts import Part

SRC_MXFP4 = (
    "vllm/model_executor/layers/quantization/mxfp4.py get_mxfp4_backend, Mxfp4MoEMethod.create_weights "
    "(w13/w2 weights, scales and biases at the padded sizes)"
)
# (backend, intermediate alignment, hidden alignment)
MARLIN = ("Marlin", 128, 256)
TRITON = ("Triton", 64, 1)
FLASHINFER_SM100 = ("FlashInfer (SM100)", 256, 256)
_EXPERT = re.compile(r"\.experts\.(gate_up_proj|down_proj)(_bias)?$")
MXFP4_BLOCK = 32


def backend(capability: tuple[int, int] | None, version: str) -> tuple[str, int, int]:
    """The backend get_mxfp4_backend picks on a GPU of ``capability`` (None: an H100's, 9.0)."""
    cap = capability or (9, 0)
    if (10, 0) <= cap < (11, 0):
        return FLASHINFER_SM100
    if cap >= (9, 0) and cap < (11, 0) and version not in ("0.6", "0.8", "0.10"):
        return TRITON
    return MARLIN


def _round(x: int, a: int) -> int:
    return -(-x // a) * a


def held_rows(rows: Any, capability: tuple[int, int] | None, version: str, tp: int) -> tuple[list[Any], str | None]:
    """The rows with MXFP4 experts (and their biases) as vLLM's backend holds them, split over
    ``tp`` ranks (the intermediate size is padded per rank); unchanged without MXFP4 experts."""
    rows = list(rows)
    sizes = _sizes(rows)
    if sizes is None:
        return rows, None
    name, a_i, a_h = backend(capability, version)
    i_all, h = sizes
    i_pad = _round(i_all // tp, a_i) * tp
    h_pad = _round(h, a_h)
    out = [_held(r, i_pad, h_pad, name) if _EXPERT.search(r.name) else r for r in rows]
    note = (
        f"MXFP4 experts as vLLM's {name} backend holds them: intermediate {i_all // tp:,} per rank padded to "
        f"{i_pad // tp:,}, hidden {h:,} to {h_pad:,} (weights, E8M0 scales and bf16 biases)"
    )
    return out, note


_CONFIG_EXPERT = re.compile(r"\.experts\.(gate_up_proj|down_proj)$")


def config_mxfp4(model: Any) -> bool:
    """Whether ``model``'s config says its experts ship as MXFP4 (gpt-oss: ``quant_method`` mxfp4)."""
    q = (getattr(model, "config", None) or {}).get("quantization_config")
    return isinstance(q, dict) and q.get("quant_method") == "mxfp4"


def config_rows(rows: Any) -> list[Any]:
    """A config's rows with its experts as an MXFP4 checkpoint ships them (gpt-oss's
    quantization_config: the experts quantised, ``modules_to_not_convert`` — attention, router,
    embeddings, head — and the biases in bf16): transformers' (experts, in, out) parameters become
    vLLM's (experts, out, in) uint8 weights, two fp4 values a byte, and one E8M0 scale per 32."""
    out = []
    for r in rows:
        if _CONFIG_EXPERT.search(r.name) and len(r.shape) == 3:
            experts, k, n = (int(d) for d in r.shape)
            nbytes = experts * n * (k // 2 + k // MXFP4_BLOCK)
            part = Part("uint8 weights and E8M0 scales (quantization_config)", "uint8", nbytes, nbytes)
            out.append(replace(r, shape=(experts, n, k), format="mxfp4 (quantization_config)", parts=(part,)))
        else:
            out.append(r)
    return out


def _sizes(rows: list[Any]) -> tuple[int, int] | None:
    """(intermediate, hidden) of the MXFP4 experts: gate_up_proj is (experts, 2 × intermediate, hidden)."""
    for r in rows:
        if r.format.startswith("mxfp4") and r.name.endswith(".experts.gate_up_proj") and len(r.shape) == 3:
            return r.shape[1] // 2, r.shape[2]
    return None


def _held(r: Any, i_pad: int, h_pad: int, name: str) -> Any:
    """One expert tensor at vLLM's padded sizes: (experts, n, k) uint8 with k/32 scales, or a bias."""
    experts = r.shape[0]
    gate_up = ".gate_up_proj" in r.name
    n, k = (2 * i_pad, h_pad) if gate_up else (h_pad, i_pad)
    if r.name.endswith("_bias"):
        nbytes = experts * n * 2
        part = Part(f"bf16 bias, padded for {name}", "bf16", experts * n, nbytes)
    else:
        nbytes = experts * n * (k // 2 + k // MXFP4_BLOCK)
        part = Part(f"uint8 weights and E8M0 scales, padded for {name}", "uint8", nbytes, nbytes)
    return replace(r, parts=(part,))
