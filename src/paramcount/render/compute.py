"""``paramcount compute`` in the terminal (rich) and as JSON (schema paramcount.compute/1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..compute_report import Figure, Report, Time, sci, widths_text
from .text import n


def heading(r: Report) -> Group:
    m, s = r.model, r.settings
    head = Text(m.name, style="bold")
    head.append(f"  {m.class_name} · {n(m.total)} parameters", style="dim")
    why = "" if s["context_from"] == "--context" else f" (context: {s['context_from']})"
    what = f"compute · T = {n(s['context'])} tokens per sequence{why} · batch {n(s['batch'])}"
    return Group(head, Text(what))


def table(figures: Sequence[Figure], unit: str, errors: bool) -> Table:
    t = Table(show_edge=False)
    t.add_column("figure", no_wrap=True)
    t.add_column(unit, justify="right", no_wrap=True)
    if errors:
        t.add_column("error", justify="right", no_wrap=True)
    t.add_column("formula", overflow="fold", ratio=1)
    for f in figures:
        value = n(f.value) if unit == "parameters" else sci(f.value)
        label = f"{f.label} [not exact]" if f.inexact and not errors else f.label
        cells = [label, value] + ([_error(f)] if errors else [])
        t.add_row(*cells, f.formula)
    return t


def _error(f: Figure) -> Text:
    if f.inexact:
        return Text("not exact", style="yellow")
    if f.error is None:
        return Text("n/a (exact is 0)" if f.approximate else "estimate" if f.estimate else "exact")
    error = f"{f.error:+.2%}"
    return Text(f"{error} of est." if f.estimate else error, style="yellow")


def _section(figures: Sequence[Figure], prefix: str) -> list[Figure]:
    return [f for f in figures if f.key.startswith(prefix)]


def render_report(r: Report) -> Group:
    figures = r.figures
    f, t = r.forward, r.training
    widths = f"Σd_attn = {widths_text(r.widths)} = {n(f.attention_width)}"
    parts: list[Any] = [heading(r), Text(""), Text("N: the parameters each figure counts", style="bold")]
    parts += [table(_section(figures, "n."), "parameters", False), Text("")]
    parts.append(Text(f"forward FLOPs per token at T = {n(f.context)} ({widths})", style="bold"))
    parts += [table(_section(figures, "forward."), "FLOPs", True), Text("")]
    d = f"D = {n(t.tokens)} tokens ({r.settings['tokens_from']})"
    parts.append(Text(f"training FLOPs at T = {n(t.context)} for {d}", style="bold"))
    parts += [table(_section(figures, "training."), "FLOPs", True), Text("")]
    parts += [*errors_legend(), Text(""), *budget(_section(figures, "chinchilla.")[0], r)]
    parts += [Text(f"note: {note}", style="yellow") for note in r.notes]
    parts += [Text(""), *(time_lines(_section(figures, "time.")[0], r.time) if r.time else [_no_gpu()])]
    return Group(*parts)


def errors_legend() -> list[Text]:
    return [
        Text("d_attn: heads × head dim of an attention block, summed over the blocks a token passes (Σd_attn)"),
        Text("error: approximation / exact − 1, against the full count (dense kernels compute all T×T scores;"),
        Text("torch's FlopCounterMode agrees); the JSON also gives it against the causal count (error_causal)"),
        Text("sources: Kaplan et al. 2020, Table 1 and §2.1 (arXiv:2001.08361); 3 × forward: Chowdhery et al."),
        Text("2022, App. B (arXiv:2204.02311), the backward pass costing twice the forward"),
    ]


def budget(fig: Figure, r: Report) -> list[Any]:
    used = ", used as D (no --tokens)" if r.settings["tokens_from"] != "--tokens" else ""
    head = Text(f"Chinchilla budget [estimate]: {n(fig.value)} tokens ({sci(fig.value)}){used}", style="bold")
    return [head, _grid([("formula", fig.formula), ("source", fig.source)])]


def time_lines(fig: Figure, time: Time) -> list[Any]:
    assumes = (
        f"peak {time.gpu.tflops:g} TFLOPS per GPU, the vendor's dense {time.peak_dtype} tensor figure (--gpu); "
        f"model FLOPs utilisation {time.utilisation:g} (--utilisation); {n(time.gpus)} GPU{'s' * (time.gpus != 1)} "
        "(--gpus); FLOPs: 3 × forward, full; no restarts, evaluation or idle time"
    )
    return [Text(f"{fig.label} [estimate]", style="bold"), _grid([("formula", fig.formula), ("assumes", assumes)])]


def _no_gpu() -> Text:
    return Text("--gpu NAME (and --gpus N, --utilisation 0.4) for the training time", style="dim")


def _grid(rows: Sequence[tuple[str, str]]) -> Table:
    g = Table.grid(padding=(0, 1))
    g.add_column(style="dim", no_wrap=True)
    g.add_column(overflow="fold")
    for label, value in rows:
        g.add_row(f"  {label}", value)
    return g


def dumps(r: Report) -> str:
    return json.dumps(r.to_dict(), indent=2, ensure_ascii=False)
