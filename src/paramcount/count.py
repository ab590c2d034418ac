"""Totals over the tree: repeats multiply, ties count once, nothing is unrolled."""

from __future__ import annotations

from collections.abc import Iterator

from .ir import Block, Node, Tie, join
from .records import record


def total(node: Node) -> int:
    """Unique parameters: what ``sum(p.numel() for p in model.parameters())`` gives."""
    return node.count


def total_with_ties(node: Node) -> int:
    """Parameters if every tied tensor were counted again where it is reused."""
    if isinstance(node, Block):
        return node.count_with_ties
    return node.aliased_count if isinstance(node, Tie) else node.count


def active(node: Node) -> int:
    """Parameters one token passes through: of n routed experts only k run."""
    if not isinstance(node, Block):
        return node.count
    inner = sum(active(c) for c in node.children)
    if node.active:
        k, n = node.active
        return inner * node.copies * k // n
    return inner * node.copies


def by_kind(node: Node, kind: str = "other") -> dict[str, int]:
    """Unique parameters per component kind (embeddings, attention, …)."""
    if not isinstance(node, Block):
        return {node.kind or kind: node.count}
    return {k: v * node.copies for k, v in _kinds(node, kind, {}).items()}


def _kinds(node: Block, kind: str, seen: dict[tuple[int, str], dict[str, int]]) -> dict[str, int]:
    """The kind sums of one copy of ``node``'s children. Blocks sharing one tuple of children
    (the runs of a hybrid schedule share their layer's modules) are summed once: ``seen`` is
    keyed by the tuple's identity (every node is alive while the walk runs) and the inherited
    kind; a repeated child's sums are multiplied by its copies."""
    kind = node.kind or kind
    key = (id(node.children), kind)
    sums = seen.get(key)
    if sums is not None:
        return sums
    sums: dict[str, int] = {}
    get = sums.get
    repeated: dict[tuple[int, str | None], list] = {}  # runs sharing one tuple of modules: merged once
    for child in node.children:
        if child.__class__ is not Block:  # a tensor or tie
            k = child.kind or kind
            sums[k] = get(k, 0) + child.count
        elif child.repeat is None and child.flat:
            k = child.kind or kind  # a module of tensors (a linear layer, a norm): summed here
            for c in child.children:
                ck = c.kind or k
                sums[ck] = get(ck, 0) + c.count
        else:
            same = repeated.get((id(child.children), child.kind))
            if same is None:
                repeated[id(child.children), child.kind] = [child, child.copies]
            else:
                same[1] += child.copies
    for child, n in repeated.values():
        for k, v in _kinds(child, kind, seen).items():
            sums[k] = get(k, 0) + n * v
    seen[key] = sums
    return sums


def by_tower(node: Block) -> dict[str, int]:
    """Unique parameters per tower of a composite model (the outermost block naming one),
    the rest under ``other``; empty for a model of one tower."""
    sums: dict[str, int] = {}
    rest = _add_towers(node, 1, sums)
    if sums and rest:
        sums["other"] = sums.get("other", 0) + rest
    return sums


def _add_towers(node: Block, times: int, sums: dict[str, int]) -> int:
    """Adds the towers under ``node`` to ``sums``; returns the parameters in no tower."""
    times *= node.copies
    rest = 0
    for child in node.children:
        if isinstance(child, Block) and child.tower:
            sums[child.tower] = sums.get(child.tower, 0) + times * child.count
        elif isinstance(child, Block):
            rest += _add_towers(child, times, sums)
        else:
            rest += times * child.count
    return rest


@record(frozen=True)
class LayerGroup:
    """A run of identical layers: ``path`` numbered ``first``…``first+copies-1``."""

    path: str
    first: int
    copies: int
    each: int

    @property
    def count(self) -> int:
        return self.each * self.copies


def layer_groups(node: Block, prefix: str = "") -> Iterator[LayerGroup]:
    """Each stack of layers (not of experts), in model order."""
    for child in node.children:
        if not isinstance(child, Block):
            continue
        path = join(prefix, child.name)
        if child.repeat is not None and child.label == "layer" and child.copies:
            yield LayerGroup(path, child.start, child.copies, child.count // child.copies)
        else:
            yield from layer_groups(child, path)


def ties(node: Node, prefix: str = "") -> Iterator[tuple[str, Tie]]:
    """Every tie with its full name (ties never sit inside repeated blocks we build)."""
    if isinstance(node, Tie):
        yield join(prefix, node.name), node
    elif isinstance(node, Block):
        here = join(prefix, node.name)
        for child in node.children:
            yield from ties(child, here if node.repeat is None else join(here, str(node.start)))
