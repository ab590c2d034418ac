"""Terminal output with rich: the only module that imports it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
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


CATALOG_COLUMNS = (("model", "left"), ("family", "left"), ("class", "left"), ("total", "right"))
CATALOG_COLUMNS += (("backbone", "right"), ("active", "right"))
CATALOG_DROPPED = ("class", "backbone", "family")  # left out in this order while the table is too wide


def catalog_table(rows: Sequence[tuple[str, str, str, int, int, int | None]], width: int | None = None) -> Table:
    """``paramcount list``: id, family, class, total, backbone total and, for MoE, active per
    token; one table within ``width``, leaving out class, backbone and family as it must."""
    cells = [[r[0], r[1], r[2], n(r[3]), n(r[4]), "" if r[5] is None else n(r[5])] for r in rows]
    keep = list(range(len(CATALOG_COLUMNS)))
    names = [c for c, _ in CATALOG_COLUMNS]
    for drop in CATALOG_DROPPED:
        if width is None or _catalog_width(cells, keep) <= width:
            break
        keep.remove(names.index(drop))
    tight = width is not None and _catalog_width(cells, keep) > width  # then no space at either edge
    tighter = tight and _catalog_width(cells, keep) - 2 > width  # then one space a column, after it
    t = Table(show_edge=False, pad_edge=not tight, padding=(0, 1, 0, 0) if tighter else (0, 1))
    for i in keep:
        t.add_column(CATALOG_COLUMNS[i][0], justify=CATALOG_COLUMNS[i][1])
    for row in cells:
        t.add_row(*(row[i] for i in keep))
    return t


def _catalog_width(cells: list[list[str]], keep: list[int]) -> int:
    """The table's width unwrapped: each column's widest cell, a space either side, a rule between."""
    widths = [max([len(CATALOG_COLUMNS[i][0])] + [cell_len(r[i]) for r in cells]) for i in keep]
    return sum(widths) + 3 * len(keep) - 1


class Command(Text):
    """A command line to paste: printed on one line the terminal may fold but never we (soft wrap)."""


class _Console(Console):
    """A console whose tables never cut a number, a word or a header: a table too wide for the
    console is drawn with each column at least as wide as its longest word (a right-aligned,
    numeric column as its widest cell); failing that, cut into several tables behind the first
    (label) column; failing that, stacked, one block per row. It reads no markup (``[/]x`` in a
    tensor name is text) and writes input's control characters and lone surrogates as escapes,
    never to the terminal."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            Segment(printable(s.text, layout=True), s.style, s.control) if s.control is None else s for s in buffer
        )

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if any(isinstance(o, Group) and any(isinstance(r, Command) for r in o.renderables) for o in objects):
            for o in objects:  # a group holding a command: its parts one by one, the command unwrapped
                for part in o.renderables if isinstance(o, Group) else (o,):
                    self.print(part, **{**kwargs, "soft_wrap": isinstance(part, Command) or kwargs.get("soft_wrap")})
            return
        super().print(*(_fit(obj, self, self.width) for obj in objects), **kwargs)


def _fit(obj: Any, con: Console, width: int) -> Any:
    """``obj`` laid out for ``width`` columns with every number and word whole."""
    if isinstance(obj, Group):
        return Group(*(_fit(r, con, width) for r in obj.renderables))
    if not isinstance(obj, Table):
        return obj
    _fold_words(obj)
    if _natural(con, obj) <= width:
        return obj
    if _widths(con, obj, width) is not None:
        return _sized(con, obj, width)
    if len(obj.columns) >= 3 and all(_widths(con, _subtable(obj, [obj.columns[0], c]), width) for c in obj.columns[1:]):
        return Group(*(_sized(con, t, width) for t in _split(obj, con, width)))
    return _stacked(obj, con, width)


def _fold_words(table: Table) -> None:
    """Text folds only a word longer than its column, never a number of a right-aligned one."""
    for col in table.columns:
        if col.justify == "right":
            col.no_wrap = True
        elif col.overflow == "ellipsis":
            col.overflow = "fold"


def _natural(con: Console, table: Table) -> int:
    """The width ``table`` takes with no cell wrapped (rich clamps a measurement to the console)."""
    return Measurement.get(con, con.options.update(max_width=1 << 16), table).maximum


def _plain(cell: Any) -> str | None:
    return cell if isinstance(cell, str) else cell.plain if isinstance(cell, Text) else None


def _whole(con: Console, col: Any, header: bool) -> int:
    """The narrowest ``col`` can be with no word (or, right-aligned, no cell) cut."""
    cells = [col.header] if header else []
    widest = 1
    for cell in [*cells, *col.cells]:
        text = _plain(cell)
        if text is None:  # a nested renderable: its own least width
            widest = max(widest, Measurement.get(con, con.options.update(max_width=1 << 16), cell).minimum)
            continue
        lines = text.split("\n")
        words = lines if col.justify == "right" and cell is not col.header else [w for x in lines for w in _words(x)]
        widest = max([widest, *(cell_len(w) for w in words)])
    return widest


def _words(line: str) -> list[str]:
    """A line's words, the first with its indent (rich wraps an indented line's first word with it)."""
    indent = line[: len(line) - len(line.lstrip())]
    words = line.split()
    return [indent + words[0], *words[1:]] if words else []


def _widths(con: Console, table: Table, width: int) -> list[int] | None:
    """Column widths (no padding) that fit ``width`` with every word whole, or None."""
    cols = table.columns
    whole = [_whole(con, c, table.show_header) for c in cols]
    longest = [max(w, _longest_line(c, table.show_header)) for w, c in zip(whole, cols, strict=True)]
    room = width - _overhead(con, table) - sum(whole)
    if room < 0:
        return None
    widths = list(whole)
    order = sorted(range(len(cols)), key=lambda i: longest[i] - whole[i])
    for k, i in enumerate(order):  # the least needy first, so each gets its share or all it wants
        give = min(longest[i] - whole[i], room // (len(order) - k))
        widths[i] += give
        room -= give
    return widths


def _longest_line(col: Any, header: bool) -> int:
    texts = [_plain(c) for c in ([col.header] if header else []) + list(col.cells)]
    return max([cell_len(line) for t in texts if t is not None for line in t.split("\n")] + [1])


def _overhead(con: Console, table: Table) -> int:
    """Borders and padding: the table's width with every column one cell wide, less the columns."""
    trial = _subtable(table, table.columns, fixed=[1] * len(table.columns))
    return Measurement.get(con, con.options.update(max_width=1 << 16), trial).maximum - len(table.columns)


def _sized(con: Console, table: Table, width: int) -> Table:
    widths = _widths(con, table, width)
    assert widths is not None  # the callers checked
    return _subtable(table, table.columns, fixed=widths)


def _split(table: Table, con: Console, width: int) -> list[Table]:
    """``table``'s columns in groups that fit ``width``, each group behind the first column."""
    first, rest = table.columns[0], table.columns[1:]
    groups: list[list[Any]] = [[]]
    for col in rest:
        if groups[-1] and _widths(con, _subtable(table, [first, *groups[-1], col]), width) is None:
            groups.append([])
        groups[-1].append(col)
    return [_subtable(table, [first, *g]) for g in groups]


def _subtable(table: Table, columns: list[Any], fixed: list[int] | None = None) -> Table:
    t = Table(
        title=table.title,
        title_justify=table.title_justify,
        show_edge=table.show_edge,
        show_header=table.show_header,
        box=table.box,
        padding=table.padding,
        pad_edge=table.pad_edge,
        collapse_padding=table.collapse_padding,
    )
    for i, col in enumerate(columns):
        t.add_column(
            col.header,
            justify=col.justify,
            style=col.style,
            header_style=col.header_style,
            no_wrap=col.no_wrap and fixed is None,
            width=None if fixed is None else fixed[i],
            overflow=col.overflow,
        )
    for i in range(table.row_count):
        t.add_row(*(col._cells[i] for col in columns))
    return t


def _stacked(table: Table, con: Console, width: int) -> Group:
    """One block per row: its first cell, then each other column as ``header: value``, indented."""
    first, rest = table.columns[0], table.columns[1:]
    out: list[Any] = [Text(str(table.title))] if table.title else []
    for i in range(table.row_count):
        label = first._cells[i]
        out.append(Text(_plain(label) or "", style="bold") if _plain(label) is not None else label)
        for col in rest:
            cell = col._cells[i]
            text = _plain(cell)
            if text == "":
                continue
            head = _plain(col.header) or ""
            if text is None:
                out += [Text(f"  {head}:"), cell]
            else:
                out.append(Text(f"  {head}: " if head else "  ").append(cell if isinstance(cell, Text) else text))
    return Group(*out)


class Document:
    """A plain-text document (check, compare, explain) laid out for the console's width: its
    writer wraps prose between words and stacks a table too wide (``write(doc, "text", columns)``)."""

    def __init__(self, write: Callable[[int | None], str]):
        self.write = write

    def __rich_console__(self, con: Console, options: Any) -> Iterator[Text]:
        width = None if options.max_width >= PIPED_WIDTH else options.max_width  # piped: as written
        for line in self.write(width).split("\n")[:-1]:
            yield Text(line, overflow="fold")


def console(width: int | None = None) -> Console:
    """The console for ``width`` columns; piped output (not a terminal, no ``COLUMNS``) takes the
    width its tables need rather than rich's 80, so nothing is folded there either."""
    if width is None and not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        width = PIPED_WIDTH
    return _Console(width=width, highlight=False, soft_wrap=False, markup=False, emoji=False)
