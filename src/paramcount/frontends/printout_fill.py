"""Parameters a printout does not show, filled from the family that defines the printed class.

``print(model)`` shows a module's parameters only through its extra repr: ``T5LayerNorm()``,
``Qwen3NextRMSNormGated()`` or a ViT's ``cls_token`` (held beside submodules) print no shape.
Where paramcount's family defines the printed class, its tree names those tensors with symbolic
shapes (``h``, ``h·expand``, ``1``), and the printed modules give the symbols' values: every
printed tensor is matched with the family's tensor at the same place, and a dimension that is
one symbol there binds that symbol to the printed width (the nearest binding wins where towers
differ). A missing tensor is filled only when every dimension evaluates from bound symbols (or
is the constant 1), and the family's own default widths give its default shape back through the
same arithmetic; anything else stays unknown and the count stays a lower bound.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..ir import Block, Node, Tensor, Tie, expr, join

_DIGITS = re.compile(r"(?:(?<=\.)|^)\d+(?=\.|$)")
_ATOM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\d+)|([·+\-/()⌈⌉]))")

Param = tuple[str, tuple[int, ...], str | None]
MAX_PLACES = 1 << 14  # distinct (place, shape) pairs read for widths: real models have a few hundred


def pattern(path: str) -> str:
    """A path with its layer and entry numbers as ``*``: where the family's tensor sits."""
    return _DIGITS.sub("*", path)


def _leaves(node: Block, path: str = "") -> Iterator[tuple[str, Tensor | Tie]]:
    for child in node.children:
        if isinstance(child, Block):
            here = join(path, child.name)
            yield from _leaves(child, f"{here}.*" if child.repeat is not None else here)
        else:
            yield join(path, child.name), child


def blocks(node: Block, path: str = "") -> Iterator[tuple[str, Block]]:
    for child in node.children:
        if isinstance(child, Block):
            here = join(path, child.name)
            here = f"{here}.*" if child.repeat is not None else here
            yield here, child
            yield from blocks(child, here)


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass
class Widths:
    """Symbol values seen at places in the tree; the one nearest a place answers for it.

    Towers name their widths alike (a vision tower's ``h`` and the text's), so each value also
    keeps the one the family's own tree has there at its defaults: a value whose default differs
    from the one asked about is another config field's, and never answers for it."""

    # symbol -> place -> value -> the family's defaults there (None: not known)
    seen: dict[str, dict[tuple[str, ...], dict[int, set[int | None]]]] = field(default_factory=dict)

    def add(self, symbol: str, path: str, value: int, default: int | None = None) -> bool:
        """Record a value; whether it is new there."""
        place = self.seen.setdefault(symbol, {}).setdefault(tuple(pattern(path).split(".")), {})
        defaults = place.setdefault(int(value), set())
        new = default not in defaults
        defaults.add(None if default is None else int(default))
        return new

    def value(
        self, symbol: str, path: str, skip: frozenset[tuple[str, ...]] = frozenset(), default: int | None = None
    ) -> int | None:
        """The symbol's value nearest ``path``, not reading the places in ``skip``, nor values
        whose family default is known and not ``default`` (when given)."""
        places = {}
        for p, values in self.seen.get(symbol, {}).items():
            fits = {v for v, ds in values.items() if default is None or None in ds or default in ds}
            if p not in skip and fits:
                places[p] = fits
        if not places:
            return None
        here = tuple(pattern(path).split("."))
        best = max(_common(here, p) for p in places)
        values = set().union(*(v for p, v in places.items() if _common(here, p) == best))
        return next(iter(values)) if len(values) == 1 else None


def symbols(text: str) -> set[str]:
    return set(_ATOM.findall(text))


def evaluate(
    text: str,
    widths: Widths,
    path: str,
    given: dict[str, int] | None = None,
    skip: frozenset = frozenset(),
    defaults: dict[str, int] | None = None,
) -> int | None:
    """A shape expression (``h·expand``, ``a·d_head + 1``, ``⌈h/16⌉``) with the symbols' values
    near ``path`` (or ``given``; ``defaults``: the family's default value of a symbol here, see
    Widths); None when a symbol is unbound or the text is not this small arithmetic."""
    if not given and text in widths.seen and not _ATOM.fullmatch(text):  # a whole expression seen, or solved
        whole = widths.value(text, path, skip, (defaults or {}).get(text))
        if whole is not None:
            return whole
    tokens: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            return None
        name, digits, op = m.groups()
        if name:
            v = given[name] if given and name in given else widths.value(name, path, skip, (defaults or {}).get(name))
            if v is None:
                return None
            tokens.append(v)
        else:
            tokens.append(int(digits) if digits else op)
        pos = m.end()
    value, rest = _sum(tokens)
    return value if value is not None and not rest else None


def _sum(tokens: list, ceil: bool = False) -> tuple[int | None, list]:
    value, tokens = _product(tokens, ceil)
    while value is not None and tokens and tokens[0] in ("+", "-"):
        op, (right, tokens) = tokens[0], _product(tokens[1:], ceil)
        value = None if right is None else (value + right if op == "+" else value - right)
    return value, tokens


def _product(tokens: list, ceil: bool) -> tuple[int | None, list]:
    value, tokens = _atom(tokens)
    while value is not None and tokens and tokens[0] in ("·", "/"):
        op, (right, tokens) = tokens[0], _atom(tokens[1:])
        if not right:
            return None, tokens
        value = value * right if op == "·" else (-(-value // right) if ceil else value // right)
    return value, tokens


def _atom(tokens: list) -> tuple[int | None, list]:
    if not tokens:
        return None, tokens
    head = tokens[0]
    if head in ("(", "⌈"):  # ⌈a/b⌉: division rounded up inside
        value, rest = _sum(tokens[1:], ceil=head == "⌈")
        close = ")" if head == "(" else "⌉"
        return (value, rest[1:]) if rest and rest[0] == close else (None, rest)
    return (head, tokens[1:]) if isinstance(head, int) else (None, tokens)


def solve(text: str, value: int, widths: Widths, path: str) -> list[tuple[str, int]]:
    """Each symbol of ``text`` with the value that makes ``text`` equal ``value`` given the other
    symbols' values, where ``text`` grows in steps with it (``h·expand``, ``⌈h/16⌉ + 2·state``).
    A term of the sum that is a whole dimension seen near ``path`` counts as that width: Mamba's
    ``h·expand + h·expand + 2·n_groups·state_size + a`` solves for ``a`` once the convolution's
    ``h·expand + 2·n_groups·state_size`` is printed, though neither of its symbols is."""
    text, known = _terms(text, widths, path)
    out = []
    for x in sorted(symbols(text) - known.keys()):
        guess = _linear(text, value, widths, path, known, x)
        if guess is not None:
            out.append((x, guess))
    # A bracketed group as one unknown: Mllama's tile table is max_num_tiles·(positions)·h, and
    # its positions, (image_size/patch_size)² + 1, are in no other printed width.
    for group in _GROUP.findall(text):
        if any(widths.value(x, path) is None for x in symbols(group) - known.keys()):
            guess = _linear(text.replace(f"({group})", _GROUP_NAME, 1), value, widths, path, known, _GROUP_NAME)
            if guess is not None:
                out.append((group, guess))
    return out


_GROUP = re.compile(r"\(([^()]+)\)")
_GROUP_NAME = "__group"


def _linear(text: str, value: int, widths: Widths, path: str, known: dict[str, int], x: str) -> int | None:
    """The whole x >= 1 that makes ``text`` equal ``value``, where ``text`` grows in steps with x."""
    f1, f2 = (evaluate(text, widths, path, {**known, x: n}) for n in (1, 2))
    if f1 is None or f2 is None or f2 <= f1 or (value - f1) % (f2 - f1):
        return None
    guess = 1 + (value - f1) // (f2 - f1)
    return guess if guess >= 1 and evaluate(text, widths, path, {**known, x: guess}) == value else None


_TERM = "__term"  # a sum's term replaced by its width (no family names a symbol so)


def _terms(text: str, widths: Widths, path: str) -> tuple[str, dict[str, int]]:
    """``text`` with each term that is a whole dimension seen near ``path`` (a sum of its terms,
    standing between ``+`` signs or the ends) replaced by a name bound to that width."""
    known: dict[str, int] = {}
    for key in sorted((k for k in widths.seen if not _ATOM.fullmatch(k)), key=len, reverse=True):
        at = text.find(key)
        if key == text or at < 0 or not _whole_term(text, at, at + len(key)):
            continue
        value = widths.value(key, path)
        if value is not None:
            name = f"{_TERM}{len(known)}"
            text, known[name] = text[:at] + name + text[at + len(key) :], value
    return text, known


def _whole_term(text: str, start: int, end: int) -> bool:
    return (start == 0 or text[:start].endswith("+ ")) and (end == len(text) or text[end:].startswith((" +", " -")))


class Filler:
    """The family's tensors for printed modules that do not show theirs (see the module doc)."""

    def __init__(self, family_tree: Block, printed: Block):
        self.tensors: dict[str, list[Tensor]] = {}
        for path, t in _leaves(family_tree):
            if isinstance(t, Tensor):
                self.tensors.setdefault(pattern(path), []).append(t)
        self.modules = {pattern(p) for p, _ in blocks(family_tree)}
        self.kinds = raw_kinds(family_tree)
        own = [(path, t.shape, t.shape) for path, ts in self.tensors.items() for t in ts]
        self.defaults = _widths(own)  # the family's default widths, read as the printout's are
        # What binds a symbol is the place (a pattern) and the shapes: alike entries of a long
        # list say it once, and a text with more unlike places than MAX_PLACES fills nothing.
        pairs: dict[tuple, tuple[str, tuple[int, ...], tuple[int, ...]]] = {}
        for path, t in _leaves(printed):
            ts = self.tensors.get(pattern(path), [])
            if isinstance(t, Tensor) and len({tuple(map(expr, x.shape)) for x in ts}) == 1:
                pairs.setdefault((pattern(path), tuple(t.shape)), (path, ts[0].shape, t.shape))
            if len(pairs) > MAX_PLACES:
                pairs = {}
                break
        self.widths = _widths(list(pairs.values()), self.defaults)
        self.filled: dict[str, list[str]] = {}  # class -> the paths filled

    def leaf(self, path: str, cls: str) -> list[Param] | None:
        """A leaf module's parameters by the family, or None where they cannot be filled."""
        here = pattern(path)
        if here not in self.modules:
            return None
        names = sorted({p[len(here) + 1 :] for p in self.tensors if p.startswith(here + ".")})
        if any("." in n for n in names):
            return None
        params = self._params(here, names)
        if params is not None:
            self.filled.setdefault(cls, []).append(path)
        return params

    def beside(self, path: str, printed: set[str], submodules: set[str]) -> list[Param]:
        """The raw parameters the family's module at ``path`` holds beside its submodules. Where
        modules of several kinds share the place (a hybrid's mixers: Mamba's holds A_log, its
        attention nothing), the family's module whose submodules the printed one has answers."""
        here = pattern(path)
        fits = {raw for subs, raw in self.kinds.get(here, []) if subs <= submodules}
        params = []
        for name in sorted(next(iter(fits)) - printed if len(fits) == 1 else ()):  # each alone: one may be unknowable
            params += self._params(here, [name]) or []
        if params:
            names = ", ".join(p[0] for p in params)
            self.filled.setdefault("(raw parameters)", []).append(f"{path or '(root)'}: {names}")
        return params

    def _params(self, here: str, names: list[str]) -> list[Param] | None:
        # The family's defaults must come back from the widths of its other tensors, as the
        # printout's must: the tensors being filled are not read for their own symbols.
        skip = frozenset(tuple(join(here, n).split(".")) for n in names)
        out: list[Param] = []
        for name in names:
            ts = self.tensors[join(here, name)]
            shape = self._shape(ts, join(here, name), skip)
            if shape is None:
                return None
            out.append((name, shape, ts[0].kind))
        return out

    def _shape(self, ts: list[Tensor], path: str, skip: frozenset) -> tuple[int, ...] | None:
        if len({tuple(map(expr, t.shape)) for t in ts}) != 1:
            return None
        shape = []
        for d in ts[0].shape:
            text = expr(d)
            hint = {text: int(d)}  # a symbol, or a whole expression seen or solved as one
            if text.isdigit():  # a constant of the family's code: only 1 is surely not a config value
                value = 1 if int(text) == 1 else None
            elif evaluate(text, self.defaults, path, skip=skip, defaults=hint) != int(d):
                value = None  # the arithmetic does not give the family's own default back
            else:
                value = evaluate(text, self.widths, path, defaults=hint)
            if value is None or value < 0:
                return None
            shape.append(value)
        return tuple(shape)

    def note(self) -> str | None:
        if not self.filled:
            return None
        parts = [f"{cls} ×{len(paths)} (e.g. {paths[0]})" for cls, paths in self.filled.items()]
        return "filled from the family, with the widths printed around them: " + "; ".join(parts)


class Towers:
    """The fillers of printed towers a family defines, under a root no family does (a vision
    tower of a class paramcount knows, such as CLIPVisionModel, in a model it does not): each
    answers for the paths under its tower, read relative to it."""

    def __init__(self, towers: list[tuple[str, Filler]]):
        self.towers = towers

    def _find(self, path: str) -> tuple[Filler, str] | None:
        for prefix, filler in self.towers:
            if path == prefix or path.startswith(prefix + "."):
                return filler, path[len(prefix) + 1 :]
        return None

    def leaf(self, path: str, cls: str) -> list[Param] | None:
        found = self._find(path)
        return found[0].leaf(found[1], cls) if found else None

    def beside(self, path: str, printed: set[str], submodules: set[str]) -> list[Param]:
        found = self._find(path)
        return found[0].beside(found[1], printed, submodules) if found else []

    def note(self) -> str | None:
        notes = [(prefix, f.note()) for prefix, f in self.towers]
        said = [f"{prefix}: {note.split(': ', 1)[1]}" for prefix, note in notes if note]
        head = "filled from the towers' families, with the widths printed around them: "
        return head + "; ".join(said) if said else None


def _widths(pairs: list[tuple[str, tuple[int, ...], tuple[int, ...]]], family: Widths | None = None) -> Widths:
    """Symbol values from (place, the family's shape, the shape seen there): single symbols
    first, then what one unknown symbol of an expression solves for (its default solved the same
    way from ``family``, the family's own widths; None: the shapes are the family's own)."""
    widths = Widths()
    for pair in pairs:
        _bind(widths, pair[1], pair[2], pair[0])
    for _ in range(3):  # a width solved from one tensor may be what solves the next
        if not any([_solve(widths, *pair, family) for pair in pairs]):
            break
    return widths


def _solve(
    widths: Widths, path: str, family_shape: tuple[int, ...], shape: tuple[int, ...], family: Widths | None
) -> bool:
    """Bind what the printed dimensions solve for; whether anything new was bound."""
    new = False
    if len(family_shape) != len(shape):
        return new
    for d, v in zip(family_shape, shape, strict=True):
        text = expr(d)
        if _ATOM.fullmatch(text):
            continue
        defaults = dict(solve(text, int(d), family, path)) if family is not None else None
        for x, value in solve(text, int(v), widths, path):
            default = value if defaults is None else defaults.get(x)
            new = widths.add(x, path, value, default) or new
    return new


def _bind(widths: Widths, family_shape: tuple[int, ...], shape: tuple[int, ...], path: str) -> None:
    if len(family_shape) != len(shape):
        return
    for d, v in zip(family_shape, shape, strict=True):
        text = expr(d)
        if text.isdigit():
            continue
        widths.add(text, path, int(v), int(d))  # a whole expression too: a term of another (see solve)


def raw_names(tree: Block) -> dict[str, set[str]]:
    """Per module (as a pattern), the parameters it holds beside its submodules: tensors next to
    blocks, and blocks of one unnamed tensor (LLaVA-OneVision's ``image_newline``)."""
    out: dict[str, set[str]] = {}
    for path, block in [("", tree), *blocks(tree)]:
        if not any(isinstance(c, Block) for c in block.children):
            continue
        names = {c.name for c in block.children if not isinstance(c, Block)}
        names |= {c.name for c in block.children if _lone(c)}
        if names:
            out[pattern(path)] = names
    return out


def raw_kinds(tree: Block) -> dict[str, list[tuple[frozenset[str], frozenset[str]]]]:
    """Per module place (a pattern): each of the family's modules there as (its submodules'
    names, the parameters it holds beside them)."""
    out: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
    for path, block in [("", tree), *blocks(tree)]:
        subs = frozenset(c.name for c in block.children if isinstance(c, Block) and not _lone(c))
        raw = frozenset(c.name for c in block.children if not isinstance(c, Block) or _lone(c))
        if subs:
            out.setdefault(pattern(path), []).append((subs, raw))
    return out


def _lone(node: Node) -> bool:
    return isinstance(node, Block) and len(node.children) == 1 and node.children[0].name == ""


_TREES: dict[tuple[str, str], Block | None] = {}  # (model type, class) -> its tree at defaults; trees never change


def family_tree(fam: Any, class_name: str) -> Block | None:
    """The family's tree for ``class_name`` at its default config, or None."""
    if fam is None or class_name not in fam.classes:
        return None
    key = (fam.model_type, class_name)
    if key not in _TREES:
        try:
            _TREES[key] = fam.build(class_name, fam.cfg({}, None))[0]
        except Exception:  # only a help for the text: a family that cannot build its defaults must not stop a count
            _TREES[key] = None
    return _TREES[key]
