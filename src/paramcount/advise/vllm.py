"""vLLM's recommendation on ONE card (tensor parallel only when asked): the checkpoint as stored,
else FP8 quantised at load (``--quantization fp8``), at the longest ``--max-model-len`` whose KV
blocks vLLM starts with at its default ``--gpu-memory-utilization`` (the figure ``fit`` shows)."""

from __future__ import annotations

from typing import Any

from ..errors import ParamcountError
from ..memory.core.gpus import gpu as find_gpu
from ..memory.core.limits import max_positions
from ..memory.fit import NO_LIMIT_CONTEXT, largest_under
from ..memory.runtimes import planner as make_planner
from ..memory.runtimes.vllm.command import serve_command
from ..memory.weights.dtype import default_scheme
from .recommendation import Recommendation, model_ref


def advise(model: Any, gpu: Any, ram: int | None, least: int, asked: tuple[str, ...] = ()) -> Recommendation:
    card = find_gpu(gpu)
    stored = default_scheme(model)
    tried = []
    for s in asked or tuple(dict.fromkeys((stored, "fp8"))):
        try:
            p = make_planner(model, s, "vllm", gpu=card)
        except ParamcountError as e:  # a scheme vLLM does not serve for this model
            tried.append(f"{s}: {e}")
            continue
        longest = largest_under(lambda t, p=p: p.total(t, 1), card.usable, 1, max_positions(model) or NO_LIMIT_CONTEXT)
        if longest is not None and longest >= least:
            plan = p.plan(longest, 1)
            command = serve_command(model_ref(model), s, stored, longest, p.o.utilization)
            why = f"one GPU, claiming {float(p.o.utilization):g} of it"
            return Recommendation("vllm", s, longest, True, plan.total, 0, command, why, "gpu", plan)
        tried.append(f"{s}: not at {least:,} tokens")
    refused = [t for t in tried if not t.endswith(f"not at {least:,} tokens")]
    if len(refused) == len(tried):  # no scheme could be planned: the reason, once
        return Recommendation("vllm", None, None, False, None, None, None, refused[0].split(": ", 1)[1], "none")
    why = f"nothing vLLM serves fits one {card.name} at {least:,} tokens ({'; '.join(tried)})"
    return Recommendation("vllm", None, None, False, None, None, None, why, "none")
