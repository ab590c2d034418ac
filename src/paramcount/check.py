"""Checking a hand-computed answer: which common slips explain the difference exactly.

The count is rebuilt term by term (one term per tensor, in the config's symbols) for the
model's class and for its backbone; a slip changes the terms the way a person does on paper
(leaves the pooler out, counts a tied head twice, takes the feed-forward as 4h, …). Every
combination of up to three slips is evaluated exactly, so an explanation is an identity,
never a guess: ``108,891,648 = BertModel without the pooler (590,592)``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from . import count
from .derive import Section, split, symbols
from .errors import ParamcountError, bounded_exponent, bounded_number
from .formula import Poly, Symbols
from .ir import Block
from .model import Model
from .textbook import Textbook, flops, textbook

MAX_SLIPS = 3

# ---- the answer ------------------------------------------------------------------------------

SCALES = {
    "k": 10**3,
    "thousand": 10**3,
    "m": 10**6,
    "million": 10**6,
    "mn": 10**6,
    "b": 10**9,
    "g": 10**9,
    "bn": 10**9,
    "billion": 10**9,
    "t": 10**12,
    "trillion": 10**12,
    "万": 10**4,
    "亿": 10**8,
}
_ANSWER = re.compile(r"(\d+(?:\.\d+)?)(?:e([+-]?\d+))?([a-z万亿]*)")


@dataclass(frozen=True)
class Answer:
    """A user's number: ``value`` ± ``tolerance`` (half a unit of its last digit when it was
    rounded, like ``110M`` or ``1.3e9``; zero for a whole number like ``108,891,648``)."""

    text: str
    value: Fraction
    tolerance: Fraction = Fraction(0)

    @property
    def rounded(self) -> bool:
        return self.tolerance > 0

    def matches(self, n: int) -> bool:
        return abs(n - self.value) <= self.tolerance

    def truncates(self, n: int) -> bool:
        """Whether ``n`` cut off (not rounded) at the answer's last digit is the answer: 3.3B
        for 3,353,032,704."""
        return self.rounded and self.value <= n < self.value + 2 * self.tolerance


def parse_answer(text: str) -> Answer:
    """``108891648``, ``108,891,648``, ``110M``, ``1.3B``, ``1.3e9``, ``1.1亿``."""
    raw = str(text)
    clean = re.sub(r"[\s,_'’]|(个)?参数$|params?$|parameters?$", "", raw.strip().lower())
    m = _ANSWER.fullmatch(clean)
    if not m or (m.group(3) and m.group(3) not in SCALES):
        raise ParamcountError(
            f"cannot read {raw!r} as a parameter count (try 108891648, 108,891,648, 110M, 1.3B or 1.3e9)",
            field="ANSWER",
        )
    digits, exp, suffix = m.groups()
    bounded_number(digits, "ANSWER", "an answer")
    scale = Fraction(SCALES.get(suffix, 1)) * Fraction(10) ** bounded_exponent(exp, "ANSWER")
    value = Fraction(digits) * scale
    decimals = len(digits.partition(".")[2])
    zeros = 0 if decimals else len(digits) - len(digits.rstrip("0"))
    if suffix or exp or decimals or zeros >= 3:  # 110M, 1.3e9, 108,000,000: rounded at the last digit
        return Answer(raw, value, Fraction(10) ** (zeros - decimals) * scale / 2)
    return Answer(raw, value)


# ---- terms and slips -------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One tensor of the count, in symbols (repeats included), with what a slip looks at."""

    poly: Poly
    section: str  # the section's kind: embeddings, layers, norms, pooler, output_head, …
    kind: str  # the line's component kind
    role: str  # the line's role: token_embedding, ffn_gate, rmsnorm, …
    name: str  # the tensor's own name: weight, bias, …
    tied: bool
    ratio: Fraction = Fraction(1)  # k/n for routed experts
    active: tuple[int, int] | None = None  # (k, n) as configured (the ratio is reduced: 2/8 is 1/4)


def terms(sections: Sequence[Section], syms: Symbols) -> list[Term]:
    out = []
    for s in sections:
        repeat = syms.poly(s.repeat) if s.repeat is not None else Poly.const(1)
        for line in s.lines:
            each = syms.product(line.repeat)
            ratio = Fraction(*line.active) if line.active else Fraction(1)
            for p in line.params:
                poly = repeat * each * syms.product(p.shape)
                active = tuple(int(x) for x in line.active) if line.active else None
                out.append(Term(poly, s.kind, line.kind, line.role, p.name, bool(p.tied_to), ratio, active))
    return out


Weight = Callable[[Term, Fraction], Fraction]


@dataclass(frozen=True)
class Slip:
    """A common mistake: it reweighs terms (0 leaves one out, 2 counts it twice), overrides
    symbols (I = 4h) or adds a term (P·h for positions that are not parameters)."""

    key: str
    group: str  # at most one slip of a group in an explanation
    weight: Weight | None = None
    overrides: Mapping[str, Poly] = field(default_factory=dict)
    extra: Poly | None = None
    info: Mapping[str, int] = field(default_factory=dict)


def drop(pred: Callable[[Term], bool]) -> Weight:
    return lambda t, w: Fraction(0) if pred(t) else w


def is_norm(t: Term) -> bool:
    return t.kind == "norms"


def slips(ts: Sequence[Term], syms: Symbols, active: bool) -> list[Slip]:
    """Every slip that could apply to these terms, most common first."""
    out = [
        Slip("pooler", "pooler", drop(lambda t: t.section == "pooler")),
        Slip("tied_head_twice", "ties", lambda t, w: Fraction(1) if t.tied and t.section == "output_head" else w),
        Slip("biases", "biases", drop(lambda t: t.name == "bias" and not is_norm(t))),
        Slip("norms", "norms", drop(is_norm)),
        Slip("embedding_norm", "norms", drop(lambda t: is_norm(t) and t.section == "embeddings")),
        Slip("final_norm", "norms", drop(lambda t: is_norm(t) and t.section == "norms")),
        Slip("layer_norms", "norms", drop(lambda t: is_norm(t) and t.section == "layers")),
        Slip("rms_as_layernorm", "norms", lambda t, w: 2 * w if t.role == "rmsnorm" else w),
        Slip("segment_omitted", "segment", drop(lambda t: t.role == "segment_embedding")),
        Slip("position_omitted", "position", drop(lambda t: t.role == "position_embedding")),
        Slip(
            "tied_embeddings_twice", "ties2", lambda t, w: Fraction(1) if t.tied and t.section != "output_head" else w
        ),
        Slip("gate_omitted", "gate", drop(lambda t: t.role == "ffn_gate")),
        Slip("router", "router", drop(lambda t: t.kind == "router")),
        *_experts(ts, active),
        *_one_head(ts, syms),
        *_symbol_slips(ts, syms),
        *_added(ts, syms),
    ]
    return out


def _experts(ts: Sequence[Term], active: bool) -> list[Slip]:
    routed = [t for t in ts if t.ratio != 1]
    if not routed:
        return []
    k, n = routed[0].active or (routed[0].ratio.numerator, routed[0].ratio.denominator)
    if active:  # the base counts k of n; the slip counts all n
        return [Slip("experts_all", "experts", lambda t, w: w / t.ratio, info={"k": k, "n": n})]
    # "8 × 7B": the model taken as n dense models, each with one expert per layer, so every
    # part but the experts is counted n times.
    as_models = Slip("experts_as_models", "experts", lambda t, w: w * n if t.ratio == 1 else w, info={"n": n})
    return [Slip("experts_active", "experts", lambda t, w: w * t.ratio, info={"k": k, "n": n}), as_models]


def _one_head(ts: Sequence[Term], syms: Symbols) -> list[Slip]:
    """The per-head form (seed 001: ``(768·64 + 64)·3`` for one head's Q, K and V) not multiplied
    by the heads: each layer's Q, K and V (a fused QKV too, when K and V have as many heads) over
    their heads."""
    a = syms.values["a"] if syms.resolve("a") else None
    a_kv = syms.values["a_kv"] if syms.resolve("a_kv") else a
    if not a or not a_kv:
        return []
    heads = {"q": a, "k": a_kv, "v": a_kv, **({"qkv": a} if a_kv == a else {})}
    if not any(t.section == "layers" and t.role in heads for t in ts):
        return []
    weight = lambda t, w: w / heads[t.role] if t.section == "layers" and t.role in heads else w  # noqa: E731
    return [Slip("one_head", "heads", weight, info={"a": a})]


def _symbol_slips(ts: Sequence[Term], syms: Symbols) -> list[Slip]:
    """I taken as 4h; a_kv taken as a."""
    v, out = syms.values, []
    h = Poly.symbol("h")
    ffn = sorted({s for t in ts if t.kind == "feed_forward" for s in t.poly.symbols() if re.fullmatch(r"I(_\w+)?", s)})
    if "h" in v and any(v[s] != 4 * v["h"] for s in ffn):
        four = Poly.const(4) * h
        info = {"four_h": 4 * v["h"], **{s: v[s] for s in ffn}}
        out.append(Slip("ffn_4h", "ffn", overrides={s: four for s in ffn}, info=info))
    if "a_kv" in v and "a" in v and v["a_kv"] != v["a"] and any("a_kv" in t.poly.symbols() for t in ts):
        out.append(Slip("kv_heads", "kv", overrides={"a_kv": Poly.symbol("a")}, info={"a": v["a"], "a_kv": v["a_kv"]}))
    return out


def _added(ts: Sequence[Term], syms: Symbols) -> list[Slip]:
    """Tables a person adds that the model does not have: positions (P·h) and segments (2·h)."""
    roles = {t.role for t in ts}
    if "token_embedding" not in roles or "h" not in syms.values:
        return []
    h, out = Poly.symbol("h"), []
    if "position_embedding" not in roles and syms.resolve("P"):
        out.append(Slip("positions_counted", "position", extra=Poly.symbol("P") * h, info={"P": syms.values["P"]}))
    if "segment_embedding" not in roles:
        out.append(Slip("segment_added", "segment", extra=Poly.const(2) * h))
    return out


# ---- evaluating combinations -----------------------------------------------------------------


@dataclass
class Base:
    """A class as counted (the model's, or its backbone), ready to be re-counted with slips."""

    class_name: str
    total: int
    terms: list[Term]
    syms: Symbols
    active: bool
    slips: list[Slip] = field(default_factory=list)
    _cache: dict[tuple, list[Fraction]] = field(default_factory=dict)

    def values(self, combo: Sequence[Slip]) -> tuple[dict[str, int], list[Fraction]]:
        """The symbols' values under the combo's overrides, and each term's value under them
        (a handful of override sets serve every combination, so they are kept)."""
        values = dict(self.syms.values)
        for s in combo:
            for name, poly in s.overrides.items():
                values[name] = int(poly.evaluate(values))
        key = tuple(sorted(values.items()))
        if key not in self._cache:
            self._cache[key] = [t.poly.evaluate(values) for t in self.terms]
        return values, self._cache[key]

    def value(self, combo: Sequence[Slip]) -> int:
        values, each = self.values(combo)
        weights = [s for s in sorted(combo, key=lambda s: s.key in DROPS) if s.weight]
        out = Fraction(0)
        for t, v in zip(self.terms, each, strict=True):
            w = Fraction(0) if t.tied else (t.ratio if self.active else Fraction(1))
            for s in weights:
                w = s.weight(t, w)
            out += w * v
        out += sum((s.extra.evaluate(values) for s in combo if s.extra), Fraction(0))
        return round(out)


DROPS = {"pooler", "biases", "norms", "embedding_norm", "final_norm", "layer_norms", "segment_omitted"}
DROPS |= {"position_omitted", "gate_omitted", "router"}


def base(model: Model, tree: Block, class_name: str, active: bool) -> Base:
    sections = split(tree)
    syms = symbols(model, sections)
    ts = terms(sections, syms)
    b = Base(class_name, 0, ts, syms, active)
    total = b.total = b.value(())
    if not active and total != tree.count:
        raise AssertionError(f"terms of {class_name} sum to {total:,}, the count is {tree.count:,}")
    b.slips = [s for s in slips(ts, syms, active) if b.value([s]) != total]
    return b


@dataclass(frozen=True)
class Step:
    """One slip of an explanation and what it changes (in the order applied)."""

    key: str
    change: int
    info: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Explanation:
    class_name: str
    base_total: int
    steps: tuple[Step, ...]
    value: int
    backbone: bool = False

    def remaining(self, answer: Answer) -> Fraction:
        return answer.value - self.value


def explain(b: Base, combo: Sequence[Slip], backbone: bool) -> Explanation:
    """The combination as steps, each with what it changes on top of the ones before."""
    steps, before = [], b.total
    for i, slip in enumerate(combo):
        after = b.value(combo[: i + 1])
        steps.append(Step(slip.key, after - before, slip.info))
        before = after
    return Explanation(b.class_name, b.total, tuple(steps), before, backbone)


def combos(b: Base) -> Iterator[tuple[Slip, ...]]:
    for n in range(MAX_SLIPS + 1):
        for combo in itertools.combinations(b.slips, n):
            if len({s.group for s in combo}) == n:
                yield combo


# ---- the conventions publishers count by ------------------------------------------------------

LOOKUPS = ("token_embedding", "position_embedding", "segment_embedding")  # tables read by index
UNEMBEDDING = ("lm_head", "output_bias")  # the output head's vocabulary matrix and bias


@dataclass(frozen=True)
class Convention:
    """A figure a model card may give: all parameters or those active per token, with or
    without the embedding lookups (token, position and segment tables) and the unembedding
    (the output head over the vocabulary). A tied table is both: it stays in a figure that
    keeps either of its uses. ``key``: ``all``, ``no_lookup``, ``no_unembedding`` or
    ``non_embedding``, ``active_`` before it for the active ones."""

    key: str
    value: int
    lookup: int  # parameters left out as embedding lookups
    unembedding: int  # parameters left out as the unembedding
    shared: int = 0  # a tied table kept for its other use (as the unembedding, or as the lookup)


def conventions(model: Model) -> tuple[Convention, ...]:
    """Each convention's figure for the model's class (the active ones only for an MoE); one
    that leaves nothing out (a tied table kept for its other use, no position table) is the
    count itself and is not listed."""
    lookup, unembedding, shared = vocabulary_tables(model)
    figures = (("", model.total), ("active_", model.active_total)) if model.is_moe else (("", model.total),)
    out = []
    for prefix, n in figures:
        out += [
            Convention(f"{prefix}all", n, 0, 0),
            Convention(f"{prefix}no_lookup", n - lookup + shared, lookup - shared, 0, shared),
            Convention(f"{prefix}no_unembedding", n - unembedding, 0, unembedding, shared),
            Convention(f"{prefix}non_embedding", n - lookup - unembedding, lookup, unembedding),
        ]
    return tuple(c for c in out if c.key.endswith("all") or c.lookup + c.unembedding)


def vocabulary_tables(model: Model) -> tuple[int, int, int]:
    """(embedding lookups, the unembedding, the part of the lookups a tied head reuses) of the
    class: lookup tables are never routed, so these hold for the active count as well."""
    sections = split(model.tree)
    syms = symbols(model, sections)
    found = [(t, int(t.poly.evaluate(syms.values))) for t in terms(sections, syms)]
    own = [(t, v) for t, v in found if not t.tied]
    lookup = sum(v for t, v in own if t.role in LOOKUPS)
    head = sum(v for t, v in own if t.section == "output_head" and t.role in UNEMBEDDING)
    tied = any(t.tied and t.role == "lm_head" and t.name == "weight" for t, _ in found)
    return lookup, head, sum(v for t, v in own if t.role == "token_embedding") if tied else 0


# ---- the check -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """``explanations``: the simplest slip combinations that give the answer (best first);
    ``nearest`` when none does. ``exact`` means the answer is a class's true count;
    ``conventions`` are the figures model cards give (:class:`Convention`), ``matched`` those
    the answer is (within its rounding)."""

    name: str
    answer: Answer
    class_name: str
    total: int
    backbone_class: str
    backbone_total: int
    active: bool
    explanations: tuple[Explanation, ...]
    nearest: tuple[Explanation, ...] = ()
    conventions: tuple[Convention, ...] = ()
    textbook: tuple[Textbook, ...] = ()  # the counts taught (12·L·h², the layers alone, …)
    flops: tuple[Textbook, ...] = ()  # 2·N and 6·N: named when the answer is one

    @property
    def taught(self) -> tuple[Textbook, ...]:
        """The taught counts (then the FLOPs figures) the answer is, within its rounding."""
        return tuple(t for t in (*self.textbook, *self.flops) if self.answer.matches(t.value))

    @property
    def exact(self) -> bool:
        return bool(self.explanations) and not self.explanations[0].steps

    @property
    def matched(self) -> tuple[Convention, ...]:
        return tuple(c for c in self.conventions if self.answer.matches(c.value))

    @property
    def accepted(self) -> bool:
        """The answer is a count: the class's or its backbone's, a convention's figure, or a
        count taught (12·L·h², the layers alone): a FLOPs figure is not."""
        return self.exact or bool(self.matched) or any(t.parameters for t in self.taught)

    @property
    def by_convention(self) -> bool:
        """Said as a convention rather than as the count: it is one, and not the class's own
        count (a backbone that equals it is the convention's coincidence)."""
        return bool(self.matched) and not (self.exact and not self.explanations[0].backbone)


def bases(model: Model, active: bool) -> list[tuple[Base, bool]]:
    out = [(base(model, model.tree, model.class_name, active), False)]
    if model.backbone_class != model.class_name:
        out.append((base(model, model.backbone, model.backbone_class, active), True))
    return out


ORDER = (
    "pooler",
    "tied_head_twice",
    "biases",
    "norms",
    "embedding_norm",
    "final_norm",
    "layer_norms",
    "rms_as_layernorm",
    "segment_omitted",
    "position_omitted",
    "tied_embeddings_twice",
    "gate_omitted",
    "router",
    "experts_active",
    "experts_all",
    "experts_as_models",
    "one_head",
    "ffn_4h",
    "kv_heads",
    "positions_counted",
    "segment_added",
)


Scored = tuple[Base, bool, tuple[Slip, ...], int]  # base, is it the backbone, slips, their value


def _rank(answer: Answer):
    def key(c: Scored) -> tuple:
        _, backbone, combo, value = c
        return (len(combo), abs(answer.value - value), backbone, [ORDER.index(s.key) for s in combo])

    return key


def check(model: Model, answer: str | int | Answer, active: bool = False) -> CheckResult:
    """Explain ``answer`` as the model's count (its class or backbone) with the fewest slips.

    ``active`` checks against the parameters active per token (routed experts) instead. A model
    read from files is checked on its family's tree where it has one (:func:`paramcount.family.resolve`)."""
    from .family import resolve

    model.require_native("checking an answer")
    model = resolve(model).model
    ans = answer if isinstance(answer, Answer) else parse_answer(str(answer))
    scored = [(b, bb, combo, b.value(combo)) for b, bb in bases(model, active) for combo in combos(b)]
    hits = sorted((c for c in scored if ans.matches(c[3])), key=_rank(ans))
    fewest = [c for c in hits if len(c[2]) == len(hits[0][2])][:4]
    near = [] if hits else _nearest([c for c in scored if len(c[2]) <= 1], ans)
    taught = () if active else textbook(model)  # rules for all parameters, not those active per token
    return CheckResult(
        name=model.name,
        answer=ans,
        class_name=model.class_name,
        total=model.active_total if active else model.total,
        backbone_class=model.backbone_class,
        backbone_total=count.active(model.backbone) if active else model.backbone_total,
        active=active,
        explanations=tuple(explain(b, combo, bb) for b, bb, combo, _ in fewest),
        nearest=tuple(explain(b, combo, bb) for b, bb, combo, _ in near),
        conventions=conventions(model),
        textbook=taught,
        flops=() if active else flops(model, taught),
    )


def _nearest(scored: Sequence[Scored], answer: Answer, n: int = 3) -> list[Scored]:
    """The closest values, one explanation each, fewest slips first among equals."""
    out, seen = [], set()
    for c in sorted(scored, key=lambda c: (abs(answer.value - c[3]), len(c[2]))):
        if c[3] not in seen:
            seen.add(c[3])
            out.append(c)
    return out[:n]
