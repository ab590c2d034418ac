"""The JSON forms of ``list``, ``explain``, ``check`` and ``compare``: versioned schemas, like the
count's (see docs/json.md). Each number is an integer; each formula is the text the
terminal shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..check import CheckResult, Explanation
from ..compare import Comparison
from ..derive import Derivation, Line, Section
from ..textbook import Textbook
from .check import TEXTBOOK, convention, phrase, working
from .derivation import line_formula

LIST, EXPLAIN, CHECK, COMPARE = (f"paramcount.{name}/1" for name in ("list", "explain", "check", "compare"))


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def catalog_dict(rows: Sequence[tuple[str, str, str, int, int, int | None]]) -> dict[str, Any]:
    """``paramcount list``: one entry per catalog model (active_total: per token, MoE only, else null)."""
    keys = ("id", "model_type", "class", "total", "backbone_total", "active_total")
    return {"schema": LIST, "models": [dict(zip(keys, row, strict=True)) for row in rows]}


def _line(line: Line) -> dict[str, Any]:
    symbols, numbers = line_formula(line)
    return {
        "path": line.path,
        "role": line.role,
        "component": line.kind,
        "formula": symbols,
        "numbers": numbers,
        "parameters": line.value,
        "tied_to": [p.tied_to for p in line.params if p.tied_to],
        "active": list(line.active) if line.active else None,
    }


def _section(s: Section) -> dict[str, Any]:
    return {
        "kind": s.kind,
        "path": s.path,
        "first": s.first,
        "count": s.copies,
        "each": s.each,
        "total": s.total,
        "lines": [_line(line) for line in s.lines],
    }


def derivation_dict(d: Derivation) -> dict[str, Any]:
    """``paramcount explain --json``: the sections, their lines as formula and numbers, the sum,
    the closed form and the approximations."""
    c = d.closed
    return {
        "schema": EXPLAIN,
        "name": d.name,
        "class": d.class_name,
        "model_type": d.model_type,
        "total": d.total,
        "total_with_ties": d.total_with_ties,
        "active": d.active_total,
        "sections": [_section(s) for s in d.sections],
        "sum": [s.total for s in d.sections],
        "symbols": [{"symbol": k, "value": v, "field": c.fields.get(k)} for k, v in c.values.items()],
        "closed_form": {"text": c.text, "expanded": c.expanded, "value": c.evaluate()},
        "approximations": [{"name": a.name, "value": a.value, "error": a.error} for a in c.approximations],
        "inside": {"class": d.inside[0], "total": d.inside[1]} if d.inside else None,
        "symbols_from_config": d.unsymbolic is None,
        "why_no_symbols": d.unsymbolic,
        "notes": list(d.notes),
    }


def _explanation(e: Explanation, result: CheckResult) -> dict[str, Any]:
    return {
        "class": e.class_name,
        "backbone": e.backbone,
        "base_total": e.base_total,
        "value": e.value,
        "remaining": int(e.remaining(result.answer)),
        "slips": [{"slip": s.key, "says": phrase(s, "en"), "change": s.change, **dict(s.info)} for s in e.steps],
        "working": working(e),
    }


def check_dict(result: CheckResult) -> dict[str, Any]:
    """``paramcount check --json``: whether the answer is exact or a convention's figure
    (``accepted``, ``convention``: the keys it matches), the slips that explain it, and each
    convention's figure."""
    a = result.answer
    return {
        "schema": CHECK,
        "name": result.name,
        "answer": a.text.strip(),
        "answer_value": str(a.value),
        "rounded": a.rounded,
        "exact": result.exact,
        "accepted": result.accepted,
        "convention": [c.key for c in result.matched],
        "explained": bool(result.explanations),
        "class": result.class_name,
        "total": result.total,
        "backbone": {"class": result.backbone_class, "total": result.backbone_total},
        "active": result.active,
        "explanations": [_explanation(e, result) for e in result.explanations],
        "nearest": [_explanation(e, result) for e in result.nearest],
        "conventions": [
            {
                "key": c.key,
                "says": convention(c, "en"),
                "value": c.value,
                "lookup": c.lookup,
                "unembedding": c.unembedding,
                "matches": a.matches(c.value),
                "truncated": a.truncates(c.value) and not a.matches(c.value),
            }
            for c in result.conventions
        ],
        "taught": [t.key for t in result.taught],
        "textbook": [_taught(t, result) for t in (*result.textbook, *(t for t in result.flops if t in result.taught))],
    }


def _taught(t: Textbook, result: CheckResult) -> dict[str, Any]:
    """A count taught (or a FLOPs figure: ``parameters`` false) with its formula and distance."""
    return {
        "key": t.key,
        "says": TEXTBOOK["en"][t.key],
        "formula": t.formula,
        "working": t.working,
        "value": t.value,
        "exact": t.exact,
        "difference": t.difference,
        "parameters": t.parameters,
        "matches": result.answer.matches(t.value),
    }


def compare_dict(c: Comparison) -> dict[str, Any]:
    """``paramcount compare --json``: per model, its components, totals and config symbols."""
    models = []
    for i, name in enumerate(c.names):
        models.append(
            {
                "name": name,
                "class": c.classes[i],
                "components": c.components[i],
                "total": c.totals[i],
                "backbone_total": c.backbone_totals[i],
                "active": c.active[i],
                "layers": c.layers[i],
                "symbols": {s: v[i] for s, v in c.symbols.items() if v[i] is not None},
                # components, backbone, layers and symbols read from tensor names: not exact
                "exact": not c.unsymbolic or c.unsymbolic[i] is None,
                "why_not_exact": c.unsymbolic[i] if c.unsymbolic else None,
            }
        )
    differences = {k: list(c.differences(k)) for k in c.kinds}
    return {"schema": COMPARE, "models": models, "kinds": list(c.kinds), "differences": differences}
