"""The intermediate representation every input becomes and every output reads.

A model is a tree of :class:`Block` nodes whose leaves are named parameter tensors
(:class:`Tensor`) or aliases of another tensor (:class:`Tie`). A block that repeats
(``layers × 32``, ``experts × 8``) is stored once with ``repeat=n``: counting multiplies,
it never unrolls. Dimensions are :class:`Sym` integers that remember the config symbols
they came from, so the same tree yields the number, the formula and the derivation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from .records import field, record

# Component kinds a breakdown groups by; a node without one inherits its parent's.
KINDS = (
    "embeddings",
    "attention",
    "recurrent",  # token mixers without a KV cache: Mamba/SSM, linear attention, short convolutions
    "feed_forward",
    "experts",
    "router",
    "norms",
    "output_head",
    "pooler",
    "other",
)

_ATOM, _MUL, _ADD = 0, 1, 2  # operator precedence of a Sym's expression
_new_int = int.__new__


def _binary(op: str, prec: int, compute: Callable[[int, int], int], swap: bool = False) -> Callable[[Sym, int], Sym]:
    """A Sym operator: the int result, remembering its operands (``swap`` for ``__radd__`` and kin)."""

    def method(self: Sym, other: int) -> Sym:
        cls = other.__class__
        if cls is not Sym and cls is not int and (not isinstance(other, int) or cls is bool):
            return NotImplemented  # (the usual operands, Sym and int, pass the first two tests)
        a, b = (other, self) if swap else (self, other)
        out = _new_int(Sym, compute(a, b))  # Sym.__new__ inlined: builders do this dozens of times a count
        out._expr = (a, op, b)
        out.prec = prec
        return out

    return method


class Sym(int):
    """An int that carries the expression it was computed from (``h``, ``3·h``, ``h/a``).

    Arithmetic keeps its operands and writes the text only when ``expr`` is read: counting
    does arithmetic on every build, derivations read the text once.
    """

    _expr: str | tuple[int, str, int] | None  # the text; None: its digits; (a, op, b): not yet written
    prec: int  # operator precedence of the expression: when it needs parentheses

    def __new__(cls, value: int, expr: str | None = None, prec: int = _ATOM) -> Sym:
        self = int.__new__(cls, value)
        self._expr = expr
        self.prec = prec
        return self

    @property
    def expr(self) -> str:
        if self._expr is None:
            return int.__repr__(self)
        if isinstance(self._expr, tuple):  # written once, on first read
            a, op, b = self._expr
            right = self.prec - 1 if op in (" - ", "/") else self.prec  # a - (b + c), a/(b·c)
            self._expr = f"{_wrap(a, self.prec)}{op}{_wrap(b, right)}"
        return self._expr

    def __repr__(self) -> str:  # reads as the number it is; ``.expr`` has the symbols
        return int.__repr__(self)

    __add__ = _binary(" + ", _ADD, int.__add__)
    __radd__ = _binary(" + ", _ADD, int.__add__, swap=True)
    __sub__ = _binary(" - ", _ADD, int.__sub__)
    __rsub__ = _binary(" - ", _ADD, int.__sub__, swap=True)
    __mul__ = _binary("·", _MUL, int.__mul__)
    __rmul__ = _binary("·", _MUL, int.__mul__, swap=True)
    __floordiv__ = _binary("/", _MUL, int.__floordiv__)
    __rfloordiv__ = _binary("/", _MUL, int.__floordiv__, swap=True)


def _wrap(value: int, prec: int) -> str:
    """An operand's text, parenthesised where it binds looser than the operator around it."""
    if isinstance(value, Sym) and value.prec > prec:
        return f"({value.expr})"
    return expr(value)


def expr(value: int) -> str:
    """The symbolic expression of a dimension (its digits if it carries none)."""
    return value.expr if isinstance(value, Sym) else str(int(value))


# Nodes are never changed once made (trees share subtrees), so they hash by value. They
# are not frozen dataclasses only because a frozen __init__ costs three times as much, and
# every count builds a few dozen of them.


@record(slots=True, unsafe_hash=True)
class Tensor:
    """A named parameter tensor; ``name`` is its last dotted segment(s) within the parent."""

    name: str
    shape: tuple[int, ...]
    kind: str | None = None
    dtype: str | None = None  # as a checkpoint stores it, when the source says
    count: int = field(init=False, repr=False, compare=False)
    tied: int = field(init=False, repr=False, compare=False)  # 0: a Block sums its children's

    def __init__(self, name: str, shape: tuple[int, ...], kind: str | None = None, dtype: str | None = None):
        # written out rather than generated: a count builds dozens of these (the dataclass
        # __init__ and __post_init__ pair costs twice as much)
        self.name, self.shape, self.kind, self.dtype = name, shape, kind, dtype
        self.count = _elements(shape)
        self.tied = 0


def _elements(shape: tuple[int, ...]) -> int:
    """The product of a shape as a plain int. Most tensors are matrices or vectors: for them
    ``int.__mul__`` multiplies without building a Sym (a third of ``math.prod(map(int, ...))``)."""
    n = len(shape)
    if n == 1:
        return int(shape[0])
    if n == 2 and shape[0].__class__ in _INTS:
        product = _TIMES(*shape)
        if product is not NotImplemented:  # the second an int too
            return product
    return math.prod(map(int, shape))


_TIMES = int.__mul__
_INTS = (int, Sym)


@record(slots=True, unsafe_hash=True)
class Tie:
    """A parameter that is another one (``lm_head.weight`` is the token embedding).

    It adds no parameters; ``target`` is the full name of the tensor it aliases.
    """

    name: str
    shape: tuple[int, ...]
    target: str
    kind: str | None = None
    tied: int = field(init=False, repr=False, compare=False)  # the parameters it aliases

    def __post_init__(self) -> None:
        self.tied = math.prod(map(int, self.shape))

    @property
    def count(self) -> int:
        return 0

    @property
    def aliased_count(self) -> int:
        return self.tied


@record(slots=True, unsafe_hash=True)
class Block:
    """A module. With ``repeat=n`` it is a list (``layers.0`` … ``layers.n-1``) of identical
    copies of its children, numbered from ``start``; ``repeat=None`` is a plain module.

    ``active`` = (k, n) says only k of n copies run per token (routed experts).
    ``checkpoint`` is the same parameters under the names a checkpoint stores (per-expert
    tensors where transformers fuses them), used when comparing with file headers.
    """

    name: str
    children: tuple[Node, ...] = ()
    repeat: int | None = None
    start: int = 0
    kind: str | None = None
    active: tuple[int, int] | None = None
    checkpoint: Block | None = None
    label: str | None = None  # what the block is, for trees and per-layer lines
    tower: str | None = None  # a composite model's part: vision_encoder, projector, language_model, …
    copies: int = field(init=False, repr=False, compare=False)
    count: int = field(init=False, repr=False, compare=False)
    tied: int = field(init=False, repr=False, compare=False)  # parameters its ties alias
    flat: bool = field(init=False, repr=False, compare=False)  # no Block among its children

    def __init__(
        self,
        name: str,
        children: tuple[Node, ...] = (),
        repeat: int | None = None,
        start: int = 0,
        kind: str | None = None,
        active: tuple[int, int] | None = None,
        checkpoint: Block | None = None,
        label: str | None = None,
        tower: str | None = None,
    ):
        self.name, self.children, self.repeat, self.start, self.kind = name, children, repeat, start, kind
        self.active, self.checkpoint, self.label, self.tower = active, checkpoint, label, tower
        # Trees are built bottom-up and never change, so totals are summed once, here (a walk
        # would visit a shared subtree once per stack that holds it: hybrid schedules have dozens).
        self.copies = copies = 1 if repeat is None else int(repeat)
        count = tied = 0
        flat = True
        for c in children:
            count += c.count
            tied += c.tied
            if c.__class__ is Block:
                flat = False
        self.count = copies * count
        self.tied = copies * tied
        self.flat = flat

    @property
    def count_with_ties(self) -> int:
        return self.count + self.tied

    def indices(self) -> range:
        return range(self.start, self.start + self.copies)


Node = Tensor | Tie | Block


# The parts of a composite model (image+text, speech, dual encoders), each its own tower.
TOWERS = ("vision_encoder", "audio_encoder", "text_encoder", "projector", "language_model", "other")


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix and name else prefix or name


@record(frozen=True)
class Leaf:
    """One tensor of the unrolled model, under its full state-dict name."""

    name: str
    shape: tuple[int, ...]
    kind: str
    tied_to: str | None = None
    dtype: str | None = None

    @property
    def count(self) -> int:
        return math.prod(int(d) for d in self.shape)


def leaves(node: Node, prefix: str = "", kind: str = "other", checkpoint: bool = False) -> Iterator[Leaf]:
    """Every tensor and tie under ``node`` with its full name, unrolling repeats.

    This is for listing; counting never needs it. With ``checkpoint`` a block's checkpoint
    naming replaces its in-memory one.
    """
    kind = node.kind or kind
    if isinstance(node, Tensor):
        yield Leaf(join(prefix, node.name), node.shape, kind, dtype=node.dtype)
    elif isinstance(node, Tie):
        yield Leaf(join(prefix, node.name), node.shape, kind, tied_to=node.target)
    else:
        if checkpoint and node.checkpoint is not None:
            yield from leaves(node.checkpoint, prefix, kind, checkpoint)
            return
        base = join(prefix, node.name)
        for i in node.indices() if node.repeat is not None else (None,):
            here = base if i is None else join(base, str(i))
            for child in node.children:
                yield from leaves(child, here, kind, checkpoint)


# Outputs that list every tensor unrolled (``--json``'s tensors, diff, a checkpoint compared
# with its config) stop here: 2^17 is several times the largest published checkpoint
# (DeepSeek-V3 stores 45,337 tensors), and diff at the bound takes a few seconds.
MAX_LISTED = 1 << 17  # 131,072


def leaf_count(node: Node, checkpoint: bool = False) -> int:
    """How many entries :func:`leaves` would yield, by arithmetic over the tree."""
    if not isinstance(node, Block):
        return 1
    if checkpoint and node.checkpoint is not None:
        return leaf_count(node.checkpoint, checkpoint)
    return node.copies * sum(leaf_count(c, checkpoint) for c in node.children)


@record(frozen=True)
class Run:
    """Tensors alike but for their layer (or expert) numbers, listed once: ``name`` writes each
    repeated index as ``{first..last}``; ``copies`` is how many tensors the entry stands for."""

    leaf: Leaf
    copies: int


def runs(node: Node, prefix: str = "", kind: str = "other", copies: int = 1) -> Iterator[Run]:
    """Every tensor and tie under ``node`` once per repeated block, with how many copies it stands for."""
    kind = node.kind or kind
    if not isinstance(node, Block):
        for leaf in leaves(node, prefix, kind):
            yield Run(leaf, copies)
        return
    base = join(prefix, node.name)
    if node.copies == 0:
        return
    if node.repeat is not None:
        last = node.start + node.copies - 1
        base, copies = join(base, f"{{{node.start}..{last}}}"), copies * node.copies
    for child in node.children:
        yield from runs(child, base, kind, copies)
