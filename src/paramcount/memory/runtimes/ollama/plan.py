"""Ollama's own plan for a GGUF model on a GPU: its estimate, and the ``num_gpu`` it would choose.

Modelled: Ollama v0.12.10 (tag 80d34260; ``llm/memory.go`` and ``fs/ggml/ggml.go`` are the same
at 4372d0bf, the last commit before the estimate was removed). Its llama engine loads a model
with ``llamaServer.Load`` (``llm/server.go``): the fewest GPUs on which
``estimateGPULayers`` places every layer (``pickBestFullFitByLibrary``), else all of them, and
``num_gpu`` = the layers that estimate placed. Later Ollamas do not estimate: v0.12.11
(f560bd077) sizes layers by allocating them on the device, and since v0.30 (9db4bdbad) Ollama
runs llama-server and leaves ``-ngl`` to llama.cpp's own fit (``llm/llama_server.go``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ....errors import ParamcountError
from ....gguf import reader as gguf
from ....gguf.meta import is_gguf
from ...core.gpus import GPU
from ...core.terms import Term
from .current import now
from .ggml import NEWEST, OllamaGGUF, graph_size
from .layers import Device, Estimate, Sizes, estimate, sizes
from .settings import Asked, Settings, resolve
from .versions import Release, release

MAX_BLOCKS = 512  # llama.cpp's LLAMA_MAX_LAYERS: a file claiming more is refused, not looped over


def memory_go(rel: Release) -> str:
    return f"ollama {rel.name} llm/memory.go " + ("estimateGPULayers" if rel.subsets else "EstimateGPULayers")


def graph_go(rel: Release) -> str:
    return f"ollama {rel.name} {'fs/ggml' if rel.version >= (0, 5, 12) else 'llm'}/ggml.go GraphSize"


@dataclass(frozen=True)
class Inputs:
    """The files Ollama reads for the estimate: the model, its projectors, the modelfile's options."""

    model: OllamaGGUF
    projectors: tuple[OllamaGGUF, ...] = ()
    options: dict[str, int] = field(default_factory=dict)  # num_ctx, num_gpu, num_batch


def inputs(source: str) -> Inputs:
    """The GGUF file at ``source``, or ``ollama:NAME``'s model and projector blobs and options."""
    if source.startswith("ollama:"):
        from ....frontends import stores

        m = stores.ollama_manifest(source.removeprefix("ollama:"))
        blobs = m.of(stores.MODEL)
        if len(blobs) != 1:
            raise ParamcountError(f"the manifest lists {len(blobs)} model layers; one expected", source=source)
        projectors = tuple(OllamaGGUF(stores.read_blob(m, p)) for p in m.of(stores.PROJECTOR)[:1])
        return Inputs(OllamaGGUF(stores.read_blob(m, blobs[0])), projectors, stores.ollama_options(m))
    if not Path(source).is_file():  # a Hub repository's file: Ollama loads files on disk
        raise ParamcountError("Ollama's plan reads a GGUF file on disk or ollama:NAME", source=source)
    info = gguf.read_header(source)
    if info.metadata.get("split.count", 1) != 1:
        raise ParamcountError("Ollama loads one GGUF file, not a split one (merge it first)", source=source)
    return Inputs(OllamaGGUF(info))


def library(card: GPU) -> str:
    """The ggml library Ollama finds the card with: Metal for Apple, ROCm for AMD, else CUDA."""
    if card.kind == "apple":
        return "Metal"
    return "ROCm" if card.name.startswith("AMD") else "CUDA"


def flash_supported(card: GPU, lib: str, rel: Release = NEWEST) -> bool:
    """``ml.FlashAttentionSupported``: every library but CUDA on a compute capability 7.2 card
    (Jetson Xavier), from v0.12.4. (Its CUDA test reads the driver's major version, which is at least 7 on
    any driver that runs Ollama.)"""
    return not (lib == "CUDA" and card.capability == (7, 2) and rel.xavier_no_flash)


@dataclass(frozen=True)
class OllamaPlan:
    """Ollama's estimate on one card: ``num_gpu``, its terms (a :class:`Plan`), and llama.cpp's."""

    plan: Any  # memory.plan.Plan: the estimate's terms; total = VRAMSize, host = what overflowed
    num_gpu: int  # what llamaServer.Load passes to the runner (-ngl)
    layers_model: int  # block_count + 1: the layers Ollama counts (the output layer is one)
    estimate: Estimate
    full: Estimate  # the same estimate on a GPU with room for everything (Ollama's all-layers figure)
    sizes: Sizes  # what that all-layers estimate read: blocks, KV, output layer, projector, graphs
    gpus_used: int
    settings: Settings
    current: dict[str, Any] = field(default_factory=dict)  # today's Ollama (current.now)
    compared: tuple[dict[str, Any], ...] = ()  # rows beside llama.cpp's plan
    llama_cpp: Any = None  # llama.cpp's plan at the same context, or None when it cannot plan it
    release: Release = NEWEST  # the Ollama release whose estimate this is

    @property
    def free(self) -> int:
        """The free memory Ollama counts on each GPU."""
        return self.plan.settings["free_per_gpu"]

    def to_dict(self) -> dict[str, Any]:
        from ...core.plan import size_dict

        return {
            **self.plan.to_dict(),
            "ollama": {
                "version": self.release.name,
                "num_gpu": self.num_gpu,
                "layers_model": self.layers_model,
                "layers_estimated": self.estimate.layers,
                "gpus_used": self.gpus_used,
                "tensor_split": list(self.estimate.split),
                "vram": size_dict(self.estimate.vram),
                "total_size": size_dict(self.estimate.total),
                "all_layers_vram": size_dict(self.full.vram),
                "compared_with_llama_cpp": list(self.compared),
                "llama_cpp_settings": None if self.llama_cpp is None else dict(self.llama_cpp.settings),
            },
            "ollama_now": self.current,
        }


def estimate_plan(
    model: Any,
    card: GPU,
    asked: Asked | None = None,
    count: int = 1,
    free: int | None = None,
    files: Inputs | None = None,
) -> OllamaPlan:
    """Ollama's estimate (v0.12.10's, or ``asked.version``'s: :mod:`.versions`) for ``model`` (a
    GGUF file or ``ollama:NAME``) on ``count`` of ``card``, each with ``free`` bytes free as the
    driver reports them (default: all of it). ``files``: the headers already read (the web
    page's upload), instead of reading the source."""
    from ...core.plan import Plan

    if not is_gguf(model):
        raise ParamcountError("Ollama runs GGUF files: give a .gguf file or ollama:NAME", source=model.source)
    got = files or inputs(model.source)
    asked = _with_modelfile(asked or Asked(), got.options)
    rel = release(asked.version)
    f, lib = got.model.at(rel), library(card)
    _check(f, count, free, rel)
    devices = [Device(lib, card.usable if free is None else free)] * count
    projector = sum(p.at(rel).layer(g) or 0 for p in got.projectors for g in p.groups)
    s, graph, used = _schedule(f, got, asked, flash_supported(card, lib, rel), projector, devices, rel)
    at = sizes(f, graph, projector, used, rel)
    est = estimate(at, used, s.overhead, s.num_gpu, rel)
    roomy = [Device(lib, 1 << 62)]  # Ollama's figure for every layer on one GPU
    everything = estimate(sizes(f, graph, projector, roomy, rel), roomy, 0, -1, rel)
    num_gpu = _num_gpu(s.num_gpu, est, bool(used), f.blocks + 1)
    said = graph.formula if graph.partial else "HeadCountMax/HeadCountKVMin · KV total / 6 (no GraphSize case)"
    settings = _settings(s, devices, lib, num_gpu, said, len(used), rel, f.mxfp4_as_4)
    terms = _terms(at, est, s, lib, said, rel)
    shown = Plan(model, "inference", terms, settings, (*s.notes, *_notes(f, est, s, rel)))
    today = now(f, projector, [card.usable] * count, devices[0].free, asked, _vision(got))
    return OllamaPlan(
        shown,
        num_gpu,
        f.blocks + 1,
        est,
        everything,
        sizes(f, graph, projector, roomy, rel),
        len(used),
        s,
        today,
        release=rel,
    )


def _schedule(f, got, asked, flash_ok, projector, devices, rel):
    """``server/sched.go``'s choice of num_parallel and GPUs, then the settings and graph
    ``NewLlamaServer`` estimates with: without OLLAMA_NUM_PARALLEL, ``defaultParallel`` (4 before
    v0.6.7, 2 before v0.10.0, then 1) where the model fits at it, else 1; the fewest GPUs that hold
    every layer (one, else all of them before v0.11.5's pickBestFullFitByLibrary), else all.
    OLLAMA_NUM_PARALLEL=0 is that automatic choice before v0.11.5 (``*numParallel <= 0`` in
    pickBestFullFitByLibrary), 1 after (``if numParallel < 1 { numParallel = 1 }`` in sched.load)."""
    if asked.parallel == 0:
        asked = replace(asked, parallel=None if rel.zero_parallel_auto else 1)
    one = asked.parallel is None and ((got.projectors and rel.projector_parallel_one) or f.pooling)
    tries = (asked.parallel,) if asked.parallel is not None else (1,) if one else (rel.auto_parallel, 1)
    floor = {"sched": _vision(got), "all": True, "projector": bool(got.projectors)}[rel.ctx_floor]

    def at(p: int | None, cut: bool) -> tuple[Settings, Any]:
        s = resolve(f, replace(asked, parallel=p), floor, flash_ok, rel, cut)
        return s, graph_size(f, s.context, s.batch, s.parallel, s.kv_type, rel, s.flash)

    # before v0.11.5 server/sched.go checked the fit at the asked num_ctx and NewLlamaServer cut it
    # to the trained length afterwards; from v0.11.5 llamaServer.Load checks it after the cut
    runs = {p: at(p, rel.fit_in_load) for p in dict.fromkeys(tries)}
    last = tries[-1]
    if runs[last][0].num_gpu == 0:
        return *at(last, True), []
    ordered = sorted(devices, key=lambda d: d.free, reverse=True)
    for n in range(1, len(ordered) + 1) if rel.subsets else dict.fromkeys((1, len(ordered))):
        for p, (s, graph) in runs.items():
            if _fits(f, graph, projector, ordered[:n], s, rel):
                return *at(p, True), ordered[:n]
    return *at(last, True), list(devices)


def _fits(f: OllamaGGUF, graph: Any, projector: int, devices: Sequence[Device], s: Settings, rel: Release) -> bool:
    """``PredictServerFit``: the estimate places every layer, or num_gpu's."""
    e = estimate(sizes(f, graph, projector, devices, rel), devices, s.overhead, s.num_gpu, rel)
    return e.layers > 0 and e.layers >= (f.blocks + 1 if s.num_gpu < 0 else s.num_gpu)


def _check(f: OllamaGGUF, count: int, free: int | None, rel: Release) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 64:
        raise ParamcountError(f"expected 1..64 GPUs, got {count!r}", field="count")
    if free is not None and (isinstance(free, bool) or not isinstance(free, int) or not 0 <= free < 1 << 62):
        raise ParamcountError(f"expected free memory in bytes, got {free!r}", field="--free-vram")
    if f.arch in rel.engine:
        raise ParamcountError(
            f"Ollama {rel.name} runs {f.arch} on its own engine, which sizes layers by allocating them on the GPU "
            "(llm/server.go ollamaServer.Load), not with the estimate modelled here (before v0.11.11 it "
            "estimated them: --ollama-version)", source=f.source,
        )  # fmt: skip
    if f.arch in rel.unsupported:
        raise ParamcountError(
            f"Ollama {rel.name}'s estimate for {f.arch} (its own cache and vision graph) is not modelled",
            source=f.source,
        )
    arrays = [k for k in ("attention.head_count", "attention.head_count_kv") if isinstance(f.value(k), list)]
    if arrays and not rel.per_layer_heads:  # KV.HeadCount read a number: an array divided by zero
        raise ParamcountError(
            f"Ollama {rel.name} reads one head count (per-layer counts from v0.9.3)", source=f.source,
            field=f"{f.arch}.{arrays[0]}",
        )  # fmt: skip
    if not 1 <= f.blocks <= MAX_BLOCKS:
        raise ParamcountError(
            f"expected 1..{MAX_BLOCKS} blocks, got {f.blocks}", source=f.source, field=f"{f.arch}.block_count"
        )


MODELFILE = {"context": "num_ctx", "num_gpu": "num_gpu", "batch": "num_batch"}  # Asked field: params key


def _with_modelfile(asked: Asked, options: dict[str, int]) -> Asked:
    """The modelfile's num_ctx, num_gpu and num_batch where the caller gives none."""
    from dataclasses import replace

    pick = {k: options[o] for k, o in MODELFILE.items() if o in options and getattr(asked, k) is None}
    return replace(asked, **pick)


def _vision(got: Inputs) -> bool:
    """``Model.Capabilities``: vision when the file has ``vision.block_count`` or a projector."""
    return bool(got.projectors) or got.model.value("vision.block_count") is not None


def full_fit(
    f: OllamaGGUF, graph: Any, projector: int, devices: Sequence[Device], s: Settings, rel: Release = NEWEST
) -> list[Device]:
    """``pickBestFullFitByLibrary``: 1, 2, … of the GPUs, most free memory first, until
    ``predictServerFit`` says every layer (or num_gpu's) fits; none when no subset does."""
    ordered = sorted(devices, key=lambda d: d.free, reverse=True)
    fitting = (ordered[:n] for n in range(1, len(ordered) + 1) if _fits(f, graph, projector, ordered[:n], s, rel))
    return next(fitting, [])


def _num_gpu(requested: int, e: Estimate, gpus: bool, layers: int) -> int:
    """The layers Load offloads: the estimate's when the user set no num_gpu, none when no layer
    fits (the model runs on the CPU), else the user's own number, at most every layer
    (``createGPULayers`` gives blocks ``max(0, blocks - num_gpu)`` … ``blocks``)."""
    if requested == 0 or not gpus or e.layers == 0:
        return 0
    return e.layers if requested < 0 else min(requested, layers)


WINDOWED = ", but its sliding-window (num_parallel·window + batch) or recurrent layers at their own size"


def _terms(s: Sizes, e: Estimate, st: Settings, lib: str, graph_said: str, rel: Release) -> tuple[Term, ...]:
    used = sum(1 for n in e.split if n > 0) if e.layers else 0
    placed = range(len(s.blocks) - e.placed, len(s.blocks)) if rel.blocks_down else range(e.placed)
    mem, gra = memory_go(rel), graph_go(rel)
    weights = sum(s.blocks[i] or 0 for i in placed) + (s.output if e.output_placed else 0)
    kv = sum(s.kv[i] for i in placed)
    minimum = (457 if lib != "Metal" else 512) << 20
    graph_kind = "full" if e.fully else "partial"
    placed_said = f"{e.placed} block" + "s" * (e.placed != 1) + " + output layer" * e.output_placed
    rows = [
        Term("minimum", "device minimum", minimum * used, f"{used} × {minimum >> 20} MiB",
             "memory Ollama sets aside on each GPU it uses for the driver and context structures", True,
             f"ollama {rel.name} " + ("ml/device.go DeviceInfo.MinimumMemory" if rel.engine else "MinimumMemory")),
        Term("buffer", "one-layer buffer", e.buffer * used, f"{used} × (blk.0 + its KV)",
             "one more layer's weights and cache reserved on each GPU used, 'as a buffer'", True, mem),
        Term("weights", "weights on the GPU", weights, placed_said,
             "tensor bytes in Ollama's type table (TypeSize/BlockSize), blocks placed from the "
             + ("last one down" if rel.blocks_down else "first one up") + "; the "
             "output layer is output_norm + output (token_embd when tied), with a vision tower in the file",
             False, mem),
        Term("kv_cache", "KV cache", kv, f"num_ctx·num_parallel·(K+V head dims)·kv heads·{_kv_said(st)} per block",
             "Ollama's formula: unpadded cells, every layer at the whole context"
             + (WINDOWED if len(set(s.kv)) > 1 else ""),
             True, gra),
        Term("projector", "projector weights", s.projector if e.layers else 0, "every tensor of the projector file",
             "the multimodal projector, held on the first GPU", False, mem),
        Term("graph", f"graph ({graph_kind} offload)", e.graph, f"{graph_kind}-offload size: {graph_said}",
             "Ollama's formula for llama.cpp's compute buffers", True, f"{gra}; {mem}"),
    ]  # fmt: skip
    if e.total > e.vram:
        rows.append(
            Term("overflow", "left in system memory", e.total - e.vram, "TotalSize − VRAMSize",
                 "the layers (with their cache) and reserves the GPUs did not take", True, mem, host=True)
        )  # fmt: skip
    return tuple(t for t in rows if t.bytes or t.key in ("weights", "graph"))


def _kv_said(st: Settings) -> str:
    return {"": "2 B", "f16": "2 B", "q8_0": "1 B", "q4_0": "0.5 B"}[st.kv_type]


def _settings(
    s: Settings,
    devices: Sequence[Device],
    lib: str,
    num_gpu: int,
    formula: str,
    used: int,
    rel: Release,
    mxfp4: bool = False,
) -> dict:
    return {
        "runtime": "ollama",
        "version": rel.name,
        "scheme": "stored",
        "context": s.context,
        "context_from": s.context_from,
        "batch": s.parallel,
        "num_ctx": s.context,
        "num_batch": s.batch,
        "num_parallel": s.parallel,
        "num_gpu": num_gpu,
        "num_gpu_requested": s.num_gpu,
        "flash_attention": s.flash,
        "kv_dtype": s.kv_type or "f16",
        "kv_cache": "Ollama's estimate",
        "kv_cache_type": s.kv_type or "f16",
        "library": lib,
        "gpus": len(devices),
        "gpus_used": used,
        "free_per_gpu": devices[0].free,
        "gpu_overhead": s.overhead,
        "graph_formula": formula,
        **({"mxfp4_as_type_4": True} if mxfp4 else {}),  # a flag: the figure is Ollama's own file's
    }


def _notes(f: OllamaGGUF, e: Estimate, s: Settings, rel: Release) -> tuple[str, ...]:
    n = f.blocks + 1
    said = [f"Ollama would run {e.layers} of {n} layers on the GPU (num_gpu {e.layers})" if e.layers else
            f"Ollama would run all {n} layers on the CPU: no layer fits beside its reserves (num_gpu 0)"]  # fmt: skip
    said.append(
        f"modelled: Ollama {rel.name}'s estimate; v0.12.11 on sizes layers by allocating them on the GPU, and "
        "v0.30 on runs llama-server, which picks -ngl with llama.cpp's own fit"
    )
    if s.overhead:
        said.append(f"OLLAMA_GPU_OVERHEAD keeps {s.overhead:,} B of each GPU free; it is not in the total")
    if f.mxfp4_as_4:
        said.append(
            f"Ollama {rel.name} sizes ggml type 39 (MXFP4) as 0 bytes; its own gpt-oss files store MXFP4 as type 4 "
            "(17 bytes per 32, fs/ggml/type.go), which is what is counted here"
        )
    return tuple(said)
