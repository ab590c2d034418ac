"""What today's Ollama does instead (v0.33.0-rc2, fb307609, 2026-08-21): it no longer estimates layers.

Since v0.30 (9db4bdbad) Ollama runs llama-server for GGUF models and passes ``-ngl`` only when
``num_gpu`` is set: otherwise llama.cpp's own fit (``--fit``, ``common_params_fit``) chooses the
layers. What Ollama still decides is modelled here: the default ``num_ctx`` by the GPUs' total
memory (``server/routes.go`` ``Serve``: 4,096 below 23 GiB, 32,768 below 47 GiB, else 262,144,
each GPU's memory less ``OLLAMA_GPU_OVERHEAD``), the llama-server arguments it launches with
(``llm/llama_server.go``), the fit target it sets for a projector (``mmprojFitTargetMiB``), and
its pre-flight prediction (``PredictServerVRAM``: the file's size and an f16 KV cache, against
80 % of the free memory in ``server/sched.go`` ``load``).
"""

from __future__ import annotations

from typing import Any

from .ggml import OllamaGGUF

HEAD = "v0.33.0-rc2 (fb307609)"
GIB, MIB = 1 << 30, 1 << 20
HEADROOM = 1 << 30  # llm/llama_server.go mmprojOffloadHeadroom


def default_context(totals: list[int], overhead: int) -> int:
    """``Serve``'s VRAM-tier default num_ctx: each GPU's total memory less the overhead, summed."""
    vram = sum(t - overhead for t in totals)
    return 262_144 if vram >= 47 * GIB else 32_768 if vram >= 23 * GIB else 4096


def predicted(f: OllamaGGUF, context: int) -> int:
    """``PredictServerVRAM(modelPath, f, numCtx)``: the file's bytes + 2·layers·kv heads (the
    fewest)·head dim (embedding / the most heads)·numCtx·2 B."""
    heads_kv = min(f.uints("attention.head_count_kv", 1)) or 1
    heads = max(f.uints("attention.head_count", 1))
    head_dim = f.embedding // heads if heads > 0 else 0
    return f.info.file_size + 2 * f.blocks * heads_kv * head_dim * context * 2


def now(f: OllamaGGUF, projector: int, totals: list[int], free: int, asked: Any, vision: bool) -> dict[str, Any]:
    """Today's Ollama on GPUs of ``totals`` bytes, ``free`` of them free on each: its num_ctx,
    its llama-server arguments, its fit target and its pre-flight prediction."""
    parallel = 1 if f.pooling else asked.parallel or 1
    if asked.context is not None:
        ctx, said = asked.context, "num_ctx"
    elif asked.default_context:  # OLLAMA_CONTEXT_LENGTH (0: by the VRAM tier)
        ctx, said = asked.default_context, "OLLAMA_CONTEXT_LENGTH"
    else:
        ctx, said = default_context(totals, asked.overhead), "the VRAM tier, server/routes.go Serve"
    ctx = max(ctx, 2048 if vision else 4)  # server/sched.go getRunner
    trained = f.uint("context_length")
    effective = (min(ctx, trained) if trained > 0 else ctx) * parallel  # effectiveLlamaServerContext
    args = ["-c", str(ctx * parallel), "-np", str(parallel)]  # not cut to the trained context
    num_gpu = -1 if asked.num_gpu is None else asked.num_gpu
    args += ["-ngl", str(num_gpu)] if num_gpu >= 0 else []
    pad = _fit_target(projector, num_gpu, f.blocks + 1, free)
    vram = predicted(f, effective)
    return {
        "version": HEAD,
        "num_ctx": ctx,
        "num_ctx_from": said,
        "llama_server_args": args,
        "num_gpu": num_gpu if num_gpu >= 0 else "chosen by llama.cpp's fit (-ngl auto)",
        "fit_target_mib": pad,
        "predicted_vram": vram,
        "predicted_fits": vram <= free * len(totals) * 80 // 100,
        "source": "ollama " + HEAD + " server/routes.go Serve, server/sched.go load, llm/llama_server.go",
        **_type_4(f),
    }


def _type_4(f: OllamaGGUF) -> dict[str, Any]:
    """An older gpt-oss file's MXFP4 as ggml type 4: since v0.30 (9db4bdbad) Ollama neither sizes it
    (fs/ggml/ggml.go TypeSize lists only 39 for MXFP4) nor repacks it (Backend.Load went with its
    engine), and llama-server refuses type 4 (gguf.cpp gguf_init_from_file_impl: block size 0)."""
    n = sum(t.type_id == 4 for t in f.info.tensors)
    if not n:
        return {}
    why = (
        f"{n:,} tensors are ggml type 4 (MXFP4 as Ollama v0.11.0 … v0.11.7 wrote it), which llama-server "
        "cannot load (Ollama's own reading of it went with its engine in v0.30)"
    )
    return {"loads": False, "why_not": why}


def _fit_target(projector: int, num_gpu: int, layers: int, free: int) -> int | None:
    """``LLAMA_ARG_FIT_TARGET`` in MiB for a projector kept on the GPU (``mmprojFitTargetMiB``),
    None where Ollama sets none (no projector, or ``shouldDisableMMProjOffload``)."""
    need = projector + HEADROOM
    if not projector or num_gpu == 0 or 0 < num_gpu < layers or free < need:
        return None
    return -(-need // MIB)
