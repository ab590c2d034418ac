"""transformers' recommendation: bf16, else bitsandbytes' 8-bit (LLM.int8), else its NF4 (what
``BitsAndBytesConfig`` loads: embeddings and the head stay 16-bit), at the longest context that
fits the GPU (the figure ``fit`` shows), with the ``from_pretrained`` line that loads it so."""

from __future__ import annotations

from typing import Any

from ..errors import ParamcountError
from ..memory.core.gpus import gpu as find_gpu
from ..memory.core.limits import max_positions
from ..memory.fit import NO_LIMIT_CONTEXT, largest_under
from ..memory.runtimes import planner as make_planner
from ..memory.runtimes.transformers.command import load_command
from .recommendation import Recommendation, model_ref

SCHEMES = ("bf16", "bnb-int8", "nf4")


def advise(model: Any, gpu: Any, ram: int | None, least: int, asked: tuple[str, ...] = ()) -> Recommendation:
    card = find_gpu(gpu)
    for s in asked or SCHEMES:
        try:
            p = make_planner(model, s, "transformers", gpu=card)
        except ParamcountError:
            continue
        if getattr(p, "partial", None):  # weights alone: no cache layout, so no context figure
            plan = p.plan(least, 1)
            if plan.total <= card.usable:
                command, why = load_command(model_ref(model), s, model.class_name), f"weights only: {p.partial}"
                return Recommendation("transformers", s, None, True, plan.total, 0, command, why, "gpu", plan)
            continue
        longest = largest_under(lambda t, p=p: p.total(t, 1), card.usable, 1, max_positions(model) or NO_LIMIT_CONTEXT)
        if longest is not None and longest >= least:
            plan = p.plan(longest, 1)
            why = "every weight on the GPU"
            command = load_command(model_ref(model), s, model.class_name)
            return Recommendation("transformers", s, longest, True, plan.total, 0, command, why, "gpu", plan)
    why = f"no scheme ({', '.join(asked or SCHEMES)}) fits {card.name} at {least:,} tokens"
    return Recommendation("transformers", None, None, False, None, None, None, why, "none")
