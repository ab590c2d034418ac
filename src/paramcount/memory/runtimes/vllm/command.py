"""The ``vllm serve`` command line for a plan: one unwrapped line whose memory flags, fed back to
``paramcount memory --runtime vllm``, give the same plan.

``--quantization fp8`` quantises a 16-bit checkpoint's linear layers as it loads
(vllm/model_executor/layers/quantization/fp8.py ``Fp8Config``); a checkpoint quantised already
needs no flag (vLLM reads its ``quantization_config``).
"""

from __future__ import annotations

import shlex
from fractions import Fraction
from typing import Any

ONLINE = {"fp8": "fp8"}  # schemes vLLM makes from a 16-bit checkpoint at load time, and the flag's value


def serve_command(model: Any, scheme: str, stored: str, context: int, utilization: Fraction, tp: int = 1) -> str:
    """``vllm serve ID --max-model-len N --gpu-memory-utilization U [--quantization Q] [-tp N]``;
    ``stored`` is the scheme the checkpoint holds (no flag when it is ``scheme``)."""
    words = ["vllm", "serve", shlex.quote(str(model.name)), "--max-model-len", str(context)]
    words += ["--gpu-memory-utilization", f"{float(utilization):g}"]
    if scheme != stored and scheme in ONLINE:
        words += ["--quantization", ONLINE[scheme]]
    if tp > 1:
        words += ["--tensor-parallel-size", str(tp)]
    return " ".join(words)
