"""Terminal output with rich: the only module that imports it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..ir import Block, Node, Tie
from ..model import Model
from .labels import KINDS

LABELS = KINDS["en"]


def n(value: int) -> str:
    return f"{int(value):,}"


def summary(model: Model) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_column(justify="right")
    t.add_row("class", model.class_name, n(model.total))
    t.add_row("backbone", model.backbone_class, n(model.backbone_total))
    if model.total_with_ties != model.total:
        t.add_row("ties counted twice", "", n(model.total_with_ties))
    if model.is_moe:
        t.add_row("active per token", "", n(model.active_total))
    return t


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
    return [
        Text(f"{_span(g.path, g.first, g.copies)}: {g.copies} × {n(g.each)} = {n(g.count)}") for g in model.layers()
    ]


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


def render(model: Model, tree_depth: int = 0) -> Group:
    head = Text(model.name, style="bold")
    where = "bundled catalog" if model.source == f"catalog:{model.name}" else model.source
    head.append(f"  {model.model_type} · {where}" if where != model.name else f"  {model.model_type}", style="dim")
    if model.counted_by != "paramcount":
        head.append(f" · counted by {model.counted_by}", style="yellow")
    parts = [head, summary(model), Text(""), components(model)]
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


def console(width: int | None = None) -> Console:
    return Console(width=width, highlight=False, soft_wrap=False)
