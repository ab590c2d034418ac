"""The ``vllm serve`` command line for a plan: one unwrapped line whose memory flags, fed back to
``paramcount memory --runtime vllm``, give the same plan.

``--quantization fp8`` quantises a 16-bit checkpoint's linear layers as it loads
(vllm/model_executor/layers/quantization/fp8.py ``Fp8Config``); a checkpoint quantised already
needs no flag (vLLM reads its ``quantization_config``).
"""

from __future__ import annotations

import shlex
from fractions import Fraction

ONLINE = {"fp8": "fp8"}  # schemes vLLM makes from a 16-bit checkpoint at load time, and the flag's value


def serve_command(ref: str, scheme: str, stored: str, context: int, utilization: Fraction, tp: int = 1) -> str:
    """``vllm serve REF --max-model-len N --gpu-memory-utilization U [--quantization Q] [-tp N]``
    (``ref``: a Hub id or a local folder); ``stored`` is the scheme the checkpoint holds (no flag
    when it is ``scheme``)."""
    words = ["vllm", "serve", shlex.quote(ref), "--max-model-len", str(context)]
    words += ["--gpu-memory-utilization", f"{float(utilization):g}"]
    if scheme != stored and scheme in ONLINE:
        words += ["--quantization", ONLINE[scheme]]
    if tp > 1:
        words += ["--tensor-parallel-size", str(tp)]
    return " ".join(words)
