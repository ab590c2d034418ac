"""Ollama's recommendation for a model in its store: the longest ``num_ctx`` at which Ollama's own
estimate (v0.12.10, :mod:`paramcount.memory.runtimes.ollama`) offloads every layer, at least the
modelfile's; else the modelfile's (or the default) context with the layers Ollama leaves on the CPU."""

from __future__ import annotations

from typing import Any

from ..memory.core.gpus import gpu as find_gpu
from ..memory.core.limits import max_positions
from ..memory.fit import NO_LIMIT_CONTEXT, largest
from ..memory.runtimes.ollama import Asked, estimate_plan
from ..memory.runtimes.ollama.command import load_command
from .recommendation import Recommendation, host_ok, ram_words

PREFIX = "ollama:"


def advise(model: Any, gpu: Any, ram: int | None, least: int, asked: tuple[str, ...] = ()) -> Recommendation:
    card = find_gpu(gpu)
    source = str(model.source)
    if not source.startswith(PREFIX):
        why = "Ollama runs the models in its store: name one as ollama:NAME"
        return Recommendation("ollama", None, None, False, None, None, None, why, "none")
    name = source[len(PREFIX) :]
    base = estimate_plan(model, card).settings.context  # the modelfile's num_ctx, else Ollama's default

    def whole(ctx: int) -> bool:
        o = estimate_plan(model, card, Asked(context=ctx))
        return o.num_gpu >= o.layers_model

    longest = largest(whole, base, max_positions(model) or NO_LIMIT_CONTEXT)
    o = estimate_plan(model, card, Asked(context=longest or base))
    plan = o.plan
    if not host_ok(plan.host, ram):
        why = f"Ollama's estimate leaves {o.layers_model - o.num_gpu} layers on the CPU, beyond {ram_words(ram)}"
        return Recommendation("ollama", None, None, False, None, None, None, why, "none")
    ctx = o.settings.context
    where = "every layer on the GPU" if longest else f"{o.num_gpu} of {o.layers_model} layers on the GPU"
    why = f"{where} by Ollama's own estimate (num_gpu {o.num_gpu}); the modelfile's num_ctx is {base:,}"
    placement = "gpu" if longest else "offload"
    return Recommendation(
        "ollama", None, ctx, True, plan.total, plan.host, load_command(name, ctx), why, placement, plan
    )
