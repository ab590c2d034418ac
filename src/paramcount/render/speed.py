"""``paramcount speed`` in the terminal and as JSON: each figure, its bound, what binds and why."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..memory.speed.estimate import Speed
from ..memory.speed.figures import Figure


def dumps(s: Speed) -> str:
    return json.dumps(s.to_dict(), indent=2, ensure_ascii=False)


def render(s: Speed) -> Group:
    """A headline, a table of the three figures (estimate, expected error, bound, what binds), the
    terms behind decode, the factors used and the notes."""
    hw = _hardware(s)
    host = f", host CPU {s.cpu.name}" if s.cpu is not None and s.cpu not in s.hardware else ""
    st = s.settings
    head = Text(f"{s.model.name} under {s.runtime} on {hw}{host}", style="bold")
    head.append(
        f"\n{st.get('dtype')}, decode at {st['context']:,} tokens of context, a prompt of {st['prompt']:,}, "
        f"{st['concurrency']} stream{'s' * (st['concurrency'] > 1)}",
        style="dim",
    )
    return Group(head, _table(s), *_terms(s.decode), *_notes(s))


def _hardware(s: Speed) -> str:
    """The cards named: ``2 × H100`` for vLLM's ranks of one card, every card and the one that
    sets each step where they differ (its ranks wait for the slowest)."""
    names = [h.name for h in s.hardware]
    tp = s.settings.get("tp") or 1
    if tp == 1:
        return " + ".join(names)
    if len(set(names)) == 1:
        return f"{tp} × {names[0]} (tensor parallel {tp})"
    binds = f"; {s.binding.name}, the slowest, sets each step" if s.binding is not None else ""
    return f"{' + '.join(names)} (tensor parallel {tp}{binds})"


def _table(s: Speed) -> Table:
    t = Table(show_edge=False)
    for name in ("", "estimate", "expected error", "bound", "bound by"):
        t.add_column(name, justify="left" if name in ("", "bound by") else "right")
    for label, f in (("decode (per stream)", s.decode), ("prefill", s.prefill), ("time to first token", s.ttft)):
        t.add_row(label, _value(f, f.seconds), _error(f), _bound(f), f.bound_by)
    return t


def _bound(f: Figure) -> str:
    """``≤ 69.8 tok/s`` for a rate, ``≥ 76 ms`` for a time: the side each bound is on."""
    shown = _value(f, f.bound_seconds)
    return shown if shown == "—" else ("≥ " if f.phase == "ttft" else "≤ ") + shown


def _value(f: Figure, seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if f.phase == "ttft":
        return f"{seconds * 1e3:,.0f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"
    rate = f.tokens / seconds if seconds else None
    return "—" if rate is None else f"{rate:,.1f} tok/s"


def _error(f: Figure) -> str:
    e = f.error
    if f.seconds is None or not e:
        return "—"
    return f"±{e['median']:.0%} (p90 {e['p90']:.0%}, {e['rows']} rows)"


def _terms(f: Figure) -> list[Text]:
    t = f.terms
    read = t.get("bytes_read_per_step")
    if not read:
        return []
    line = (
        f"a decode step reads {read['weights']:,} B of weights, {read['kv_cache']:,} B of KV cache at "
        f"{t['context_depth']:,} tokens{_copy(read)} and {read['embedding_rows']:,} B of embedding rows; "
        f"{t['flops_per_token']:,} FLOPs a token"
    )
    return [Text(line, style="dim")]


def _copy(read: dict[str, int]) -> str:
    """transformers' DynamicCache copies the cache each step (:mod:`paramcount.memory.speed.hf`)."""
    copy = read.get("kv_cache_copy")
    return f", {copy:,} B copying it (DynamicCache's torch.cat)" if copy else ""


def _notes(s: Speed) -> list[Text]:
    seen: dict[str, None] = {}
    for f in (s.decode, s.prefill):
        for x in f.factors:
            seen[f"{x['term']} = {x['value']:g} ({x['runtime']}, {x['family']})"] = None
    out = [Text("factors: " + "; ".join(seen) + " — tools/speed_calibration/fit.py", style="dim")] if seen else []
    notes: dict[str, Any] = dict.fromkeys(n for n in (s.decode.why, s.prefill.why, *s.notes) if n)
    out += [Text(n, style="yellow") for n in notes]
    return out
