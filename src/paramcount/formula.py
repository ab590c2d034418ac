"""Counts as formulas: polynomials in the config's symbols, and the closed form of a model.

A dimension is a :class:`~paramcount.ir.Sym` whose expression (``a_kv·h/a``) this module
parses into a :class:`Poly`, a sum of monomials with exact rational coefficients (negative
powers stand for the divisions the families write). No algebra library is needed: products,
sums and division by a monomial are all a parameter count ever uses, and printing in our own
notation (``4h² + 2h·I``) is what the derivations want anyway.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .arch import family
from .arch.config import SYMBOLS
from .errors import ParamcountError
from .ir import Sym

if TYPE_CHECKING:
    from .model import Model

Monomial = tuple[tuple[str, int], ...]  # (symbol, power) pairs sorted by symbol; powers may be negative

WIDTH = "h"  # the width symbol: written first among a quadratic term's factors, last among linear ones
ORDER = ("L", "L_enc", "L_dec", "E", "E_s", "k", "V", "P", "T", "C", "G", "a", "a_kv", "h")
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def symbol_key(name: str) -> tuple[int, str]:
    """The order symbols are written in: layer counts, vocabulary and positions before h."""
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for s, p in b:
        powers[s] = powers.get(s, 0) + p
    return tuple(sorted((s, p) for s, p in powers.items() if p))


@dataclass(frozen=True)
class Poly:
    """A Laurent polynomial: ``terms`` maps monomials to non-zero rational coefficients."""

    terms: tuple[tuple[Monomial, Fraction], ...] = ()

    @staticmethod
    def of(mapping: Mapping[Monomial, Fraction]) -> Poly:
        return Poly(tuple(sorted((m, c) for m, c in mapping.items() if c)))

    @staticmethod
    def const(value: int | Fraction) -> Poly:
        return Poly.of({(): Fraction(value)})

    @staticmethod
    def symbol(name: str) -> Poly:
        return Poly.of({((name, 1),): Fraction(1)})

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms:
            out[m] = out.get(m, Fraction(0)) + c
        return Poly.of(out)

    def __neg__(self) -> Poly:
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Poly) -> Poly:
        return self + -other

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Monomial, Fraction] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = _mono_mul(m1, m2)
                out[m] = out.get(m, Fraction(0)) + c1 * c2
        return Poly.of(out)

    def inverse(self) -> Poly:
        """1/self, defined only for a single monomial (``h/a`` is ``h·a⁻¹``)."""
        if len(self.terms) != 1:
            raise ValueError("division by a sum")
        ((m, c),) = self.terms
        return Poly(((tuple((s, -p) for s, p in m), 1 / c),))

    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for s, _ in m}

    def evaluate(self, values: Mapping[str, int | Fraction]) -> Fraction:
        return sum((c * math.prod(Fraction(values[s]) ** p for s, p in m) for m, c in self.terms), Fraction(0))

    def __str__(self) -> str:
        return render(self)


ZERO = Poly()


def total(polys: Iterable[Poly]) -> Poly:
    out = ZERO
    for p in polys:
        out = out + p
    return out


# ---- parsing a Sym's expression -------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


def _tokens(text: str) -> list[str]:
    out = []
    for number, name, op in _TOKEN.findall(text):
        if number or name or op.strip():
            out.append(number or name or op)
    return out


class _Parser:
    """expr := term (('+'|'-') term)* ; term := atom (('·'|'/') atom)* ; atom := N | name | (expr)."""

    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end")
        self.pos += 1
        return token

    def expr(self) -> Poly:
        out = self.term()
        while self.peek() in ("+", "-"):
            out = out + self.term() if self.take() == "+" else out - self.term()
        return out

    def term(self) -> Poly:
        out = self.atom()
        while self.peek() in ("·", "*", "/"):
            out = out * self.atom() if self.take() != "/" else out * self.atom().inverse()
        return out

    def atom(self) -> Poly:
        token = self.take()
        if token == "(":
            inner = self.expr()
            if self.take() != ")":
                raise ValueError("unbalanced parentheses")
            return inner
        if token.isascii() and token.isdigit():  # "²".isdigit() is true; int("²") raises
            return Poly.const(int(token))
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
            return Poly.symbol(token)
        raise ValueError(f"unexpected {token!r}")


def parse(text: str) -> Poly:
    """The polynomial an expression like ``a·(d_nope + d_rope)`` stands for."""
    p = _Parser(text)
    out = p.expr()
    if p.peek() is not None:
        raise ValueError(f"unexpected {p.peek()!r}")
    return out


def expression(dim: int) -> str:
    return dim.expr if isinstance(dim, Sym) else str(int(dim))


# ---- the values of the symbols --------------------------------------------------------------


def _fields(symbol: str) -> list[str]:
    """The config fields a symbol may stand for (a bare field name stands for itself)."""
    return [f for f, s in SYMBOLS.items() if s == symbol] or [symbol]


def config_value(model: Model, symbol: str) -> tuple[str, int] | None:
    """(field, value) of ``symbol`` in the model's config, defaults included, or None."""
    try:
        cfg = family(model.model_type).cfg(model.config, model.source)
    except ParamcountError:
        return None
    for name in _fields(symbol):
        field, value = cfg.lookup(name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return field, value
    return None


class Symbols:
    """The value of every symbol a model's dimensions use, and the field it comes from.

    A dimension whose expression does not reproduce its own value (a floor division that is
    not exact, a symbol the config cannot give) becomes an opaque symbol, so that every
    formula still evaluates to the exact count."""

    def __init__(self, model: Model):
        self.model = model
        self.values: dict[str, int] = {}
        self.fields: dict[str, str] = {}
        self._cache: dict[tuple[str, int], Poly] = {}

    def learn(self, dims: Iterable[int]) -> None:
        """Record the plain symbols (``h``, ``V``) among ``dims`` with their values."""
        for d in dims:
            text = expression(d)
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
                self.values.setdefault(text, int(d))

    def poly(self, dim: int) -> Poly:
        key = (expression(dim), int(dim))
        if key not in self._cache:
            self._cache[key] = self._poly(*key)
        return self._cache[key]

    def _poly(self, text: str, value: int) -> Poly:
        try:
            p = parse(text)
            # sorted: symbols enter self.values (the legend's order) the same way whatever the hash seed
            if all(self.resolve(s) for s in sorted(p.symbols())) and p.evaluate(self.values) == value:
                return p
        except (ValueError, ZeroDivisionError):
            pass
        name = f"[{text}]" if self.values.get(f"[{text}]", value) == value else f"[{text}={value}]"
        self.values[name] = value
        return Poly.symbol(name)

    def resolve(self, symbol: str) -> bool:
        if symbol not in self.values:
            found = config_value(self.model, symbol)
            if found is None:
                return False
            self.fields[symbol], self.values[symbol] = found[0], found[1]
        return True

    def field(self, symbol: str) -> str | None:
        """The config field a symbol was read from (for a legend)."""
        if symbol not in self.fields and symbol in self.values and not symbol.startswith("["):
            found = config_value(self.model, symbol)
            if found is not None and found[1] == self.values[symbol]:
                self.fields[symbol] = found[0]
        return self.fields.get(symbol)

    def product(self, dims: Sequence[int]) -> Poly:
        out = Poly.const(1)
        for d in dims:
            out = out * self.poly(d)
        return out


# ---- printing --------------------------------------------------------------------------------


def _degree(m: Monomial) -> int:
    return sum(p for _, p in m)


def _term_key(item: tuple[Monomial, Fraction]) -> tuple:
    """Higher degree first; within a quadratic degree the higher power of h first (4h² then
    2h·I); within a linear one h and constants close the run (I + 9h, P + T + 2)."""
    m, _ = item
    deg, width = _degree(m), dict(m).get(WIDTH, 0)
    return (-deg, -width if deg >= 2 else width, [(symbol_key(s), -p) for s, p in m])


def _factor(name: str, power: int) -> str:
    return name + (str(power).translate(SUPERSCRIPT) if power != 1 else "")


def monomial(m: Monomial, coef: Fraction) -> str:
    """``4h²``, ``2h·I``, ``a_kv·h²/a``, ``3h/2``: the coefficient written against the first factor."""
    ordered = sorted(m, key=lambda sp: symbol_key(sp[0]))
    top = "·".join(_factor(s, p) for s, p in ordered if p > 0)
    bottom = [_factor(s, -p) for s, p in ordered if p < 0]
    num, den = abs(coef.numerator), coef.denominator
    text = (str(num) if num != 1 or not top else "") + top
    if den != 1:
        bottom.insert(0, str(den))
    if bottom:
        text += "/" + ("·".join(bottom) if len(bottom) == 1 else "(" + "·".join(bottom) + ")")
    return text


def _join(parts: Sequence[tuple[bool, str]]) -> str:
    """Signed parts (negative?, text) as ``a + b - c``."""
    out = ""
    for i, (negative, text) in enumerate(parts):
        if i == 0:
            out = ("-" if negative else "") + text
        else:
            out += (" - " if negative else " + ") + text
    return out or "0"


def render(p: Poly) -> str:
    """A polynomial in our notation, its terms in the order a person writes them."""
    return _join([(c < 0, monomial(m, c)) for m, c in sorted(p.terms, key=_term_key)])


def render_grouped(p: Poly) -> str:
    """Like :func:`render`, but the terms linear in h with a small cofactor are collected
    (``V·h + (P + T + 2)·h``); vocabulary terms stay apart, as a reader looks for them."""
    linear = [(m, c) for m, c in p.terms if _collectable(m)]
    if len(linear) < 2:
        return render(p)
    rest = [t for t in p.terms if t not in linear]
    cofactor = Poly.of({tuple((s, q) for s, q in m if s != WIDTH): c for m, c in linear})
    key_of = min(linear, key=_term_key)
    items = sorted([*rest, key_of], key=_term_key)
    parts = [(False, f"({render(cofactor)})·{WIDTH}") if t == key_of else (t[1] < 0, monomial(*t)) for t in items]
    return _join(parts)


def _collectable(m: Monomial) -> bool:
    powers = dict(m)
    return powers.get(WIDTH) == 1 and _degree(m) <= 2 and "V" not in powers and all(p > 0 for p in powers.values())


def times(repeat: Poly, body: Poly) -> str:
    """``L·(4h² + …)``: a layer count times what one layer holds."""
    left = render(repeat)
    left = f"({left})" if len(repeat.terms) > 1 else left
    if repeat == Poly.const(1):
        return render(body)
    right = render(body)
    return f"{left}·({right})" if len(body.terms) > 1 else f"{left}·{right}"


# ---- the closed form of a model ---------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One section's share of the closed form: ``repeat × body`` (repeat 1 outside layers)."""

    title: str
    repeat: Poly
    body: Poly

    @property
    def poly(self) -> Poly:
        return self.repeat * self.body

    @property
    def text(self) -> str:
        if self.repeat == Poly.const(1):
            return render_grouped(self.body)
        return times(self.repeat, self.body)


@dataclass(frozen=True)
class Approximation:
    name: str  # the rule of thumb, written as people write it
    value: int
    exact: int

    @property
    def error(self) -> float:
        """Relative error of the approximation against the exact count."""
        return (self.value - self.exact) / self.exact if self.exact else 0.0


@dataclass(frozen=True)
class ClosedForm:
    """The count as a formula in the config's symbols, and the usual rules of thumb."""

    parts: tuple[Part, ...]
    values: Mapping[str, int]
    fields: Mapping[str, str | None]
    exact: int
    approximations: tuple[Approximation, ...]
    with_4h: tuple[tuple[str, str], ...] = ()  # (section title, its layers with I written 4h)

    @property
    def poly(self) -> Poly:
        return total(p.poly for p in self.parts)

    @property
    def text(self) -> str:
        """The closed form, section by section (``V·h + (P + T + 2)·h + L·(…) + h² + h``)."""
        texts = [p.text for p in self.parts if p.body.terms]
        return " + ".join(texts).replace("+ -", "- ") or "0"

    @property
    def expanded(self) -> str:
        """All sections merged into one polynomial."""
        return render(self.poly)

    def evaluate(self, values: Mapping[str, Any] | None = None) -> int:
        """The closed form at the config's values (or others: ``{"L": 24}``)."""
        value = self.poly.evaluate({**self.values, **(values or {})})
        return int(value) if value.denominator == 1 else value  # type: ignore[return-value]


def approximations(values: Mapping[str, int], layers: int, exact: int) -> tuple[Approximation, ...]:
    """12·L·h² (4h² attention + 8h² feed-forward per layer) and the same plus V·h."""
    h, v = values.get(WIDTH), values.get("V")
    if not h or not layers:
        return ()
    core = 12 * layers * h * h
    out = [Approximation("12·L·h²", core, exact)]
    if v:
        out.append(Approximation("12·L·h² + V·h", core + v * h, exact))
    return tuple(out)


def four_h(title: str, part: Part, values: Mapping[str, int]) -> tuple[str, str] | None:
    """The layers written with I = 4h, when the config's I is 4h (``L·(12h² + 13h)`` for BERT)."""
    if "I" not in part.body.symbols() or values.get("I") != 4 * values.get(WIDTH, 0):
        return None
    body = substitute(part.body, {"I": Poly.of({((WIDTH, 1),): Fraction(4)})})
    return title, times(part.repeat, body)


def substitute(p: Poly, subs: Mapping[str, Poly]) -> Poly:
    """``p`` with symbols replaced by polynomials (positive powers only for replaced symbols)."""
    out = ZERO
    for m, c in p.terms:
        term = Poly.const(c)
        for s, power in m:
            base = subs.get(s, Poly.symbol(s))
            factor = base if power > 0 else base.inverse()
            for _ in range(abs(power)):
                term = term * factor
        out = out + term
    return out
