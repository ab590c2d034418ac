"""MLX's recommendation on an Apple chip: the best mlx-lm scheme (8-bit down to 3-bit; bf16 only
when asked, as llama.cpp's F16) at the longest context that fits macOS's recommended working set,
with the ``mlx_lm.chat`` line that runs it."""

from __future__ import annotations

from typing import Any

from ..errors import ParamcountError
from ..memory.core.gpus import gpu as find_gpu
from ..memory.core.limits import max_positions
from ..memory.fit import NO_LIMIT_CONTEXT, largest_under
from ..memory.runtimes import planner as make_planner
from ..memory.runtimes.mlx.command import chat_command
from .recommendation import Recommendation, model_ref

SCHEMES = ("mlx-8bit", "mlx-6bit", "mlx-4bit", "mlx-3bit")


def advise(model: Any, gpu: Any, ram: int | None, least: int, asked: tuple[str, ...] = ()) -> Recommendation:
    card = find_gpu(gpu)
    refused: list[str] = []
    for s in asked or SCHEMES:
        try:
            p = make_planner(model, s, "mlx")
        except ParamcountError as e:  # a family mlx-lm's models do not cover here
            refused.append(e.message)
            continue
        longest = largest_under(lambda t, p=p: p.total(t, 1), card.usable, 1, max_positions(model) or NO_LIMIT_CONTEXT)
        if longest is not None and longest >= least:
            plan = p.plan(longest, 1)
            command = chat_command(model_ref(model), s, longest)
            why = "unified memory, within macOS's recommended working set"
            return Recommendation("mlx", s, longest, True, plan.total, 0, command, why, "gpu", plan)
    if refused and len(refused) == len(asked or SCHEMES):
        return Recommendation("mlx", None, None, False, None, None, None, refused[0], "none")
    why = f"no mlx-lm scheme ({', '.join(asked or SCHEMES)}) fits {card.name} at {least:,} tokens"
    return Recommendation("mlx", None, None, False, None, None, None, why, "none")
