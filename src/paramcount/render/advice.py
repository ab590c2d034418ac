"""The recommendations under ``fit``'s table: one line per runtime, then its command on a line of
its own that the terminal never wraps (a pasted line must stay one line)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ..advise import Recommendation
from ..memory.core.terms import GIB
from .text import Command

NAMES = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "transformers": "transformers", "ollama": "Ollama", "mlx": "MLX"}


def lines(recs: Sequence[Recommendation]) -> list[Text]:
    """``recommended`` and, per runtime, what to run and the command (GiB, as cards are stated)."""
    if not recs:
        return []
    out = [
        Text(""),
        Text("recommended: the best scheme and the longest context each runtime fits (one sequence)", style="bold"),
    ]
    width = max(len(NAMES.get(r.runtime, r.runtime)) for r in recs)
    for r in recs:
        name = NAMES.get(r.runtime, r.runtime).ljust(width)
        if not r.fits:
            out.append(Text(f"  {name}  no: {r.why}", style="yellow"))
            continue
        host = f" + {_gib(r.host_bytes)} GiB host" if r.host_bytes else ""
        at = f"at {r.context:,} tokens" if r.context else ", weights only"
        what = f"{r.scheme or ''} {at}".strip() if r.context else f"{r.scheme or ''}{at}".lstrip(", ")
        said = f"  {name}  {what}: {_gib(r.gpu_bytes)} GiB GPU{host}; {r.why}"
        out.append(Text(said))
        if r.speed:
            out.append(Text(f"    {speed_words(r.speed)}", style="dim"))
        out.append(Command(f"    {r.command}", style="cyan"))
    return out


def speed_words(s: dict[str, Any]) -> str:
    """``decode ≈35 tokens/s at 4,096 deep (estimate, 90% within ±9%), a 512-token prompt in ≈0.28 s``;
    a bound says ``≤``; an estimate fitted on no held-out rows says it has no expected error."""
    if "unavailable" in s:
        return f"speed: {s['unavailable']}"
    parts = []
    d, t = s.get("decode"), s.get("ttft")
    if d:
        parts.append(f"decode {_approx(d)}{d['value']:,.0f} tokens/s at {s['context_depth']:,} deep ({_said(d)})")
    if t:
        parts.append(f"a {s['prompt_tokens']}-token prompt's first token in {_approx(t, time=True)}{t['value']:.2f} s")
    return "; ".join(parts)


def _approx(f: dict[str, Any], time: bool = False) -> str:
    """``≈`` for an estimate; for a bound on speed, ``≤`` a rate and ``≥`` a time (the shortest it takes)."""
    if not f["label"].startswith("upper bound"):
        return "≈"
    return "≥" if time else "≤"


def _said(f: dict[str, Any]) -> str:
    if f["label"] == "upper bound":
        return "an upper bound: no factor fitted for this runtime"
    err = f.get("expected_error")
    if not err:
        return "estimate, no expected error: factors borrowed or fitted without held-out rows"
    return f"estimate, 90% within ±{err['p90']:.0%} on {err['rows']} measured runs"


def show(console: Any, recs: Sequence[Recommendation]) -> None:
    """Print the lines: words wrapped to the console's width, each command on one line the
    terminal may fold but never we (soft wrap: pasted, it stays one command)."""
    for line in lines(recs):
        console.print(line, soft_wrap=isinstance(line, Command))


def to_json(recs: Sequence[Recommendation]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in recs]


def _gib(b: int | None) -> str:
    return f"{(b or 0) / GIB:,.2f}"
