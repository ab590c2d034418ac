"""Ollama's own plan in the terminal and as JSON: num_gpu, its estimate, and llama.cpp's beside it."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..memory.core.gpus import GPU
from ..memory.fit import gpu_dict
from ..memory.runtimes.ollama import OllamaPlan
from .memory import capacity, gib, render_plan
from .text import n


def answer(o: OllamaPlan, card: GPU) -> Text:
    """``num_gpu 29 of 33 layers on GeForce RTX 3060 …``: what Ollama would offload."""
    s = o.plan.settings
    where = capacity(card) + ("" if s["gpus"] == 1 else f", × {s['gpus']}")
    if o.num_gpu == 0:
        return Text(f"Ollama {s['version']}: num_gpu 0, every layer on the CPU ({where})", "red")
    style = "green" if o.num_gpu >= o.layers_model else "yellow"
    said = "all" if o.num_gpu >= o.layers_model else f"{o.num_gpu} of {o.layers_model}"
    line = Text(f"Ollama {s['version']}: num_gpu {o.num_gpu} ({said} layers on the GPU) on {where}", style)
    return line.append(
        f"\n  to pin it: PARAMETER num_gpu {o.num_gpu} in a Modelfile, or /set parameter num_gpu {o.num_gpu}", "dim"
    )


def comparison(o: OllamaPlan) -> Table:
    t = Table(show_edge=False, title="every layer on the GPU: Ollama's estimate and llama.cpp's plan")
    for name in ("term", "Ollama (B)", "llama.cpp (B)", "difference (B)", "GiB"):
        t.add_column(name, justify="left" if name == "term" else "right")
    for r in o.compared:
        d = r["difference"]
        t.add_row(r["term"], n(r["ollama"]), n(r["llama_cpp"]), ("+" if d > 0 else "") + n(d), gib(d))
    return t


def why(o: OllamaPlan, card: GPU) -> list[Text]:
    out = [Text(f"{r['term']}: {r['why']}", style="dim") for r in o.compared]
    if o.llama_cpp is not None:
        fits = o.llama_cpp.total <= o.free
        verdict = "fits" if fits else "does not fit"
        out.append(Text(f"llama.cpp's plan with every layer on the GPU ({gib(o.llama_cpp.total)} GiB) {verdict} "
                        f"in the {gib(o.free)} GiB Ollama counts free"))  # fmt: skip
    return out


def today(o: OllamaPlan) -> Text:
    """What today's Ollama does instead: its num_ctx, llama-server's arguments, its prediction."""
    c = o.current
    if c.get("loads") is False:
        return Text(f"Ollama {c['version']} cannot run this file: {c['why_not']}", style="dim")
    args = " ".join(c["llama_server_args"])
    ngl = "" if "-ngl" in c["llama_server_args"] else ", -ngl left to llama.cpp's fit"
    pad = f", LLAMA_ARG_FIT_TARGET={c['fit_target_mib']} (MiB, for the projector)" if c["fit_target_mib"] else ""
    verdict = (
        "under 80% of free: it loads beside models already loaded"
        if c["predicted_fits"]
        else ("over 80% of free: it unloads other models first")
    )
    return Text(
        f"Ollama {c['version']}: num_ctx {c['num_ctx']:,} ({c['num_ctx_from']}); llama-server {args}{ngl}{pad}; "
        f"its pre-flight check predicts {gib(c['predicted_vram'])} GiB, {verdict}",
        style="dim",
    )


def render(o: OllamaPlan, card: GPU, brief: bool = False) -> Group:
    """``memory``: the estimate's terms, then the answer and the comparison; ``fit`` (``brief``):
    the answer and the comparison."""
    parts: list[Any] = [] if brief else [render_plan(o.plan), Text("")]
    parts += [answer(o, card), today(o)]
    if o.compared:
        parts += [Text(""), comparison(o), *why(o, card)]
    return Group(*parts)


def dumps(o: OllamaPlan, card: GPU) -> str:
    data = o.to_dict()
    data["gpu"] = {**gpu_dict(card), "free": o.free, "num_gpu": o.num_gpu, "all_layers": o.num_gpu >= o.layers_model}
    return json.dumps(data, indent=2, ensure_ascii=False)
