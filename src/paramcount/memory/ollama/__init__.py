"""Ollama's own memory plan: the layers (``num_gpu``) it would offload to a GPU, and why.

See :mod:`.plan` for the version modelled and :mod:`.compare` for llama.cpp's plan beside it.
"""

from __future__ import annotations

from typing import Any

from ..gpus import GPU
from .plan import OllamaPlan
from .settings import Asked

__all__ = ["Asked", "OllamaPlan", "plan"]


def plan(model: Any, card: GPU, asked: Asked | None = None, count: int = 1, free: int | None = None) -> OllamaPlan:
    """Ollama v0.12.10's estimate for ``model`` (read from a GGUF file or ``ollama:NAME``) on
    ``count`` GPUs like ``card``, each with ``free`` bytes free (default: its usable memory), with
    llama.cpp's plan for the same settings beside it."""
    from .compare import compare
    from .plan import estimate_plan

    return compare(model, estimate_plan(model, card, asked, count, free))
