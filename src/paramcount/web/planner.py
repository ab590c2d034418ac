"""The memory planner behind the page: one plan, its curve over context, and a fit per precision.

Every figure is the memory package's (plan.py, fit.py, gpus.py, runtimes.py); this module only
picks the points the page draws and puts the answers in one document. Modes: ``inference``
(under the runtime the request names, or the model's default: llama.cpp for a GGUF file, else
transformers; vLLM adds what it would log on the GPU); ``training`` (full fine-tuning);
``lora`` (adapters on a frozen base, QLoRA with the ``qlora`` precision).
"""

from __future__ import annotations

from typing import Any

from ..errors import BadSource, ParamcountError
from ..memory.core.plan import term_dict
from ..memory.fit import gpu_dict
from ..model import Model

DEFAULT_GPU = "rtx4090"  # the 24 GB card people most often ask about
DEFAULT_LORA_RANK = 8  # peft's LoraConfig default
MIN_CONTEXT_EXP, MAX_CONTEXT_EXP = 7, 20  # the curve and the slider: 128 to 1,048,576 tokens
GROUPS = {"consumer": "GeForce", "data-centre": "Data centre", "apple": "Apple silicon", "custom": "Custom"}
TRAINING_LABELS = {"mixed": "mixed (bf16 + fp32 master)", "qlora": "qlora (NF4 base)"}
RUNTIME_LABELS = {"transformers": "transformers", "llama.cpp": "llama.cpp", "vllm": "vLLM", "ollama": "Ollama"}
RUNTIME_LABELS |= {"mlx": "MLX"}
PAGE_RUNTIMES = ("transformers", "llama.cpp", "vllm", "mlx")  # the request's choices (schemas.py), with ollama
OLLAMA_KV = ("f16", "q8_0", "q4_0")  # Ollama's KV cache types (fs/ggml GGML.SupportsKVCacheType)
# What runtime ollama takes besides the model, context, batch (num_parallel) and GPU: the CLI's OLLAMA_TAKES.
OLLAMA_FIELDS = ("kv_dtype", "flash_attn", "num_gpu", "free_vram", "ollama_version")
OLLAMA_ONLY = ("num_gpu", "free_vram", "ollama_version")
# llama.cpp's placement flags as the request names them (-ngl, -ot, --n-cpu-moe, -ts, -sm, -mg)
PLACEMENT = ("n_gpu_layers", "override_tensor", "n_cpu_moe", "tensor_split", "split_mode", "main_gpu")
TP_SIZES = (1, 2, 4, 8)  # what the page offers: the GPUs of one machine; the API takes any size vLLM accepts
# The request's runtime options by the names runtimes.planner takes them.
RUNTIME_OPTIONS = {"tp": "tp", "gpu_memory_utilization": "utilization", "flash_attn": "flash_attn"}
RUNTIME_OPTIONS |= {"vllm_version": "vllm_version", "device": "device", "kv_cache_space": "kv_cache_space"}
RUNTIME_OPTIONS |= {"group_size": "group_size", "kv_bits": "kv_bits"}  # mlx-lm's --group-size, --kv-bits
# The library names the command line's flag at fault; the page marks the request's field.
FLAG_FIELDS = {
    "--runtime": "runtime",
    "--tp": "tp",
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--flash-attn": "flash_attn",
    "--dtype": "scheme",
    "--kv-dtype": "kv_dtype",
    "--cache-type-k": "kv_dtype",
    "--cache-type-v": "kv_dtype",
    "--free-vram": "free_vram",
    "--ollama-version": "ollama_version",
    "--n-gpu-layers": "n_gpu_layers",
    "--override-tensor": "override_tensor",
    "--n-cpu-moe": "n_cpu_moe",
    "--tensor-split": "tensor_split",
    "--split-mode": "split_mode",
    "--main-gpu": "main_gpu",
    "num_gpu": "num_gpu",
    "targets": "lora_targets",  # lora(): a targets pattern refused
    "--vllm-version": "vllm_version",
    "--device": "device",
    "--kv-cache-space": "kv_cache_space",
    "--group-size": "group_size",
    "--kv-bits": "kv_bits",
    "--ram": "ram",
    "--batch": "batch",
    "--gpu": "gpu",
    "--context": "context",  # paramcount speed's flags (memory/speed/estimate.py)
    "--prompt": "prompt",
    "--cpu": "cpu",
    "--concurrency": "concurrency",
}


def options() -> dict[str, Any]:
    """What the planner's controls offer: schemes, training precisions, cache dtypes, GPUs."""
    from ..hardware import catalog
    from ..memory.core.gpus import GPUS
    from ..memory.runtimes.llamacpp.plan import FLASH
    from ..memory.runtimes.mlx.quant import BITS, GROUPS  # mx.quantize's widths: the weights' and --kv-bits'
    from ..memory.runtimes.vllm.plan import LATEST, UTILIZATION, VERSIONS
    from ..memory.training.optimizer import OPTIMIZERS
    from ..memory.training.plan import TRAINING_PRECISIONS
    from ..memory.training.saved import RECOMPUTE
    from ..memory.weights.base import SCHEMES
    from .schemas import MAX_CONTEXT

    return {
        "schemes": [{"value": s, "label": s} for s in dict.fromkeys((*SCHEMES, *MLX_SCHEMES))],
        "training_precisions": [{"value": p, "label": TRAINING_LABELS.get(p, p)} for p in TRAINING_PRECISIONS],
        "kv_dtypes": _kv_dtypes("transformers"),
        "optimizers": list(OPTIMIZERS),
        "recompute": list(RECOMPUTE),
        "gpus": [_gpu_option(g) for g in (*GPUS.values(), *apple_chips())],
        "default_gpu": DEFAULT_GPU,
        "default_lora_rank": DEFAULT_LORA_RANK,
        "context_range": [2**MIN_CONTEXT_EXP, 2**MAX_CONTEXT_EXP],
        "context_bounds": [1, MAX_CONTEXT],
        "runtimes": [{"value": r, "label": RUNTIME_LABELS[r]} for r in (*PAGE_RUNTIMES, "ollama")],
        "runtime_kv_dtypes": {**{r: _kv_dtypes(r) for r in PAGE_RUNTIMES}, "ollama": list(OLLAMA_KV), "mlx": []},
        "runtime_schemes": runtime_schemes(),
        "runtime_default_scheme": dict(DEFAULT_SCHEME),
        "tp_sizes": list(TP_SIZES),
        "default_utilization": float(UTILIZATION),
        "flash_attn": list(FLASH),
        "vllm_versions": [LATEST, *(v for v in reversed(VERSIONS) if v != LATEST)],
        "mlx_group_sizes": list(GROUPS),
        "mlx_kv_bits": list(BITS),
        "cpus": [{"value": h.key, "label": h.name} for h in catalog() if h.kind == "cpu"],
    }


# What each runtime loads, as the page offers it (the API plans any scheme a runtime's planner takes):
# transformers bitsandbytes and plain casts (GPTQ/AWQ/FP8 as a checkpoint's quantization_config
# says: "stored"); vLLM its served dtypes and quantised checkpoints; llama.cpp the GGUF types.
TRANSFORMERS_SCHEMES = ("fp32", "fp16", "bf16", "bnb-int8", "nf4", "fp4", "stored")
VLLM_SCHEMES = ("bf16", "fp16", "fp8", "gptq-int4", "gptq-int8", "awq-int4", "stored")
# mlx-lm: its float dtypes and mlx_lm.convert -q --q-bits N (memory/runtimes/mlx/quant.py BITS)
MLX_FLOATS = ("bf16", "fp16", "fp32")
MLX_SCHEMES = (*MLX_FLOATS, "mlx-8bit", "mlx-6bit", "mlx-5bit", "mlx-4bit", "mlx-3bit", "mlx-2bit")
DEFAULT_SCHEME = {"transformers": "bf16", "vllm": "bf16", "llama.cpp": "q4_k_m", "ollama": "stored", "mlx": "bf16"}


def runtime_schemes() -> dict[str, list[str]]:
    """The schemes the page offers under each runtime: llama.cpp the GGUF file types (and the
    16/32-bit ones a GGUF file stores), Ollama the file as stored."""
    from ..memory.weights.base import SCHEMES, scheme

    gguf = [s for s in SCHEMES if scheme(s).method == "gguf"]
    return {
        "transformers": list(TRANSFORMERS_SCHEMES),
        "vllm": list(VLLM_SCHEMES),
        "llama.cpp": ["stored", "fp32", "fp16", "bf16", *gguf],
        "ollama": ["stored"],
        "mlx": [*MLX_SCHEMES, "stored"],
    }


def _kv_dtypes(runtime: str) -> list[str]:
    """The KV cache dtypes a runtime takes: transformers' cache dtypes, llama.cpp's -ctk/-ctv
    types, vLLM's --kv-cache-dtype values (its ``auto`` is the page's default)."""
    if runtime == "llama.cpp":
        from ..memory.runtimes.llamacpp.plan import CACHE_TYPES

        return list(CACHE_TYPES)
    if runtime == "vllm":
        from ..memory.runtimes.vllm.plan import KV_BYTES

        return [k for k in KV_BYTES if k != "auto"]
    from ..memory.context.kv_cache import CACHE_DTYPES

    return list(CACHE_DTYPES)


def apple_chips() -> list[Any]:
    """Each Apple chip of the hardware catalog as the planner's GPU (its working set): MLX runs
    on them, and a chip, unlike a bare size, has the bandwidth and peaks speed reads."""
    from ..hardware import catalog
    from ..memory.core.gpus import gpu

    return [gpu(h.key) for h in catalog() if h.kind == "apple"]


def _gpu_option(g: Any) -> dict[str, Any]:
    group = GROUPS.get(g.kind, g.kind)
    return {"key": g.key, "name": g.name, "stated": g.stated, "unit": g.unit, "memory": g.memory, "usable": g.usable,
            "group": group}  # fmt: skip


def plan(model: Model, q: Any, header: Any = None) -> dict[str, Any]:
    """The plan at the request's settings, the curve over context, and the fit per precision.

    At inference, a model without a KV cache layout (a printout, a bare checkpoint) gets its
    weights alone, with the library's reason as a note; vLLM plans none such (its planner says
    why, a 400). ``header``: an uploaded GGUF file's parsed header, which Ollama's plan reads."""
    from ..memory.core.gpus import gpu

    card = gpu(q.gpu)
    if q.mode != "inference":
        _inference_only(q)
        return _full(model, q, card, _training_planner(model, q), None)
    if q.runtime == "ollama":
        return ollama(model, q, card, header)
    _not_ollama(q)
    q = q.model_copy(update={"context": modelfile_context(model, q.context)})
    runtime, planner = _runtime_planner(model, q, card)
    if getattr(planner, "partial", None):  # MLX plans a config's model whole, or refuses
        return _weights_only(model, q, card, planner, runtime)
    try:
        return _full(model, q, card, planner, runtime)
    except ParamcountError as e:  # a setting the plan itself refuses (MLX's --batch): the request's field
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise


def modelfile_context(model: Model, context: int | None) -> int | None:
    """A model in Ollama's store is planned at its modelfile's num_ctx where no context is given,
    as the CLI plans it (cli.ollama_defaults) and as Ollama loads it."""
    source = str(model.source)
    if context is not None or not source.startswith("ollama:"):
        return context
    from ..frontends.stores import ollama_context, ollama_manifest

    return ollama_context(ollama_manifest(source.removeprefix("ollama:")))


def recommendations(model: Model, q: Any) -> dict[str, Any]:
    """One recommendation per runtime on the GPU (:func:`paramcount.advise.recommend`, the call
    ``paramcount fit MODEL --gpu GPU --json`` makes), at the least context asked."""
    from ..advise import recommend
    from ..memory.core.gpus import gpu, parse_size
    from ..render.advice import to_json

    card = gpu(q.gpu)
    ram = parse_size(q.ram, "ram") if q.ram else None
    context = modelfile_context(model, q.context)
    try:
        recs = recommend(model, card, ram=ram, context=context, runtimes=q.runtimes or None)
    except ParamcountError as e:
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise
    return {"gpu": gpu_dict(card), "context": context, "recommendations": to_json(recs)}


def _inference_only(q: Any) -> None:
    for name in ("runtime", *RUNTIME_OPTIONS, *OLLAMA_ONLY, *PLACEMENT):
        if getattr(q, name) not in (None, []):
            raise ParamcountError("a runtime setting, only for inference", field=name)


def _not_ollama(q: Any) -> None:
    """An Ollama setting given to another runtime (as the CLI's ollama_runtime refuses it)."""
    for name in OLLAMA_ONLY:
        if getattr(q, name) is not None:
            raise ParamcountError("an Ollama setting: choose the runtime ollama", field=name)


def ollama(model: Model, q: Any, card: Any, header: Any) -> dict[str, Any]:
    """Ollama's estimate and num_gpu on the GPU, with llama.cpp's plan beside it: what
    ``paramcount memory --runtime ollama --json`` prints (its ``ollama`` and ``ollama_now``)."""
    from ..gguf.meta import is_gguf
    from ..memory.core.limits import max_positions
    from ..memory.runtimes.ollama_vs_llamacpp import plan as compared

    if not is_gguf(model):
        raise ParamcountError("Ollama runs GGUF files: drop a .gguf file", field="runtime")
    try:
        o = compared(model, card, _ollama_asked(q), free=_free(q), files=_ollama_files(header))
    except ParamcountError as e:  # the library names the command line's flag; the page, the field
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise
    p = o.plan
    return {
        "mode": q.mode,
        "runtime": "ollama",
        "partial": False,
        "total": p.total,
        "host": p.host,
        "terms": [term_dict(t) for t in p.terms],
        "settings": {k: _plain(v) for k, v in p.settings.items()},
        "notes": list(p.notes),
        "gpu": gpu_dict(card),
        "fits": o.num_gpu >= o.layers_model,
        "ram": _ram(p, q),
        "context_limit": max_positions(model),
        "curve": {"contexts": [], "series": []},  # Ollama's estimate is at its num_ctx alone
        "precisions": [],  # Ollama runs the file as stored
        "ollama": {**o.to_dict()["ollama"], "free": o.free, "all_layers": o.num_gpu >= o.layers_model},
        "ollama_now": o.current,
    }


def _ollama_asked(q: Any) -> Any:
    """The request as Ollama's settings, under the server's OLLAMA_* variables (as the CLI reads them)."""
    import os

    from ..memory.runtimes.ollama.settings import from_env

    if "scheme" in q.model_fields_set and q.scheme != "stored":
        raise ParamcountError("Ollama runs the GGUF file as stored: choose the precision stored", field="scheme")
    wrong = [f for f in (*RUNTIME_OPTIONS, *PLACEMENT) if f not in OLLAMA_FIELDS and getattr(q, f) not in (None, [])]
    if wrong:
        takes = "context, batch (num_parallel), kv_dtype, flash_attn, num_gpu, free_vram and ollama_version"
        raise ParamcountError(f"not an Ollama setting (it takes {takes})", field=wrong[0])
    flash = {"on": True, "off": False}.get(q.flash_attn or "")
    given = q.batch != 1 or "batch" in q.model_fields_set  # else OLLAMA_NUM_PARALLEL
    return from_env(os.environ, context=q.context, parallel=q.batch if given else None, flash=flash,
                    kv_type=q.kv_dtype, num_gpu=q.num_gpu, version=q.ollama_version)  # fmt: skip


def _free(q: Any) -> int | None:
    from ..memory.core.gpus import parse_size

    return parse_size(q.free_vram, "free_vram") if q.free_vram else None


def _ollama_files(header: Any) -> Any:
    """An uploaded GGUF header as the files Ollama reads (None: the model's own source)."""
    if header is None:
        return None
    from ..memory.runtimes.ollama.ggml import OllamaGGUF
    from ..memory.runtimes.ollama.plan import Inputs

    if header.metadata.get("split.count", 1) != 1:
        raise ParamcountError("Ollama loads one GGUF file, not a split one (merge it first)", source=header.source)
    return Inputs(OllamaGGUF(header))


def _runtime_planner(model: Model, q: Any, card: Any) -> tuple[str, Any]:
    """The runtime asked for (or the model's default) and its planner (vLLM's for the chosen GPU,
    whose batch defaults it takes); a bad option or one of another runtime is runtimes.py's
    one-line error, said of the request's field."""
    from ..memory import runtimes

    try:
        runtime = runtimes.runtime(q.runtime, model)
        served = {"gpu": card} if runtime in ("vllm", "transformers") and not on_cpus(q, runtime) else {}
        # vLLM's CPU platform claims its share of RAM, as the CLI's vllm_cpu passes --ram
        ram = {"ram": ram_bytes(q)} if on_cpus(q, runtime) and q.ram else {}
        options = {**_runtime_options(q), **placement_options(q), **served, **ram}
        return runtime, runtimes.planner(model, q.scheme, runtime, kv_dtype=q.kv_dtype, **options)
    except ParamcountError as e:
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise


def on_cpus(q: Any, runtime: str | None) -> bool:
    """vLLM on its CPU platform (``--device cpu``): planned in RAM, no GPU."""
    return runtime == "vllm" and q.device == "cpu"


def ram_bytes(q: Any) -> int | None:
    from ..memory.core.gpus import parse_size

    return parse_size(q.ram, "ram") if q.ram else None


def _ram(plan: Any, q: Any) -> dict[str, Any] | None:
    """The host part against ``ram`` (memory --ram --json's ``ram``), or None without one."""
    from ..memory.fit import host_bytes

    ram = ram_bytes(q)
    if ram is None:
        return None
    held = host_bytes(plan)
    return {"bytes": ram, "host": held, "fits": held <= ram}


def _fits(total: int, card: Any, ram: dict[str, Any] | None, cpus: bool) -> bool | None:
    """On the GPU and the host part in RAM (fit --ram's rule); vLLM on CPUs: in RAM alone, and no
    verdict without a RAM to hold it against."""
    if cpus:
        return None if ram is None else ram["fits"]
    return total <= card.usable and (ram is None or ram["fits"])


def _runtime_options(q: Any) -> dict[str, Any]:
    """The runtime options the request sets, by the library's names (unset ones left out)."""
    given = {key: getattr(q, name) for name, key in RUNTIME_OPTIONS.items()}
    return {k: v for k, v in given.items() if v is not None}


def placement_options(q: Any) -> dict[str, Any]:
    """llama.cpp's placement as the planner takes it, each flag read by placement.py as the CLI
    reads it (cli.placement_options); the -ot patterns come first, then --n-cpu-moe's, as
    ``-ot ... --n-cpu-moe N`` orders them (the first pattern that matches a tensor wins)."""
    from ..memory.runtimes.llamacpp import placement as pl

    given: dict[str, Any] = {"split_mode": q.split_mode, "main_gpu": q.main_gpu}
    if q.n_gpu_layers is not None:
        given["gpu_layers"] = pl.gpu_layers(q.n_gpu_layers)
    if q.tensor_split is not None:
        given["tensor_split"] = pl.tensor_split(q.tensor_split)
    found = [o for text in q.override_tensor for o in pl.overrides(text)]
    found += pl.n_cpu_moe(q.n_cpu_moe) if q.n_cpu_moe is not None else ()
    if found:
        given["overrides"] = tuple(found)
    return {k: v for k, v in given.items() if v is not None}


def _full(model: Model, q: Any, card: Any, planner: Any, runtime: str | None) -> dict[str, Any]:
    from ..memory.core.limits import max_positions
    from ..memory.core.plan import context_for

    context, why = context_for(model, q.context)
    p = planner.plan(context=context, batch=q.batch)
    limit = max_positions(model)
    ram, cpus = _ram(p, q), on_cpus(q, runtime)
    return {
        "mode": q.mode,
        "runtime": runtime,
        "partial": False,
        "total": p.total,
        "host": p.host,
        "terms": [term_dict(t) for t in p.terms],
        "settings": {**{k: _plain(v) for k, v in p.settings.items()}, "context": context, "context_from": why},
        "notes": list(p.notes),
        "gpu": gpu_dict(card),
        "fits": _fits(p.total, card, ram, cpus),
        "ram": ram,
        "context_limit": limit,
        "curve": _curve(planner, q.batch, context, limit),
        "precisions": [] if cpus else _precisions(model, card, context, q, runtime),  # a fit is on a GPU
        "serving": planner.serving(0 if cpus else card.memory, context) if runtime == "vllm" else None,
    }


def _training_planner(model: Model, q: Any) -> Any:
    from ..memory.training.plan import TrainingPlanner

    try:
        return TrainingPlanner(model, q.scheme, **_training(q))
    except ParamcountError as e:
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise


def _training(q: Any) -> dict[str, Any]:
    """Training options as the memory package takes them; LoRA mode adds the adapters' rank."""
    opts: dict[str, Any] = {"optimizer": q.optimizer or "adamw", "recompute": q.recompute or None}
    if q.mode == "lora":
        opts["lora"] = q.lora_rank or DEFAULT_LORA_RANK
        opts["lora_targets"] = q.lora_targets or None
    elif q.scheme == "qlora":
        raise ParamcountError("qlora trains LoRA adapters on a 4-bit base: choose the LoRA mode", field="scheme")
    return opts


def _weights_only(model: Model, q: Any, card: Any, planner: Any, runtime: str) -> dict[str, Any]:
    """The runtime's weights term (on a GPU, llama.cpp's device buffer, with the input layer it
    keeps in host memory beside it)."""
    term, host = planner.weights, tuple(getattr(planner, "host", ()))
    chosen = list(dict.fromkeys([*_inference_precisions(runtime), q.scheme]))
    return {
        "mode": q.mode,
        "runtime": runtime,
        "partial": True,
        "total": term.bytes,
        "host": sum(t.bytes for t in host),
        "terms": [term_dict(t) for t in (term, *host)],
        "settings": {"scheme": q.scheme, "context": None, "batch": q.batch},
        "notes": [f"weights only: {planner.partial}"],
        "gpu": gpu_dict(card),
        "fits": term.bytes <= card.usable and (q.ram is None or sum(t.bytes for t in host) <= ram_bytes(q)),
        "ram": None if q.ram is None else _ram_of(sum(t.bytes for t in host), q),
        "context_limit": None,
        "curve": {"contexts": [], "series": []},
        "precisions": [_weights_row(model, name) for name in chosen],
    }


def _ram_of(held: int, q: Any) -> dict[str, Any]:
    ram = ram_bytes(q) or 0
    return {"bytes": ram, "host": held, "fits": held <= ram}


def _inference_precisions(runtime: str | None) -> tuple[str, ...]:
    """The precisions fit.py tries for a runtime: llama.cpp's file types, what vLLM serves most,
    or the standard ones."""
    from ..memory.fit import LLAMA_INFERENCE, MLX_INFERENCE, VLLM_INFERENCE, precisions

    by_runtime = {"llama.cpp": LLAMA_INFERENCE, "vllm": VLLM_INFERENCE, "mlx": MLX_INFERENCE}
    return by_runtime.get(runtime or "") or precisions("inference")


def _weights_row(model: Model, name: str) -> dict[str, Any]:
    from ..memory.weights.schemes import weights

    try:
        size = weights(model, name).bytes
    except BadSource:
        raise
    except ParamcountError as e:
        return {"scheme": name, "label": name, "available": False, "why": str(e)}
    return {"scheme": name, "label": name, "available": True, "weights": size}


def _plain(value: Any) -> Any:
    """A setting as JSON: lists and maps of plain values kept (llama.cpp's devices, -ts), else text."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def contexts(context: int, limit: int | None) -> list[int]:
    """Powers of two up to the model's limit (or 2^20), with the chosen context and the limit."""
    top = min(limit or 2**MAX_CONTEXT_EXP, 2**MAX_CONTEXT_EXP)
    points = {2**k for k in range(MIN_CONTEXT_EXP, MAX_CONTEXT_EXP + 1) if 2**k <= top}
    points |= {top, context} if context <= 2**MAX_CONTEXT_EXP else {top}
    return sorted(points)


def _curve(planner: Any, batch: int, context: int, limit: int | None) -> dict[str, Any]:
    xs = contexts(context, limit)
    plans = [planner.plan(context=c, batch=batch) for c in xs]
    keys = [t.key for t in plans[0].device_terms]  # against the GPU: not what the host holds
    series = [
        {"key": k, "label": plans[0].term(k).label.split(" (")[0], "bytes": [p.term(k).bytes for p in plans]}
        for k in keys
    ]
    return {"contexts": xs, "series": series}


def _precisions(model: Model, card: Any, context: int, q: Any, runtime: str | None) -> list[dict[str, Any]]:
    """Each standard precision (and the chosen one) on the GPU; one that cannot apply says why."""
    from ..memory.fit import precisions

    mode = "inference" if q.mode == "inference" else "training"
    if mode == "training":
        chosen = [p for p in precisions(mode) if q.mode != "training" or p != "qlora"]
        options = _training(q)
    else:
        chosen = list(_inference_precisions(runtime))
        options = {"runtime": runtime, "kv_dtype": q.kv_dtype, **_runtime_options(q), **placement_options(q)}
        if runtime == "vllm":
            options["tp"] = q.tp or 1  # the chosen split: without one, a vLLM fit searches for the fewest GPUs
    chosen += [] if q.scheme in chosen else [q.scheme]
    ram = ram_bytes(q)
    return [_fit_row(model, card, context, q.batch, mode, name, _grouped(options, name), ram) for name in chosen]


def _grouped(options: dict, name: str) -> dict:
    """MLX's --group-size applies to its mlx-Nbit rows; a float row (bf16) takes none (mlx-lm's)."""
    if options.get("group_size") is None or name.startswith("mlx-"):
        return options
    return {**options, "group_size": None}


def _fit_row(
    model: Model, card: Any, context: int, batch: int, mode: str, name: str, options: dict, ram: int | None = None
) -> dict:
    from ..memory.fit import fit

    try:
        row = fit(model, card, context, batch, mode, only=(name,), ram=ram, **options).rows[0]
    except BadSource:  # a malformed file, whatever the precision: the request's error, as fit's
        raise
    except ParamcountError as e:
        return {"scheme": name, "label": name, "available": False, "why": str(e)}
    return {
        "scheme": name,
        "label": TRAINING_LABELS.get(name, name) if mode == "training" else name,
        "available": True,
        "weights": row.plan.term("weights").bytes,
        "total": row.plan.total,
        "fits": row.fits,
        "max_context": row.max_context,
        "context_limit": row.context_limit,
        "gpus": row.gpus if mode == "training" else None,
        "max_sequences": row.serving["max_sequences"] if row.serving else None,
    }


# ---- speed: paramcount speed's figures, and decode against context ------------------------------

SPEED_OPTIONS = ("vllm_version", "group_size", "flash_attn")


def speed(model: Model, q: Any) -> dict[str, Any]:
    """Decode, prefill and TTFT as ``paramcount speed --json`` gives them for the request's
    settings (:func:`paramcount.memory.speed.speed`, the call it makes), and decode per stream at
    each KV depth of the memory curve's contexts: the estimate (None where the runtime and card
    have no fitted factors) and the upper bound. Several cards of the kind chosen stand for vLLM's
    tensor parallel and llama.cpp's -ts shares, as ``speed --gpu A,A`` names them."""
    from ..memory.core.limits import max_positions
    from ..memory.core.plan import context_for
    from ..memory.speed import speed as predict
    from ..memory.speed.estimate import VLLM_ON_CPU

    context, _ = context_for(model, modelfile_context(model, q.context))
    limit = max_positions(model)
    dtype = None if q.scheme in (None, "stored") else q.scheme  # stored: the file's own (advise's rule)
    options = {**{k: getattr(q, k) for k in SPEED_OPTIONS if getattr(q, k) is not None}, **placement_options(q)}

    def at(depth: int) -> Any:
        return predict(model, rows, q.runtime, dtype, depth, q.prompt, q.concurrency, q.cpu, **options)

    if q.device == "cpu":  # the CLI's refusal of vLLM on a CPU; never a CPU plan's figures on a GPU
        raise ParamcountError(VLLM_ON_CPU, field="device")
    try:
        rows = [_speed_card(q.gpu)] * _cards(q, options)
        shown = at(context)
        points = [(c, at(c).decode) for c in contexts(context, limit)]
    except ParamcountError as e:
        e.field = FLAG_FIELDS.get(e.field, e.field)
        raise
    curve = {
        "contexts": [c for c, _ in points],
        "estimate": [_rate(f.tokens_per_s) for _, f in points],
        "bound": [_rate(f.bound_tokens_per_s) for _, f in points],
    }
    return {"speed": shown.to_dict(), "curve": curve, "context_limit": limit}


def _cards(q: Any, options: dict[str, Any]) -> int:
    """How many cards the settings name: vLLM's --tp, llama.cpp's -ts shares (else one)."""
    if q.tp is not None:
        return q.tp
    return len(options.get("tensor_split") or ()) or 1


def _speed_card(name: str) -> Any:
    """The hardware catalog's row for the card chosen (its bandwidth and peaks); a bare size has none."""
    from ..memory.core.gpus import gpu, hardware_row

    row = hardware_row(gpu(name))
    if row is None:
        raise ParamcountError("a size, not a card of the catalog: name the card for its speed", field="gpu")
    return row


def _rate(x: float | None) -> float | None:
    return None if x is None else round(x, 2)
