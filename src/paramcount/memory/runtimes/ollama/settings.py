"""The load settings Ollama v0.12.10 estimates with, resolved as its server resolves them.

``num_ctx``: the request's or the modelfile's, else ``OLLAMA_CONTEXT_LENGTH`` (default 4096,
``api.DefaultOptions``); at least 4, at least 2048 for a model that sees images
(``server/sched.go`` ``GetRunner``), and at most the trained context (``llm/server.go``
``NewLlamaServer``). ``num_batch`` 512, cut to ``num_ctx``. ``num_parallel``:
``OLLAMA_NUM_PARALLEL`` (default 1), 1 for an embedding model (``sched.load``). Flash
attention: ``OLLAMA_FLASH_ATTENTION``, by default on only for the architectures of
``GGML.FlashAttention``, and only where every GPU and the model support it; the KV cache type
``OLLAMA_KV_CACHE_TYPE`` applies only with flash attention, and only f16, q8_0 or q4_0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....errors import ParamcountError
from .ggml import NEWEST, OllamaGGUF
from .versions import Release

DEFAULT_BATCH = 512  # api.DefaultOptions NumBatch
MAX_SETTING = 1 << 24


@dataclass(frozen=True)
class Asked:
    """What the user (or the environment, or the modelfile) gives; None: Ollama's default."""

    context: int | None = None  # num_ctx
    batch: int | None = None  # num_batch
    parallel: int | None = None  # OLLAMA_NUM_PARALLEL
    num_gpu: int | None = None  # num_gpu; -1 or None: Ollama decides
    flash: bool | None = None  # OLLAMA_FLASH_ATTENTION
    kv_type: str | None = None  # OLLAMA_KV_CACHE_TYPE
    overhead: int = 0  # OLLAMA_GPU_OVERHEAD, bytes reserved on each GPU
    default_context: int | None = None  # OLLAMA_CONTEXT_LENGTH: num_ctx when no one sets it
    version: str | None = None  # the Ollama release whose estimate is made (versions.parse; None: newest)


@dataclass(frozen=True)
class Settings:
    context: int
    context_from: str
    batch: int
    parallel: int
    num_gpu: int
    flash: bool
    kv_type: str  # "" is f16, as Ollama passes it
    overhead: int
    notes: tuple[str, ...]


def whole(value: object, field: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_SETTING:
        raise ParamcountError(f"expected a whole number {low}..{MAX_SETTING:,}, got {value!r}", field=field)
    return value


def resolve(
    f: OllamaGGUF, asked: Asked, vision: bool, flash_ok: bool, rel: Release = NEWEST, cut: bool = True
) -> Settings:
    """The settings llm/server.go passes to estimateGPULayers for this file, in release ``rel``
    (``asked.parallel`` None: 1; the scheduler's automatic choice is :func:`plan.estimate_plan`'s).
    ``cut``: num_ctx cut to the trained length as NewLlamaServer does (the scheduler's fit check
    runs before that, at the asked num_ctx)."""
    notes: list[str] = []
    context, said = _context(f, asked, vision and rel.ctx_floor == "sched", notes, rel, cut)
    parallel = 1 if f.pooling else whole(asked.parallel or 1, "OLLAMA_NUM_PARALLEL", 1)
    if vision and rel.ctx_floor != "sched" and context * parallel < 2048:  # inside the estimate, on num_ctx·parallel
        context, said = -(-2048 // parallel), f"num_ctx·num_parallel raised to 2048 (llm/memory.go, {rel.name})"
        if 2048 % parallel:
            notes.append(f"Ollama estimates {2048:,} cells in all; shown as {context:,} per sequence × {parallel}")
    # num_batch is cut to num_ctx; before v0.11.5 the scheduler had multiplied num_ctx by num_parallel
    batch = min(whole(asked.batch or DEFAULT_BATCH, "num_batch", 1), context * (1 if rel.subsets else parallel))
    flash = (asked.flash if asked.flash is not None else f.arch in rel.flash_default) and flash_ok
    flash = flash and f.supports_flash() and (rel.gptoss_flash or f.arch != "gptoss")
    kv = (asked.kv_type or "").strip().lower()
    if kv and not rel.kv_types:
        notes.append(f"Ollama {rel.name}'s estimate keeps the KV cache in f16 (OLLAMA_KV_CACHE_TYPE: v0.5.0 on)")
        kv = ""
    if kv not in ("", "f16", "q8_0", "q4_0"):  # GGML.SupportsKVCacheType
        notes.append(f"Ollama's KV cache types are f16, q8_0 and q4_0: {kv!r} is ignored (f16)")
        kv = ""
    elif kv not in ("", "f16") and not flash:
        notes.append(f"Ollama keeps the KV cache in f16: a {kv} cache needs flash attention, which is off")
        kv = ""
    num_gpu = -1 if asked.num_gpu is None else whole(asked.num_gpu, "num_gpu", -1)
    overhead = asked.overhead
    if isinstance(overhead, bool) or not isinstance(overhead, int) or not 0 <= overhead < 1 << 62:
        raise ParamcountError(f"expected bytes, a whole number, got {overhead!r}", field="OLLAMA_GPU_OVERHEAD")
    if overhead and not rel.gpu_overhead:
        notes.append(f"Ollama {rel.name} does not read OLLAMA_GPU_OVERHEAD (v0.3.10 on): it is ignored")
        overhead = 0
    return Settings(context, said, batch, parallel, num_gpu, flash, kv if flash else "", overhead, tuple(notes))


def _context(
    f: OllamaGGUF, asked: Asked, vision: bool, notes: list[str], rel: Release, cut: bool = True
) -> tuple[int, str]:
    if asked.context is not None:
        context, said = whole(asked.context, "num_ctx", 1), "num_ctx"
    elif asked.default_context is not None and rel.context_env:
        context, said = whole(asked.default_context, "OLLAMA_CONTEXT_LENGTH", 0), "OLLAMA_CONTEXT_LENGTH"
    else:
        env = "OLLAMA_CONTEXT_LENGTH's default" if rel.context_env else "num_ctx's default"
        context, said = rel.default_context, f"{env} in Ollama {rel.name}"
    if context < 4:
        context, said = 4, "num_ctx raised to 4 (server/sched.go GetRunner)"
    if f.arch == "gptoss" and rel.gptoss_context and context < 8192:
        context, said = 8192, "num_ctx raised to 8192 for gpt-oss (server/routes.go scheduleRunner)"
    if vision and context < 2048:
        context, said = 2048, "num_ctx raised to 2048 for a model that sees images (server/sched.go GetRunner)"
    trained = f.uint("context_length")
    if 0 < trained < context and rel.trained_cut and cut:
        notes.append(f"num_ctx {context:,} is past the trained {trained:,}: Ollama cuts it (NewLlamaServer)")
        context, said = trained, "the trained context_length (llm/server.go NewLlamaServer)"
    return context, said


# ---- the server's environment (envconfig/config.go) ---------------------------------------------

_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def var(env: Mapping[str, str], key: str) -> str:
    """``envconfig.Var``: the value trimmed of spaces and of quotes."""
    return env.get(key, "").strip().strip("\"'")


def env_uint(env: Mapping[str, str], key: str) -> int | None:
    """``envconfig.Uint`` / ``Uint64``: a whole number, or None (Ollama's default) when unset or
    unreadable (Ollama logs "invalid environment variable, using default")."""
    s = var(env, key)
    return int(s) if s.isascii() and s.isdigit() and int(s) < 1 << 64 else None


def env_bool(env: Mapping[str, str], key: str) -> bool | None:
    """``envconfig.BoolWithDefault``: None when unset; a value ParseBool cannot read is true."""
    s = var(env, key)
    return None if not s else s not in _FALSE if s not in _TRUE else True


def from_env(env: Mapping[str, str], **given: Any) -> Asked:
    """The settings an Ollama server started with ``env`` uses, under the ones ``given``."""
    parallel = env_uint(env, "OLLAMA_NUM_PARALLEL")
    found = {
        "default_context": env_uint(env, "OLLAMA_CONTEXT_LENGTH"),
        "parallel": parallel,  # 0: automatic before v0.11.5, else 1 (the plan's _schedule decides)
        "flash": env_bool(env, "OLLAMA_FLASH_ATTENTION"),
        "kv_type": var(env, "OLLAMA_KV_CACHE_TYPE").lower() or None,
        "overhead": env_uint(env, "OLLAMA_GPU_OVERHEAD") or 0,
    }
    return Asked(**{**found, **{k: v for k, v in given.items() if v is not None}})
