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

RUNTIMES = ("llama.cpp", "vllm", "transformers", "ollama", "mlx")


def recommend(
    model: Any,
    gpu: Any,
    *,
    ram: int | None = None,
    context: int | None = None,
    runtimes: Sequence[str] | None = None,
    schemes: Mapping[str, Sequence[str]] | None = None,
    cpu: Any = None,
) -> tuple[Recommendation, ...]:
    """The best scheme and the largest context that fit ``gpu`` under each runtime, with the
    command to run it. ``ram``: host memory free for the model (None: not checked, said so);
    ``context``: the least context a recommendation must hold (default: the model's, ≤ 4,096);
    ``schemes``: the schemes a runtime may use (the user's --dtype), by runtime, best first;
    ``cpu``: the host CPU (a hardware row or name), whose speed counts for weights left in RAM."""
    from . import llamacpp, mlx, ollama, transformers, vllm

    model = as_model(model)
    least, _ = context_for(model, context)
    chosen = tuple(runtimes or _default_runtimes(model, gpu))
    makers = {"llama.cpp": llamacpp.advise, "vllm": vllm.advise, "transformers": transformers.advise}
    makers.update(ollama=ollama.advise, mlx=mlx.advise)
    out = []
    for name in chosen:
        if name not in makers:
            raise ParamcountError(
                f"no recommendation for runtime {name!r}; one of {', '.join(RUNTIMES)}", field="--runtime"
            )
        try:
            found = makers[name](model, gpu, ram, least, tuple((schemes or {}).get(name) or ()))
        except ParamcountError as e:  # a model this runtime cannot plan: said on its line, never a failed fit
            found = Recommendation(name, None, None, False, None, None, None, e.message, "none")
        out.append(with_speed(model, found, gpu, cpu) if found.fits else found)
    return tuple(out)


SPEED_DEPTH = 4096  # decode is said at this many tokens of context (or the whole context, if shorter)
SPEED_PROMPT = 512  # prefill and TTFT of a prompt this long (llama-bench's pp512)


def with_speed(model: Any, rec: Recommendation, gpu: Any, cpu: Any = None) -> Recommendation:
    """``rec`` with its decode, prefill and TTFT as :func:`paramcount.memory.speed.speed` predicts
    them on this card (and ``cpu``, the host, for weights left there), or why there are none."""
    from dataclasses import replace

    from ..memory.core.gpus import gpu as find_gpu
    from ..memory.core.gpus import hardware_row
    from ..memory.speed import speed

    if rec.context is None:
        return replace(rec, speed={"unavailable": "weights only: without a context, no decode figure"})
    row = hardware_row(find_gpu(gpu))
    if row is None:
        return replace(rec, speed={"unavailable": "a size, not a card of the catalog: name the card for its speed"})
    depth = min(rec.context or SPEED_DEPTH, SPEED_DEPTH)
    options = {k: v for k, v in rec.options.items() if v is not None}
    dtype = None if rec.scheme == "stored" else rec.scheme
    try:
        s = speed(model, [row], rec.runtime, dtype, depth, SPEED_PROMPT, 1, cpu, **options)
    except ParamcountError as e:
        return replace(rec, speed={"unavailable": e.message})
    return replace(rec, speed=_speed_dict(s.to_dict(), depth))


def _speed_dict(d: dict[str, Any], depth: int) -> dict[str, Any]:
    """The three figures, each an estimate (with its expected error) or, without one, a bound."""
    out: dict[str, Any] = {"context_depth": depth, "prompt_tokens": SPEED_PROMPT}
    for phase in ("decode", "prefill", "ttft"):
        f = d[phase]
        shown = f["estimate"] or f["upper_bound"]
        if shown is None:
            out[phase] = None
            continue
        value = shown.get("seconds") if phase == "ttft" else shown.get("tokens_per_s")
        good = value is not None and value > 0
        out[phase] = (
            {"value": value, "label": shown["label"], "expected_error": shown.get("expected_error")} if good else None
        )
    return out


def _default_runtimes(model: Any, gpu: Any) -> tuple[str, ...]:
    """Every runtime that loads this source on this hardware: a model in Ollama's store Ollama and
    llama.cpp (its blob is a GGUF file), another GGUF file llama.cpp alone; on an Apple chip
    llama.cpp and MLX (vLLM and CUDA's transformers do not run there)."""
    from ..gguf.meta import is_gguf
    from ..memory.core.gpus import gpu as find_gpu

    if str(getattr(model, "source", "")).startswith("ollama:"):
        return ("ollama", "llama.cpp")
    if is_gguf(model):
        return ("llama.cpp",)
    if find_gpu(gpu).kind == "apple":
        return ("llama.cpp", "mlx")
    return ("llama.cpp", "vllm", "transformers")
