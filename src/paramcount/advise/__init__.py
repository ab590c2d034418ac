"""One recommendation per runtime: the scheme, the context and the command to paste.

A layer above the runtimes: it asks their planners (the same search `fit`'s table makes over
them) and never reaches into them; each runtime package renders its own command
from the settings chosen here, so a pasted command fed back to ``paramcount memory`` gives the same
plan. The context a recommendation states is the one figure ``fit``'s table shows for that scheme.

    >>> from paramcount import load
    >>> from paramcount.advise import recommend
    >>> [r.runtime for r in recommend(load("Qwen/Qwen3-0.6B"), "rtx3060", ram=16 << 30)]
    ['llama.cpp', 'vllm', 'transformers']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ParamcountError
from ..memory.core.plan import as_model, context_for
from .recommendation import Recommendation

__all__ = ["RUNTIMES", "Recommendation", "recommend"]

RUNTIMES = ("llama.cpp", "vllm", "transformers", "ollama")


def recommend(
    model: Any,
    gpu: Any,
    *,
    ram: int | None = None,
    context: int | None = None,
    runtimes: Sequence[str] | None = None,
    schemes: Mapping[str, Sequence[str]] | None = None,
) -> tuple[Recommendation, ...]:
    """The best scheme and the largest context that fit ``gpu`` under each runtime, with the
    command to run it. ``ram``: host memory free for the model (None: not checked, said so);
    ``context``: the least context a recommendation must hold (default: the model's, ≤ 4,096);
    ``schemes``: the schemes a runtime may use (the user's --dtype), by runtime, best first."""
    from . import llamacpp, ollama, transformers, vllm

    model = as_model(model)
    least, _ = context_for(model, context)
    chosen = tuple(runtimes or _default_runtimes(model))
    makers = {"llama.cpp": llamacpp.advise, "vllm": vllm.advise, "transformers": transformers.advise}
    makers["ollama"] = ollama.advise
    out = []
    for name in chosen:
        if name not in makers:
            raise ParamcountError(
                f"no recommendation for runtime {name!r}; one of {', '.join(RUNTIMES)}", field="--runtime"
            )
        out.append(makers[name](model, gpu, ram, least, tuple((schemes or {}).get(name) or ())))
    return tuple(out)


def _default_runtimes(model: Any) -> tuple[str, ...]:
    """Every runtime that loads this source: a model in Ollama's store Ollama and llama.cpp (its
    blob is a GGUF file), another GGUF file llama.cpp alone."""
    from ..gguf.meta import is_gguf

    if str(getattr(model, "source", "")).startswith("ollama:"):
        return ("ollama", "llama.cpp")
    if is_gguf(model):
        return ("llama.cpp",)
    return ("llama.cpp", "vllm", "transformers")
