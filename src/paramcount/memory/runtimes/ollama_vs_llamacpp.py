"""Ollama's estimate beside llama.cpp's plan for the same load, term by term, and why they differ.

Ollama v0.12.10's llama engine hands the model to llama.cpp with ``n_ctx = num_ctx·num_parallel``,
``n_seq_max = num_parallel``, flash attention on or off (never auto), one KV cache type for K and
V, and embeddings on (``llama/llama.go`` ``NewContextParams``, ``runner/llamarunner`` ``loadModel``).
llama.cpp's plan here is made with those settings, every layer on the GPU.
"""

from __future__ import annotations

from typing import Any

from ...errors import ParamcountError
from ..core.gpus import GPU
from .ollama import Asked, OllamaPlan, estimate_plan
from .ollama.layers import Device

WHY = {
    "weights": "both are tensor bytes; Ollama counts the output layer (output_norm + output, or token_embd "
    "when tied) on the GPU and no input layer, llama.cpp keeps token_embd in host memory and counts "
    "its GPU buffer as allocated",
    "kv_cache": "Ollama: every layer at num_ctx·num_parallel cells, unpadded (fs/ggml/ggml.go GraphSize); "
    "llama.cpp pads the cells per stream to 256 and gives sliding-window layers only their window",
    "compute": "Ollama's graph is a formula per architecture (GraphSize), or GQA × a sixth of the KV cache for "
    "the rest (estimateGPULayers); llama.cpp's compute and output buffers are what ggml's allocator "
    "reserves for the worst-case micro-batch",
    "reserve": "Ollama sets aside MinimumMemory (457 MiB; Metal 512 MiB) and one more layer on each GPU "
    "(estimateGPULayers); the llama.cpp plan's overhead is the CUDA context",
    "total": "Ollama's all-layers figure (what it needs to offload every layer) against llama.cpp's plan "
    "with every layer on the GPU",
}


def plan(
    model: Any, card: GPU, asked: Asked | None = None, count: int = 1, free: int | None = None, files: Any = None
) -> OllamaPlan:
    """Ollama's estimate (v0.12.10's, or ``asked.version``'s) for ``model`` (a GGUF file or ``ollama:NAME``, or
    ``files``: its headers already read) on ``count`` GPUs like ``card``, each with ``free`` bytes
    free (default: its usable memory), with llama.cpp's plan for the same settings beside it."""
    return compare(model, estimate_plan(model, card, asked, count, free, files))


def llama_cpp_plan(model: Any, o: OllamaPlan) -> Any:
    """llama.cpp's plan with the settings Ollama's runner passes, or None when llama.cpp's planner
    cannot plan this model (its message is kept in the notes by :func:`compare`)."""
    from . import planner

    s = o.settings
    kv = s.kv_type or "f16"
    flash = "on" if s.flash else "off"
    p = planner(model, None, "llama.cpp", for_ollama=True, flash_attn=flash, type_k=kv, type_v=kv, embeddings=True)
    return p.plan(s.context, s.parallel, "Ollama's num_ctx")


def rows(o: OllamaPlan, llama: Any) -> tuple[dict[str, Any], ...]:
    """Ollama's figure (every layer on the GPU), llama.cpp's, their difference, and why."""
    e = o.full
    weights = sum(b or 0 for b in o.sizes.blocks) + o.sizes.output + o.sizes.projector
    minimum = Device(o.plan.settings["library"], 0).minimum
    theirs = {t.key: t.bytes for t in llama.device_terms}
    pairs = {
        "weights": (weights, theirs.get("weights", 0)),
        "kv_cache": (sum(o.sizes.kv), theirs.get("kv_cache", 0) + theirs.get("state", 0)),
        "compute": (e.graph, theirs.get("compute", 0) + theirs.get("output", 0)),
        "reserve": (minimum + e.buffer, theirs.get("overhead", 0)),
        "total": (e.vram, llama.total),
    }
    return tuple(
        {"term": k, "ollama": a, "llama_cpp": b, "difference": a - b, "why": WHY[k]} for k, (a, b) in pairs.items()
    )


def compare(model: Any, o: OllamaPlan) -> OllamaPlan:
    """``o`` with llama.cpp's plan and the rows beside it (none, and a note, when llama.cpp's
    planner refuses the model)."""
    from dataclasses import replace

    try:
        llama = llama_cpp_plan(model, o)
    except ParamcountError as e:
        return _noted(o, f"llama.cpp's plan is not shown: {e.message}")
    if llama.partial:  # weights only: no KV or compute buffers to set beside Ollama's
        return _noted(o, f"llama.cpp's plan is not shown: it has the weights only ({llama.partial})")
    return replace(o, llama_cpp=llama, compared=rows(o, llama))


def _noted(o: OllamaPlan, note: str) -> OllamaPlan:
    from dataclasses import replace

    return replace(o, plan=replace(o.plan, notes=(*o.plan.notes, note)))
