"""Which runtime an inference plan models, chosen in one place.

``transformers`` (PyTorch, today's plan: :class:`paramcount.memory.runtimes.transformers.plan.InferencePlanner`),
``llama.cpp`` (:class:`paramcount.memory.runtimes.llamacpp.plan.LlamaCppPlanner`), ``vllm``
(:class:`paramcount.memory.runtimes.vllm.plan.VllmPlanner`) and ``mlx`` (mlx-lm on Apple Silicon:
:class:`paramcount.memory.runtimes.mlx.plan.MlxPlanner`). The default
is llama.cpp for a GGUF file (the runtime that reads it) and transformers for anything else.
Each runtime takes its own options; one given to a runtime that has no such setting is a
one-line error naming the flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ParamcountError
from ...model import Model
from ..core.plan import Plan, as_model, context_for
from .llamacpp.placement import PLACEMENT_OPTIONS

RUNTIMES = ("transformers", "llama.cpp", "vllm", "mlx")
# Names as people write them, compared without case or punctuation: vLLM, llamacpp, llama_cpp, HF.
_ALIASES = {"llamacpp": "llama.cpp", "hf": "transformers", "pytorch": "transformers", "torch": "transformers"}
_ALIASES |= {"mlxlm": "mlx"}


def canonical(name: str) -> str:
    """The runtime ``name`` means (``vLLM``, ``llamacpp``, ``Llama.CPP``), or a one-line error
    naming the nearest."""
    import difflib
    import re

    key = re.sub(r"[^a-z0-9]", "", name.lower())
    known = {re.sub(r"[^a-z0-9]", "", r): r for r in RUNTIMES} | _ALIASES
    if key in known:
        return known[key]
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
    hint = f"; did you mean {known[close[0]]}?" if close else ""
    raise ParamcountError(f"unknown runtime {name!r}{hint} (choose one of: {', '.join(RUNTIMES)})", field="--runtime")


# Options only one runtime takes, and the flag that sets each.
LLAMA_OPTIONS = {
    "ubatch": "--ubatch",
    "flash_attn": "--flash-attn",
    "swa_full": "--swa-full",
    "kv_unified": "--kv-unified",
    "type_k": "--cache-type-k",
    "type_v": "--cache-type-v",
    "device": "--device",
    "embeddings": "--embeddings",
    "text_only": "--no-mmproj",
    "cpu": "--cpu-features",
    **PLACEMENT_OPTIONS,
}
VLLM_OPTIONS = {
    "tp": "--tp",
    "pp": "--pp",
    "ep": "--ep",
    "utilization": "--gpu-memory-utilization",
    "block_size": "--block-size",
    "max_num_seqs": "--max-num-seqs",
    "max_batched_tokens": "--max-num-batched-tokens",
    "enforce_eager": "--enforce-eager",
    "vllm_version": "--vllm-version",
    "gpu": "--gpu",  # the GPU served on: vllm serve's batch defaults follow it
    "device": "--device",  # shared with llama.cpp: --device cpu is vLLM's CPU platform
    "kv_cache_space": "--kv-cache-space",  # VLLM_CPU_KVCACHE_SPACE, with --device cpu
    "ram": "--ram",  # the CPU's memory, with --device cpu
}
MLX_OPTIONS = {
    "group_size": "--group-size",
    "prompt": "--prompt",
    "kv_bits": "--kv-bits",
    "kv_group_size": "--kv-group-size",
    "quantized_kv_start": "--quantized-kv-start",
    "max_kv_size": "--max-kv-size",
    "prefill_step_size": "--prefill-step-size",
    "device": "--device",  # mlx on the cpu (the attention fallback) or an Apple GPU
}
TRANSFORMERS_OPTIONS = {
    "cache": "--kv-cache",
    "encoder_length": "--encoder-length",
    "mla": "--mla",
    "images": "--images",
    "image_size": "--image-size",
    "audio": "--audio",
    "attn": "--attn",
    "gpu": "--gpu",  # the GPU loaded on: whether a quantization_config stays quantised
}


def runtime(name: str | None, model: Model) -> str:
    """The runtime called ``name``, or the default for ``model``."""
    if name is None:
        from ...gguf.meta import is_gguf

        return "llama.cpp" if is_gguf(model) else "transformers"
    if not isinstance(name, str):
        raise ParamcountError(f"unknown runtime {name!r}; choose one of: {', '.join(RUNTIMES)}", field="--runtime")
    return canonical(name)


def planner(
    model: Model, scheme: str | None, name: str | None = None, *, for_ollama: bool = False, **options: Any
) -> Any:
    """An inference planner for ``model`` under the chosen runtime. ``for_ollama``: llama.cpp's
    planner for the model Ollama has loaded (its gpt-oss files' ggml type 4 repacked to MXFP4,
    llama.cpp's 39: ollama ml/backend/ggml/ggml.go Backend.Load), which llama.cpp itself refuses."""
    chosen = runtime(name, model)
    _check(chosen, options)
    _loads(chosen, scheme)
    if chosen == "llama.cpp":
        from .llamacpp.offload import PlacedPlanner  # llama.cpp's planner, with -ngl, -ot and -ts
        from .llamacpp.plan import loadable

        if not for_ollama:
            loadable(model)

        return PlacedPlanner(model, scheme, **_own(options, "llama.cpp"))
    if chosen == "vllm":
        from .vllm.plan import VllmPlanner

        return VllmPlanner(model, scheme, **_own(options, "vllm"))
    if chosen == "mlx":
        from .mlx.plan import MlxPlanner

        return MlxPlanner(model, scheme, **_own(options, "mlx"))
    from .transformers.plan import InferencePlanner

    return InferencePlanner(model, scheme, **_own(options, "transformers"))


OWN = {"transformers": TRANSFORMERS_OPTIONS, "llama.cpp": LLAMA_OPTIONS, "vllm": VLLM_OPTIONS, "mlx": MLX_OPTIONS}


def _own(options: Mapping[str, Any], chosen: str) -> dict[str, Any]:
    """The options a runtime's planner takes: the shared ones and its own."""
    others = {k for name, flags in OWN.items() if name != chosen for k in flags}
    return {k: v for k, v in options.items() if k not in others or k in OWN[chosen]}


def _loads(chosen: str, name: str | None) -> None:
    """A GGUF type under a runtime that does not load GGUF files is refused, naming those that do
    (transformers' gguf loading dequantises to 16 bits, so its plan would not be the file's)."""
    if name is None or chosen in ("llama.cpp", "mlx"):  # mlx's planner names its own schemes when it refuses
        return
    from ..weights.base import SCHEMES, scheme

    if name.strip().lower() in SCHEMES and scheme(name).method == "gguf":  # mlx-Nbit & co.: their runtime's own
        raise ParamcountError(
            f"{name} is a GGUF type: llama.cpp and Ollama load it (--runtime llama.cpp or ollama), not {chosen}",
            field="--dtype",
        )


def _check(chosen: str, options: Mapping[str, Any]) -> None:
    """An option of another runtime, set, is an error (None and False are 'not given')."""
    for owner, flags in OWN.items():
        if owner == chosen:
            continue
        for key, flag in flags.items():
            value = options.get(key)
            if key in OWN[chosen] or (key == "cache" and value == "llama.cpp" and chosen == "llama.cpp"):
                continue
            if value is not None and value is not False:
                owners = " and ".join(name for name, keys in OWN.items() if key in keys)  # --device: two
                raise ParamcountError(f"{flag} is a {owners} setting; this plan's runtime is {chosen}", field=flag)


def inference(
    model: Model | str | Mapping[str, Any],
    scheme: str | None = None,
    context: int | None = None,
    batch: int = 1,
    kv_dtype: str | None = None,
    overhead: Any = None,
    **options: Any,
) -> Plan:
    """Inference memory: weights at ``scheme`` + KV cache + activation working set + overhead.

    ``scheme`` defaults to ``stored`` (the weights as the files hold them) for a model read from
    a GGUF or safetensors checkpoint, and to bf16 otherwise. A model without a KV-cache layout
    gets its weights and overhead alone (``Plan.partial`` says why).
    ``context`` defaults to the model's limit capped at 4,096 tokens; ``kv_dtype`` to the
    scheme's compute dtype (bf16; fp32/fp16 for those schemes; fp16 for GGUF, GPTQ and AWQ);
    ``overhead`` is the measured CUDA context, cuBLAS workspace and allocator reserve
    (:data:`paramcount.memory.core.overhead.MEASURED`) unless given (a string like ``"1GB+5%"`` or an
    Overhead); ``attn`` (``sdpa``/``eager``/``flash_attention_2``) overrides transformers' choice;
    ``gpu`` (a name or :class:`~paramcount.memory.core.gpus.GPU`) is the card a checkpoint with a
    ``quantization_config`` is loaded on: it decides whether its weights stay quantised
    (:mod:`paramcount.memory.runtimes.transformers.loading`).
    ``options``: ``keep`` (what stays in high precision), ``cache`` (``dynamic``/``static``/``llama.cpp``),
    ``encoder_length``, ``mla`` (``latent``/``expanded``), as the weights and KV modules take them;
    ``runtime`` (:mod:`paramcount.memory.runtimes`: llama.cpp by default for a GGUF file, whose
    options are :class:`paramcount.memory.runtimes.llamacpp.plan.Options`' fields).
    """
    model = as_model(model)
    context, why = context_for(model, context)
    runtime = options.pop("runtime", None)
    return planner(model, scheme, runtime, kv_dtype=kv_dtype, overhead=overhead, **options).plan(context, batch, why)
