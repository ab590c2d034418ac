"""The derivation a teacher writes: section by section, line by line, every sum checked.

The tree is cut into sections as the seed articles cut a model: the embeddings, one layer of
each run of identical layers (then times the number of layers), the final norm, the pooler and
the output head. A line is one module (a linear layer, a norm, an embedding table): its
tensors' shapes in symbols, the numbers substituted and the product. Everything here is read
from the tree (kinds, labels, repeats, ties, the symbols of the dimensions); names are looked at
only to say which projection a line is (Q, K, V, output, up, down), never to count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .errors import ParamcountError
from .formula import ClosedForm, Part, Poly, Symbols, approximations, expression, four_h, total
from .ir import Block, Node, Tensor, Tie, join
from .model import Model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .family import Resolved


@dataclass(frozen=True)
class Param:
    """One tensor of a line: ``name`` within its module (``weight``, ``bias``)."""

    name: str
    shape: tuple[int, ...]
    tied_to: str | None = None

    @property
    def count(self) -> int:
        return 0 if self.tied_to else math.prod(int(d) for d in self.shape)

    @property
    def size(self) -> int:
        """Elements, whether or not the tensor is shared."""
        return math.prod(int(d) for d in self.shape)


@dataclass(frozen=True)
class Line:
    """One module's parameters. ``repeat`` holds the repeats inside a section (experts × E),
    ``active`` the (k, n) of routed experts."""

    path: str
    kind: str
    role: str
    params: tuple[Param, ...]
    repeat: tuple[int, ...] = ()
    active: tuple[int, int] | None = None

    @property
    def each(self) -> int:
        return sum(p.count for p in self.params)

    @property
    def value(self) -> int:
        return math.prod(int(r) for r in self.repeat) * self.each

    @property
    def tied(self) -> bool:
        return all(p.tied_to for p in self.params)


@dataclass(frozen=True)
class Section:
    """A run of lines. ``kind`` is ``layers`` for a stack of identical layers (its lines are
    one layer's, ``repeat`` the number of layers), else the component kind of the lines."""

    kind: str
    path: str
    lines: tuple[Line, ...]
    repeat: int | None = None
    first: int = 0

    @property
    def each(self) -> int:
        return sum(line.value for line in self.lines)

    @property
    def copies(self) -> int:
        return 1 if self.repeat is None else int(self.repeat)

    @property
    def total(self) -> int:
        return self.each * self.copies

    @property
    def last(self) -> int:
        return self.first + self.copies - 1


@dataclass(frozen=True)
class Derivation:
    """The whole working: sections whose totals add up to ``total`` (= ``Model.total``)."""

    name: str
    class_name: str
    backbone_class: str
    model_type: str
    sections: tuple[Section, ...]
    total: int
    total_with_ties: int
    active_total: int
    closed: ClosedForm
    notes: tuple[str, ...] = field(default=())
    inside: tuple[str, int] | None = None  # (class, its total) when this is the backbone inside that class
    unsymbolic: str | None = None  # why the lines carry no config symbols (a tree read from tensor names)

    @property
    def layers(self) -> int:
        return sum(s.copies for s in self.sections if s.kind == "layers")


def derive(model: Model) -> Derivation:
    """The derivation of ``model.tree`` (its class; load with ``model_class="base"`` for the
    backbone). A model read from files is derived on its family's tree where one is known and
    the files agree with it (:func:`paramcount.family.resolve`); else on the tree its names
    make, without symbols, and ``unsymbolic`` says why. Raises AssertionError if the sections
    do not add up to the count."""
    from .family import resolve

    model.require_native("a derivation")  # before resolving: the fallback's message names the model given
    return derive_resolved(resolve(model))


def derive_resolved(resolved: Resolved) -> Derivation:
    """The derivation of ``resolved.model``, which :func:`paramcount.family.resolve` chose
    (a backbone taken from it with :func:`paramcount.family.backbone_of`)."""
    model = resolved.model
    model.require_native("a derivation")
    _bounded(model)
    sections = tuple(split(model.tree))
    total_ = sum(s.total for s in sections)
    if total_ != model.total:
        raise AssertionError(f"derivation sums to {total_:,}, the count is {model.total:,}")
    closed = closed_form(model, sections)
    if closed.evaluate() != model.total:
        raise AssertionError(f"closed form gives {closed.evaluate():,}, the count is {model.total:,}")
    return Derivation(
        name=model.name,
        class_name=model.class_name,
        backbone_class=model.backbone_class,
        model_type=model.model_type,
        sections=sections,
        total=total_,
        total_with_ties=model.total_with_ties,
        active_total=model.active_total,
        closed=closed,
        notes=model.notes,
        unsymbolic=resolved.why,
    )


MAX_DERIVED = 4096  # distinct tensors (a repeated block's once) a derivation is written for


def _bounded(model: Model) -> None:
    """A derivation is a line per distinct tensor: a header of 100k unrepeated tensors would be
    minutes of work and tens of MB of text, so past MAX_DERIVED it is refused in one line."""
    count, stack = 0, [model.tree]
    while stack and count <= MAX_DERIVED:
        for child in stack.pop().children:
            if isinstance(child, Block):
                stack.append(child)
            else:
                count += 1
    if count > MAX_DERIVED:
        raise ParamcountError(
            f"more than {MAX_DERIVED:,} distinct tensors: too many lines to derive", source=model.name, field="derive"
        )


# ---- cutting the tree into sections ---------------------------------------------------------


def split(root: Block) -> list[Section]:
    """Sections in model order: each layer stack on its own, the lines between stacks grouped
    by the outermost component kind above them (the embedding LayerNorm is an embedding line,
    and so is a norm standing between the embeddings and the first layers, as in BLOOM)."""
    out: list[Section] = []
    for s in _split(root):
        if s.kind == "norms" and out and out[-1].kind == "embeddings":
            out[-1] = Section("embeddings", _common([out[-1].path, s.path]), out[-1].lines + s.lines)
        else:
            out.append(s)
    return out


def _split(root: Block) -> Iterator[Section]:
    pending: list[tuple[str, Line]] = []
    for item in _items(root, "", None, None):
        if isinstance(item, Section):
            yield from _flush(pending)
            pending = []
            yield item
        else:
            pending.append(item)
    yield from _flush(pending)


def _flush(pending: list[tuple[str, Line]]) -> Iterator[Section]:
    start = 0
    for i in range(1, len(pending) + 1):
        if i == len(pending) or pending[i][0] != pending[start][0]:
            lines = tuple(line for _, line in pending[start:i])
            yield Section(pending[start][0], _common(line.path for line in lines), lines)
            start = i


def _common(paths) -> str:
    split_paths = [p.split(".") for p in paths]
    prefix = []
    for parts in zip(*split_paths, strict=False):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    return ".".join(prefix)


def _items(node: Block, path: str, kind: str | None, top: str | None) -> Iterator[Section | tuple[str, Line]]:
    """Layer stacks as sections, everything else as (section kind, line)."""
    for child in node.children:
        here = join(path, child.name)
        child_kind = child.kind or kind
        child_top = top or child.kind
        if isinstance(child, Block) and child.repeat is not None and child.label == "layer":
            lines = tuple(line for c in child.children for line in _lines(c, "", child_kind, ()))
            yield Section("layers", here, lines, repeat=child.repeat, first=child.start)
        elif isinstance(child, Block) and not _is_module(child):
            yield from _items(child, here, child_kind, child_top) if child.repeat is None else _repeated(child, here)
        else:
            for line in _lines(child, path, kind, ()):
                yield (child_top or "other", line)


def _repeated(node: Block, path: str) -> Iterator[tuple[str, Line]]:
    """A repeated block outside any layer stack: its lines carry the repeat."""
    for line in _lines(node, path.rpartition(".")[0], node.kind, ()):
        yield (node.kind or "other", line)


def _is_module(node: Block) -> bool:
    """A leaf module: only tensors below it (a linear layer, a norm, an embedding table)."""
    return node.repeat is None and all(isinstance(c, (Tensor, Tie)) for c in node.children)


def _lines(
    node: Node,
    path: str,
    kind: str | None,
    repeat: tuple[int, ...],
    active: tuple[int, int] | None = None,
    norm: str | None = None,
) -> Iterator[Line]:
    """The lines under ``node``; nested repeats (experts, inner layer lists) multiply, and
    routed experts pass their (k, n) down to every line below them; a norm block that says
    what it is (a bias-free LayerNorm) says it for the lines below it."""
    here = join(path, node.name)
    kind = node.kind or kind or "other"
    if isinstance(node, (Tensor, Tie)):
        yield _line(here, kind, (node,), repeat, active, norm)
        return
    active = node.active or active
    norm = node.label if node.label in NORM_FORMS else norm
    if _is_module(node):
        yield _line(here, kind, node.children, repeat, active, norm)
        return
    inner = (*repeat, node.repeat) if node.repeat is not None else repeat
    loose = tuple(c for c in node.children if not isinstance(c, Block))
    if loose and node.active:  # fused experts: one line for the 3-D tensors
        yield _line(here, kind, loose, inner, active, norm)
    else:
        for t in loose:
            yield _line(join(here, t.name), kind, (t,), inner, active, norm)
    for child in node.children:
        if isinstance(child, Block):
            yield from _lines(child, here, kind, inner, active, norm)


def _line(
    path: str,
    kind: str,
    nodes: Sequence[Node],
    repeat: tuple[int, ...],
    active: tuple[int, int] | None = None,
    norm: str | None = None,
) -> Line:
    params = tuple(Param(n.name, n.shape, n.target if isinstance(n, Tie) else None) for n in nodes)
    return Line(path, kind, role(kind, path.rpartition(".")[2], params, norm), params, repeat, active)


# ---- what a line is --------------------------------------------------------------------------

ATTENTION = {
    "q": ("q", "query", "q_proj", "q_lin", "wq", "q_attn"),
    "k": ("k", "key", "k_proj", "k_lin", "wk"),
    "v": ("v", "value", "v_proj", "v_lin", "wv"),
    "o": ("o", "o_proj", "out_proj", "dense", "c_proj", "out_lin", "wo"),
    "qkv": ("c_attn", "query_key_value", "qkv", "qkv_proj", "wqkv", "w_pack"),
    "q_down": ("q_a_proj",),
    "q_up": ("q_b_proj",),
    "kv_down": ("kv_a_proj_with_mqa", "kv_a_proj"),
    "kv_up": ("kv_b_proj",),
    "relative_bias": ("relative_attention_bias",),
}
FEED_FORWARD = {
    "ffn_gate": ("gate_proj", "wi_0", "w1"),
    "ffn_up": ("up_proj", "fc1", "c_fc", "dense_h_to_4h", "wi", "wi_1", "w3", "lin1", "fc_in"),
    "ffn_down": ("down_proj", "fc2", "dense_4h_to_h", "wo", "w2", "lin2", "fc_out", "c_proj"),
    "ffn_gate_up": ("gate_up_proj",),
}


# What a norm block may say it is (``blocks.norm(..., form=)``); else a bias tells a LayerNorm.
NORM_FORMS = ("layernorm", "rmsnorm")


def role(kind: str, name: str, params: Sequence[Param], norm: str | None = None) -> str:
    """What a module is, for its label: ``q``, ``ffn_up``, ``token_embedding``, … or ``""``.
    ``norm`` is what an enclosing norm block says it is (a LayerNorm without bias)."""
    low = name.lower()
    if kind == "embeddings":
        return _embedding_role(params)
    if kind == "norms":
        return norm or ("layernorm" if any(p.name == "bias" for p in params) else "rmsnorm")
    if kind == "attention":
        return next((r for r, names in ATTENTION.items() if low in names), "")
    if kind == "experts" and any(len(p.shape) == 3 for p in params):
        return "experts"  # transformers 5 holds routed experts as 3-D tensors
    if kind in ("feed_forward", "experts"):
        found = next((r for r, names in FEED_FORWARD.items() if low in names), "")
        return found or _ffn_by_shape(params)
    if kind in ("router", "pooler"):
        return kind
    if kind == "output_head":
        return _head_role(params)
    return ""


def _embedding_role(params: Sequence[Param]) -> str:
    rows = dim_symbols(params[0].shape[0]) if params and len(params[0].shape) == 2 else set()
    for symbol, name in (("V", "token_embedding"), ("P", "position_embedding"), ("T", "segment_embedding")):
        if symbol in rows:
            return name
    return "embedding"


def dim_symbols(dim: int) -> set[str]:
    """The symbols a dimension's expression names (``P + 2`` names P)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression(dim)))


def _ffn_by_shape(params: Sequence[Param]) -> str:
    """nn.Linear stores (out, in): out = h is the down projection, in = h the up one."""
    weight = next((p for p in params if p.name == "weight" and len(p.shape) == 2), None)
    if weight is None:
        return ""
    out, inp = (expression(d) for d in weight.shape)
    return "ffn_down" if out == "h" else "ffn_up" if inp == "h" else ""


def _head_role(params: Sequence[Param]) -> str:
    weight = next((p for p in params if p.name == "weight"), None)
    first = expression(weight.shape[0]) if weight else ""
    if first == "V":
        return "lm_head"
    if first == "C":
        return "classifier"
    if weight is None and params and expression(params[0].shape[0]) == "V":
        return "output_bias"
    return ""


# ---- the closed form ------------------------------------------------------------------------


def symbols(model: Model, sections: Sequence[Section]) -> Symbols:
    """The symbols of every dimension and repeat in the sections, with their values."""
    syms = Symbols(model)
    for s in sections:
        syms.learn([s.repeat] if s.repeat is not None else [])
        for line in s.lines:
            syms.learn(line.repeat)
            for p in line.params:
                syms.learn(p.shape)
    return syms


def line_poly(syms: Symbols, line: Line) -> Poly:
    """What one line holds, in symbols (ties hold nothing new)."""
    body = total(syms.product(p.shape) for p in line.params if not p.tied_to)
    return syms.product(line.repeat) * body


def closed_form(model: Model, sections: Sequence[Section]) -> ClosedForm:
    syms = symbols(model, sections)
    parts = []
    for s in sections:
        repeat = syms.poly(s.repeat) if s.repeat is not None else Poly.const(1)
        parts.append(Part(s.kind if s.kind != "layers" else s.path, repeat, total(line_poly(syms, x) for x in s.lines)))
    layers = sum(s.copies for s in sections if s.kind == "layers")
    used = set().union(*(p.poly.symbols() for p in parts)) if parts else set()
    fours = tuple(f for p in parts if p.repeat != Poly.const(1) and (f := four_h(p.title, p, syms.values)))
    return ClosedForm(
        parts=tuple(parts),
        values={k: v for k, v in syms.values.items() if k in used},
        fields={k: syms.field(k) for k in sorted(used)},
        exact=model.total,
        approximations=approximations(syms.values, layers, model.total),
        with_4h=fours,
    )
