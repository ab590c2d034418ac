"""What a plan's weights are by default, and what a scheme computes in (activations, and by
default the KV cache)."""

from __future__ import annotations

from ...model import Model
from .base import scheme as find
from .stored import compute_dtype as stored_dtype
from .stored import is_checkpoint


def default_scheme(model: Model) -> str:
    """``stored`` for a model read from weight files, else bf16."""
    return "stored" if is_checkpoint(model) else "bf16"


def compute_dtype(scheme: str, model: Model | None = None) -> str:
    """What a scheme computes in, which activations and (by default) the KV cache use: fp32 and
    fp16 themselves; fp16 for GGUF (llama.cpp's default f16 cache), GPTQ and AWQ (fp16 kernels);
    bf16 for the rest (bitsandbytes' and transformers' usual compute dtype); for ``stored``,
    the checkpoint's (:func:`paramcount.memory.weights.stored.compute_dtype`)."""
    s = find(scheme)
    if s.method == "stored":
        return stored_dtype(model)
    if s.qtype in ("fp32", "fp16"):
        return s.qtype
    return "fp16" if s.method in ("gguf", "gptq", "awq") else "bf16"
