"""Terminal output with rich: the only module that imports it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..errors import printable
from ..ir import Block, Node, Tie
from ..model import Model
from .labels import KINDS, TOWERS

LABELS = KINDS["en"]
TOWER_LABELS = TOWERS["en"]
# Counts read from file headers alone, with no config to name a class.
HEADER_ONLY = {
    "checkpoint": "every tensor in the safetensors headers (no config of a known family names a class)",
    "GGUF": "every tensor in the GGUF header",
}
PIPED_WIDTH = 200  # wide enough for every table here; lines of prose wrap at it


def n(value: int) -> str:
    return f"{int(value):,}"


def summary(model: Model) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_column(justify="right")
    if model.class_name in HEADER_ONLY:  # no transformers class: say what was counted instead
        t.add_row("counted", HEADER_ONLY[model.class_name], n(model.total))
        tower_rows(t, model)
        if model.backbone_total != model.total:
            t.add_row("without the head", model.backbone_class, n(model.backbone_total))
    else:
        t.add_row("class", model.class_name, n(model.total))
        tower_rows(t, model)
        t.add_row("backbone", model.backbone_class, n(model.backbone_total))
    if model.total_with_ties != model.total:
        t.add_row("ties counted twice", "", n(model.total_with_ties))
    if model.is_moe:
        t.add_row("active per token", "", n(model.active_total))
    return t


def tower_rows(t: Table, model: Model) -> None:
    """A composite's towers as the parts of the class's total, right under it (the output head
    is the language model's, so they add up to the class, not to its backbone)."""
    towers = list(model.towers().items())
    head = model.total != model.backbone_total and "language_model" in model.towers()
    for i, (tower, value) in enumerate(towers):
        said = "with the output head" if head and tower == "language_model" else ""
        t.add_row(f"  {'=' if i == 0 else '+'} {TOWER_LABELS[tower]}", said, n(value))


def components(model: Model) -> Table:
    t = Table(title="where the parameters are", title_justify="left", show_edge=False)
    t.add_column("component")
    t.add_column("parameters", justify="right")
    t.add_column("share", justify="right")
    total = model.total or 1
    for kind, value in model.components().items():
        t.add_row(LABELS[kind], n(value) if value else "0 (tied)", f"{100 * value / total:.2f}%")
    t.add_row(Text("total", style="bold"), Text(n(model.total), style="bold"), "100.00%")
    return t


def layer_lines(model: Model) -> list[Text]:
    """One line per run of layers of equal size (a GGUF's runs split by quant type are one here)."""
    runs: list[tuple[str, int, int, int]] = []  # (path, first, copies, each)
    for g in model.layers():
        path, first, copies, each = runs[-1] if runs else ("", 0, 0, 0)
        if runs and (path, each, first + copies) == (g.path, g.each, g.first):
            runs[-1] = (path, first, copies + g.copies, each)
        else:
            runs.append((g.path, g.first, g.copies, g.each))
    return [Text(f"{_span(p, f, c)}: {c} × {n(e)} = {n(c * e)}") for p, f, c, e in runs]


def _span(path: str, first: int, copies: int) -> str:
    """``layers.0–31``, or ``block.0`` for a run of one."""
    return f"{path}.{first}" if copies == 1 else f"{path}.{first}–{first + copies - 1}"


def tie_lines(model: Model) -> list[Text]:
    """Say each tie: the tensor exists in the module tree but shares the target's storage."""
    return [
        Text(f"tied: {name} is {target}; its {n(shared)} parameters are counted once")
        for name, target, shared in model.ties()
    ]


def tree(model: Model, depth: int) -> Tree:
    root = Tree(f"{model.class_name}  {n(model.total)}")
    for child in model.tree.children:
        _branch(root, child, depth - 1)
    return root


def _label(node: Node) -> str:
    if isinstance(node, Tie):
        return f"{node.name} {_shape(node.shape)} → tied to {node.target} (0)"
    if isinstance(node, Block):
        name = node.name or "(model)"
        if node.repeat is not None and node.copies:
            each = node.count // node.copies
            return f"{_span(name, node.start, node.copies)}  × {node.copies}  {n(each)} each = {n(node.count)}"
        return f"{name}  {n(node.count)}"
    return f"{node.name} {_shape(node.shape)}  {n(node.count)}"


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(n(d) for d in shape) + ")"


def _branch(parent: Tree, node: Node, depth: int) -> None:
    branch = parent.add(_label(node))
    if isinstance(node, Block) and depth > 0:
        for child in node.children:
            _branch(branch, child, depth - 1)


def scope_lines(model: Model) -> list[Text]:
    """What the count is not (the text tower only, MTP layers left out), under the headline."""
    return [Text(f"scope: {s}", style="yellow") for s in model.scope]


def render(model: Model, tree_depth: int = 0) -> Group:
    head = Text(model.name, style="bold")
    where = "bundled catalog" if model.source == f"catalog:{model.name}" else model.source
    head.append(f"  {model.model_type} · {where}" if where != model.name else f"  {model.model_type}", style="dim")
    if model.counted_by != "paramcount":
        head.append(f" · counted by {model.counted_by}", style="yellow")
    parts = [head, *scope_lines(model), summary(model), Text(""), components(model)]
    parts += [Text(""), *layer_lines(model)] if model.layers() else []
    parts += tie_lines(model)
    parts += [Text(f"note: {note}", style="yellow") for note in model.notes]
    if tree_depth:
        parts += [Text(""), tree(model, tree_depth)]
    return Group(*parts)


def catalog_table(rows: Sequence[tuple[str, str, str, int, int]]) -> Table:
    """``paramcount list``: id, family, class, total, backbone total."""
    t = Table(show_edge=False)
    for col, just in (
        ("model", "left"),
        ("family", "left"),
        ("class", "left"),
        ("total", "right"),
        ("backbone", "right"),
    ):
        t.add_column(col, justify=just)
    for model_id, family, cls, total, backbone in rows:
        t.add_row(model_id, family, cls, n(total), n(backbone))
    return t


class _Console(Console):
    """A console whose tables never cut a number: right-aligned (numeric) columns keep their
    widest cell whole, and the other columns fold their text instead of cutting it. It reads no
    markup (``[/]x`` in a tensor name is text) and writes input's control characters and lone
    surrogates as escapes, never to the terminal."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            Segment(printable(s.text, layout=True), s.style, s.control) if s.control is None else s for s in buffer
        )

    def print(self, *objects: Any, **kwargs: Any) -> None:
        for obj in objects:
            _whole_numbers(obj)
        super().print(*(self._fit(obj) for obj in objects), **kwargs)

    def _fit(self, obj: Any) -> Any:
        """A table too wide for the console even with its names folded is cut into several,
        each repeating the first (label) column: numbers are never cropped."""
        if isinstance(obj, Group):
            return Group(*(self._fit(r) for r in obj.renderables))
        if not isinstance(obj, Table) or len(obj.columns) < 3:
            return obj
        if _minimum(self, obj) <= self.width:
            return obj
        return Group(*_split(obj, self, self.width))


def _whole_numbers(obj: Any) -> None:
    if isinstance(obj, Group):
        for r in obj.renderables:
            _whole_numbers(r)
    elif isinstance(obj, Table):
        for col in obj.columns:
            if col.justify == "right":
                col.no_wrap = True
                col.min_width = max([cell_len(str(c)) for c in col.cells] + [col.min_width or 0])
            elif col.overflow == "ellipsis":
                col.overflow = "fold"
            for c in col.cells:
                _whole_numbers(c)


def _minimum(con: Console, table: Table) -> int:
    """The narrowest the table can be drawn (rich clamps a measurement to the console's width)."""
    return Measurement.get(con, con.options.update(max_width=1 << 16), table).minimum


def _split(table: Table, con: Console, width: int) -> list[Table]:
    """``table``'s columns in groups that fit ``width``, each group behind the first column."""
    first, rest = table.columns[0], table.columns[1:]
    groups: list[list[Any]] = [[]]
    for col in rest:
        trial = _subtable(table, [first, *groups[-1], col])
        if groups[-1] and _minimum(con, trial) > width:
            groups.append([])
        groups[-1].append(col)
    return [_subtable(table, [first, *g]) for g in groups]


def _subtable(table: Table, columns: list[Any]) -> Table:
    t = Table(title=table.title, title_justify=table.title_justify, show_edge=table.show_edge, box=table.box)
    for col in columns:
        t.add_column(
            col.header, justify=col.justify, no_wrap=col.no_wrap, min_width=col.min_width, overflow=col.overflow
        )
    for i in range(table.row_count):
        t.add_row(*(col._cells[i] for col in columns))
    return t


def console(width: int | None = None) -> Console:
    """The console for ``width`` columns; piped output (not a terminal, no ``COLUMNS``) takes the
    width its tables need rather than rich's 80, so nothing is folded there either."""
    if width is None and not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        width = PIPED_WIDTH
    return _Console(width=width, highlight=False, soft_wrap=False, markup=False, emoji=False)
