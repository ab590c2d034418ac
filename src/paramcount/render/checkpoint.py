"""What a checkpoint's files hold, beside its count: dtypes, bytes, bookkeeping, buffers,
disagreements with config.json; and ``paramcount diff``. Text through rich, and JSON."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..frontends.checkpoint import Checkpoint, CheckpointModel
from ..frontends.diff import INDEX, Difference, collapse
from ..model import Model
from . import text

SHOWN = 12  # differences and buffers shown per kind in text; JSON lists every one

_SAID = {
    "missing": "only in A",
    "extra": "only in B",
    "shape": "different shape",
    "dtype": "different dtype",
    "tie": "tied on one side only",
}
# What llama.cpp's converter changes on purpose (paramcount.gguf_diff), not differences.
_CONVERTED = {
    "merged": "merged (experts stacked into one tensor)",
    "split": "split",
    "permuted": "permuted (same shape, rows reordered)",
    "transposed": "transposed",
    "padded": "padded",
    "dropped": "dropped by the conversion",
    "added": "added by the conversion",
}


def n(value: int | None) -> str:
    return "unknown" if value is None else f"{int(value):,}"


def _table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    t = Table(title=title, title_justify="left", show_edge=False)
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    return t


def files_line(ck: Checkpoint) -> Text:
    files = len(ck.files)
    line = Text(f"read {ck.chosen}: {files} file{'s' if files != 1 else ''}, ")
    line.append(f"{n(ck.file_bytes)} bytes" if ck.file_bytes is not None else f"{n(ck.data_bytes)} bytes of data")
    if ck.header_bytes is not None:
        line.append(f" ({n(ck.header_bytes)} of them headers)")
    line.append(f"; {n(ck.stored_elements)} stored elements in {len(ck.stored())} tensors")
    return line


def storage_table(ck: Checkpoint) -> Table:
    rows = [(k, n(t), n(c), n(b)) for k, (t, c, b) in ck.by_storage().items()]
    rows.append(("total", n(len(ck.params)), n(ck.parameters), n(sum(p.nbytes for p in ck.params))))
    return _table("parameters by storage", ("stored as", "tensors", "parameters", "bytes"), rows)


def dtype_table(ck: Checkpoint) -> Table:
    rows = [(k, n(t), n(c), n(b)) for k, (t, c, b) in sorted(ck.by_dtype().items())]
    return _table("every stored tensor by dtype", ("dtype", "tensors", "elements", "bytes"), rows)


def bookkeeping_table(ck: Checkpoint) -> Table:
    rows = [(k, n(t), n(c), n(b)) for k, (t, c, b) in ck.bookkeeping_by_role().items()]
    rows.append(("total", n(len(ck.bookkeeping)), *(n(sum(f(e.tensor) for e in ck.bookkeeping)) for f in _SIZES)))
    return _table("quantisation bookkeeping (not parameters)", ("tensor", "tensors", "elements", "bytes"), rows)


_SIZES = (lambda t: t.count, lambda t: t.nbytes)


def buffer_lines(ck: Checkpoint) -> list[Text]:
    extras = ck.buffers + ck.tied_copies
    groups: dict[str, list] = {}
    for e in extras:
        groups.setdefault(INDEX.sub("*", e.tensor.name), []).append(e)
    lines = [Text("stored but not parameters (not counted):", style="bold")]
    for pattern, members in list(groups.items())[:SHOWN]:
        t = members[0].tensor
        times = f" × {len(members)}" if len(members) > 1 else ""
        size = sum(m.tensor.nbytes for m in members)
        lines.append(Text(f"  {pattern}{times}  {t.dtype} {_shape(t.shape)}  {n(size)} bytes  ({members[0].role})"))
    if len(groups) > SHOWN:
        lines.append(Text(f"  … and {len(groups) - SHOWN} more kinds (see --json)"))
    return lines


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(f"{int(d):,}" for d in shape) + ")"


def difference_lines(diffs: Sequence[Difference], a: str, b: str) -> list[Text]:
    """Differences grouped by kind, layer numbers folded so 32 alike lines read as one."""
    if not diffs:
        return [Text(f"no differences between {a} and {b}", style="green")]
    lines = [Text(f"differences between {a} (A) and {b} (B): {len(diffs):,}", style="bold yellow")]
    return lines + _grouped(diffs, _SAID)


def conversion_lines(conversions: Sequence[Difference]) -> list[Text]:
    """What a format conversion changed on purpose, grouped and folded as differences are."""
    if not conversions:
        return []
    return [Text(f"changed by the conversion: {len(conversions):,}", style="bold"), *_grouped(conversions, _CONVERTED)]


def _grouped(diffs: Sequence[Difference], kinds: dict[str, str]) -> list[Text]:
    lines: list[Text] = []
    for kind, said in kinds.items():
        group = [d for d in diffs if d.kind == kind]
        if not group:
            continue
        lines.append(Text(f"  {said} ({len(group):,}):"))
        folded = {(name, *pair): times for (name, times), pair in _fold(group)}
        if kind == "dtype" and len(folded) > SHOWN:  # a whole checkpoint saved in another dtype
            folded = _by_pair(group)
        for (pattern, av, bv, *why), times in list(folded.items())[:SHOWN]:
            lines.append(Text(f"    {pattern}{f' × {times}' if times > 1 else ''}  {_pair(kind, av, bv, *why)}"))
        if len(folded) > SHOWN:
            lines.append(Text(f"    … and {len(folded) - SHOWN} more (see --json)"))
    return lines


def _fold(group: Sequence[Difference]):
    """Alike differences (same values, names equal but for layer numbers) as one line."""
    by_values: dict[tuple[str, str, str], list[str]] = {}
    for d in group:
        by_values.setdefault((d.a, d.b, d.why), []).append(d.name)
    return [(folded, pair) for pair, names in by_values.items() for folded in collapse(names)]


def _by_pair(group: Sequence[Difference]) -> dict[tuple[str, str, str], int]:
    pairs: dict[tuple[str, str], list[str]] = {}
    for d in group:
        pairs.setdefault((d.a, d.b), []).append(d.name)
    return {(f"{len(names):,} tensors (first: {names[0]})", a, b): 1 for (a, b), names in pairs.items()}


def _pair(kind: str, a: str, b: str, why: str = "") -> str:
    if kind == "missing" or (a and not b):
        said = f"A: {a}"
    elif kind == "extra" or (b and not a):
        said = f"B: {b}"
    else:
        said = f"A: {a}  B: {b}"
    return f"{said}  ({why})" if why else said


def render(model: Model, tree_depth: int = 0) -> Group:
    """The usual count, then what the files hold."""
    parts: list[Any] = [text.render(model, tree_depth)]
    ck = model.checkpoint if isinstance(model, CheckpointModel) else None
    if ck is None:
        return parts[0]
    parts += [Text(""), files_line(ck), Text(""), storage_table(ck)]
    if ck.quantization:
        parts += [Text(""), Text(f"quantisation: {ck.quantization}")]
    if ck.bookkeeping:
        parts += [Text(""), bookkeeping_table(ck)]
    parts += [Text(""), dtype_table(ck)]
    if ck.buffers or ck.tied_copies:
        parts += [Text(""), *buffer_lines(ck)]
    if ck.against:
        parts += [Text(""), *difference_lines(ck.differences, ck.against, "the checkpoint")]
    if ck.ignored:
        parts += [Text(""), Text("also in the folder, not counted:", style="bold")]
        parts += [Text(f"  {x}") for x in ck.ignored]
    return Group(*parts)


def to_dict(model: Model, collapsed: bool = False) -> dict[str, Any]:
    """The JSON count document, with a ``checkpoint`` section when the model came from files."""
    from .json import to_dict as count_dict

    data = count_dict(model, collapsed=collapsed)
    ck = model.checkpoint if isinstance(model, CheckpointModel) else None
    if ck is None:
        return data
    data["checkpoint"] = {
        "read": ck.chosen,
        "files": [{"name": f, "bytes": b} for f, b in ck.files],
        "file_bytes": ck.file_bytes,
        "header_bytes": ck.header_bytes,
        "data_bytes": ck.data_bytes,
        "stored_elements": ck.stored_elements,
        "parameters": ck.parameters,
        "by_dtype": {k: {"tensors": t, "elements": c, "bytes": b} for k, (t, c, b) in ck.by_dtype().items()},
        "by_storage": {k: {"tensors": t, "parameters": c, "bytes": b} for k, (t, c, b) in ck.by_storage().items()},
        "quantization": ck.quantization,
        "bookkeeping": [_extra(e) for e in ck.bookkeeping],
        "buffers": [_extra(e) for e in ck.buffers],
        "tied_copies": [_extra(e) for e in ck.tied_copies],
        "compared_with": ck.against,
        "differences": [_difference(d) for d in ck.differences],
        "ignored": list(ck.ignored),
    }
    return data


def _extra(e) -> dict[str, Any]:
    t = e.tensor
    return {"name": t.name, "role": e.role, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.nbytes, "file": t.file}


def _difference(d: Difference) -> dict[str, str]:
    return {"kind": d.kind, "name": d.name, "a": d.a, "b": d.b, **({"why": d.why} if d.why else {})}


def dumps(model: Model, collapsed: bool = False) -> str:
    import json

    return json.dumps(to_dict(model, collapsed), indent=2, ensure_ascii=False)


def render_diff(result) -> Group:
    """``paramcount diff``: the two totals, how names were aligned, then every difference."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_column(justify="right")
    t.add_row("A", result.a, n(result.a_total))
    t.add_row("B", result.b, n(result.b_total))
    parts: list[Any] = [t, Text(f"{n(result.matched)} tensors matched by name")]
    if result.alignment:
        parts.append(Text(f"note: {result.alignment}", style="yellow"))
    converted = conversion_lines(result.conversions)
    parts += [Text(""), *converted, *([Text("")] if converted else []), *difference_lines(result.differences, "A", "B")]
    return Group(*parts)


def diff_dict(result) -> dict[str, Any]:
    return {
        "schema": "paramcount.diff/1",
        "a": {"name": result.a, "total": result.a_total},
        "b": {"name": result.b, "total": result.b_total},
        "matched": result.matched,
        "alignment": result.alignment,
        "differences": [_difference(d) for d in result.differences],
        "conversions": [_difference(d) for d in result.conversions],
    }
