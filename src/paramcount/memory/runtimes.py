"""Which runtime an inference plan models, chosen in one place.

``transformers`` (PyTorch, today's plan: :class:`paramcount.memory.plan.InferencePlanner`),
``llama.cpp`` (:class:`paramcount.memory.llamacpp.LlamaCppPlanner`) and ``vllm``. The default
is llama.cpp for a GGUF file (the runtime that reads it) and transformers for anything else.
Each runtime takes its own options; one given to a runtime that has no such setting is a
one-line error naming the flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ParamcountError
from ..model import Model

RUNTIMES = ("transformers", "llama.cpp", "vllm")
_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "hf": "transformers", "pytorch": "transformers"}

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
}
TRANSFORMERS_OPTIONS = {
    "cache": "--kv-cache",
    "encoder_length": "--encoder-length",
    "mla": "--mla",
    "images": "--images",
    "image_size": "--image-size",
}


def runtime(name: str | None, model: Model) -> str:
    """The runtime called ``name``, or the default for ``model``."""
    if name is None:
        from .gguf_file import is_gguf

        return "llama.cpp" if is_gguf(model) else "transformers"
    key = name.strip().lower() if isinstance(name, str) else None
    key = _ALIASES.get(key, key)
    if key not in RUNTIMES:
        raise ParamcountError(f"unknown runtime {name!r}; choose one of: {', '.join(RUNTIMES)}", field="--runtime")
    return key


def planner(model: Model, scheme: str | None, name: str | None = None, **options: Any) -> Any:
    """An inference planner for ``model`` under the chosen runtime."""
    chosen = runtime(name, model)
    _check(chosen, options)
    if chosen == "llama.cpp":
        from .llamacpp import LlamaCppPlanner

        given = {k: v for k, v in options.items() if k not in TRANSFORMERS_OPTIONS}
        return LlamaCppPlanner(model, scheme, **given)
    if chosen == "vllm":
        raise ParamcountError("the vLLM plan is not available yet; use transformers or llama.cpp", field="--runtime")
    from .plan import InferencePlanner

    given = {k: v for k, v in options.items() if k not in LLAMA_OPTIONS}
    return InferencePlanner(model, scheme, **given)


def _check(chosen: str, options: Mapping[str, Any]) -> None:
    """An option of another runtime, set, is an error (None and False are 'not given')."""
    other = TRANSFORMERS_OPTIONS if chosen == "llama.cpp" else LLAMA_OPTIONS
    for key, flag in other.items():
        value = options.get(key)
        if key == "cache" and value == "llama.cpp" and chosen == "llama.cpp":
            continue
        if value is not None and value is not False:
            owner = "transformers" if other is TRANSFORMERS_OPTIONS else "llama.cpp"
            raise ParamcountError(f"{flag} is a {owner} setting; this plan's runtime is {chosen}", field=flag)
