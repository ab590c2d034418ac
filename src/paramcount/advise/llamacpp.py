"""llama.cpp's recommendation: the best GGUF type whose every layer fits the GPU, at the largest
context that fits (the figure ``fit``'s table shows); else the experts (``--n-cpu-moe``) or the
layers (``-ngl``) that must stay in host memory, for a type that then fits the GPU and the RAM.

Quality first while everything fits on the GPU, from q8_0 down (F16 only when asked: it doubles
the bytes every token reads for a difference llama.cpp's own perplexity tables put within noise of
q8_0). With weights in host memory every token waits on the host's bandwidth, so the offloaded
search starts at q4_k_m, the type most GGUF repositories publish first.
"""

from __future__ import annotations

from typing import Any

from ..errors import ParamcountError
from ..gguf.meta import is_gguf
from ..memory.core.gpus import gpu as find_gpu
from ..memory.core.limits import max_positions
from ..memory.fit import NO_LIMIT_CONTEXT, largest_under, smallest
from ..memory.runtimes import planner as make_planner
from ..memory.runtimes.llamacpp.command import gguf_file, server_command
from ..memory.runtimes.llamacpp.offload import layers_of
from ..memory.runtimes.llamacpp.placement import n_cpu_moe, placement
from ..memory.runtimes.llamacpp.plan import has_towers
from .recommendation import Recommendation, host_ok, model_ref, ram_words

WHOLE = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k")
OFFLOADED = ("q4_k_m", "q3_k_m", "q2_k")
FLASH = "on"  # -fa: the plan's default (auto resolves to on where the backend has the kernel)


def advise(model: Any, gpu: Any, ram: int | None, least: int, asked: tuple[str, ...] = ()) -> Recommendation:
    card = find_gpu(gpu)
    if is_gguf(model):  # a file is run as it is: its own types
        asked = ("stored",)
    refused: list[str] = []
    for search, schemes in ((_whole, asked or WHOLE), (_offloaded, asked or OFFLOADED)):
        for s in schemes:
            try:
                found = search(model, s, card, ram, least)
            except ParamcountError as e:  # a type llama.cpp's converter does not state for this family
                refused.append(e.message)
                continue
            if found:
                return found
    if refused and len(refused) == len(asked or WHOLE) + len(asked or OFFLOADED):
        return Recommendation("llama.cpp", None, None, False, None, None, None, refused[0], "none")
    what = ", ".join(asked or WHOLE)
    return Recommendation(
        "llama.cpp", None, None, False, None, None, None,
        f"no GGUF type ({what}) fits {card.name} at {least:,} tokens, even with weights in host memory"
        f" ({ram_words(ram)})",
        "none",
    )  # fmt: skip


def _planner(model: Any, scheme: str, **placed: Any) -> Any:
    """Text only for an image+text model (--no-mmproj, said in the command): what ``-m FILE`` loads."""
    return make_planner(model, scheme, "llama.cpp", flash_attn=FLASH, text_only=has_towers(model) or None, **placed)


def _whole(model: Any, scheme: str, card: Any, ram: int | None, least: int) -> Recommendation | None:
    """Every layer on the GPU at the largest context that fits (``fit``'s max context)."""
    p = _planner(model, scheme)
    if p.partial:  # weights alone: no cache layout, so no context figure
        raise ParamcountError(f"weights only, no context figure: {p.partial}", field="--runtime")
    limit = max_positions(model)
    longest = largest_under(lambda t: p.total(t, 1), card.usable, 1, limit or NO_LIMIT_CONTEXT)
    if longest is None or longest < least:
        return None
    n_all = layers_of(p).n_layer_all + 1
    placed = p.placed(placement(gpu_layers=n_all))
    plan = placed.plan(longest, 1)
    if not host_ok(plan.host, ram):
        return None
    why = "every layer on the GPU" + ("; the context is the model's limit" if longest == limit else "")
    why += "; text only (--mmproj FILE adds the vision tower)" if p.options.text_only else ""
    command = server_command(_file(model, scheme), longest, placed.placement.arguments(), FLASH, p.options.text_only)
    options = _options(p, placed)
    return Recommendation("llama.cpp", scheme, longest, True, plan.total, plan.host, command, why, "gpu", plan, options)


def _offloaded(model: Any, scheme: str, card: Any, ram: int | None, least: int) -> Recommendation | None:
    """The fewest weights in host memory that let the rest fit the GPU at ``least`` tokens: a MoE
    model's experts layer by layer (``--n-cpu-moe N``, common.h llm_add_n_cpu_ffn_overrides), a
    dense model's layers (``-ngl L``, the last L on the GPU as load_tensors places them)."""
    p = _planner(model, scheme)
    n_all = layers_of(p).n_layer_all
    moe = any(r.kind == "experts" for r in p.loaded.rows)

    def at(n: int) -> Any:
        chosen = placement(gpu_layers=n_all + 1, overrides=n_cpu_moe(n)) if moe else placement(gpu_layers=n)
        return p.placed(chosen)

    fits = lambda n: at(n).total(least, 1) <= card.usable  # noqa: E731
    n = smallest(fits, 0, n_all) if moe else largest_under(lambda k: at(k).total(least, 1), card.usable, 0, n_all)
    if n is None:
        return None
    placed = at(n)
    plan = placed.plan(least, 1)
    if not host_ok(plan.host, ram):
        return None
    where = f"the experts of {n} of {n_all} layers" if moe else f"{n_all + 1 - n} of {n_all + 1} layers"
    why = f"{where} in host memory ({ram_words(ram)})"
    why += "; text only (--mmproj FILE adds the vision tower)" if p.options.text_only else ""
    command = server_command(_file(model, scheme), least, placed.placement.arguments(), FLASH, p.options.text_only)
    options = _options(p, placed)
    return Recommendation(
        "llama.cpp", scheme, least, True, plan.total, plan.host, command, why, "offload", plan, options
    )


def _options(p: Any, placed: Any) -> dict[str, Any]:
    """The planner options the command sets, as the speed model takes them."""
    where = placed.placement
    return {"flash_attn": FLASH, "text_only": p.options.text_only or None, "gpu_layers": where.gpu_layers,
            "overrides": where.overrides or None}  # fmt: skip


def _file(model: Any, scheme: str) -> str:
    """What ``-m`` names: a model in Ollama's store by its blob (a GGUF file), else
    :func:`~paramcount.memory.runtimes.llamacpp.command.gguf_file`."""
    source = str(model.source)
    if source.startswith("ollama:"):
        from ..frontends.stores import MODEL, ollama_manifest

        return str(ollama_manifest(source[len("ollama:") :]).of(MODEL)[0])
    return gguf_file(model, scheme, model_ref(model))
