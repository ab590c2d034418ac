"""Ollama's own memory plan: the layers (``num_gpu``) it would offload to a GPU, and why.

:mod:`.plan` says which Ollama is modelled (v0.12.10's estimate, or an earlier release's through
:mod:`.versions`: ``Asked(version="0.6.5")``) and :mod:`.current` what today's Ollama decides
instead; :mod:`paramcount.memory.runtimes.ollama_vs_llamacpp` sets llama.cpp's plan beside it (a
runtime never imports another).
"""

from __future__ import annotations

from .plan import OllamaPlan, estimate_plan
from .settings import Asked

__all__ = ["Asked", "OllamaPlan", "estimate_plan"]
