"""The counts that textbooks, courses and articles teach, computed from the model's own tree.

People check a model's size with a rule of thumb or a part of it, and get a figure that is right
for what they counted: ``12·L·h²`` (4h² for attention and 8h² for the feed-forward per layer, as
the seed article 004 and nanoGPT's ``transformer_sizing.ipynb`` write it; Kaplan et al. 2020,
"Scaling Laws for Neural Language Models", §2.1: the non-embedding N ≈ 2·d_model·n_layer·(2·d_attn
+ d_ff) = 12·n_layer·d_model²), that plus the vocabulary table (``V·h``, as GPT-3's 175B is
checked), the encoder layers alone (seed 001's 85,054,464 for bert-base-uncased), the embeddings
alone (its 23,837,184), the layers' weight matrices without biases and norms, and the
non-embedding count with the position table kept. Each is evaluated from the sections of the
model's tree (:func:`paramcount.derive.split`) and its config symbols, never typed in; each says
its formula and how far it is from the exact count.

FLOPs conventions (2·N forward and 6·N training FLOPs per token, Kaplan et al. §2.1) are not
parameter counts, but a figure that is one of them is named as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .derive import Section, split, symbols
from .formula import Poly, Symbols, render, times, total
from .model import Model


@dataclass(frozen=True)
class Textbook:
    """One taught count: ``formula`` in the config's symbols, ``working`` with their values,
    ``value`` and the exact count it is set against (``exact``). ``parameters``: False for a
    FLOPs figure (2·N, 6·N), which names what an answer is without being a count."""

    key: str
    formula: str
    working: str
    value: int
    exact: int
    parameters: bool = True

    @property
    def difference(self) -> int:
        """The taught figure less the exact count (negative: it leaves parameters out)."""
        return self.value - self.exact


def textbook(model: Model) -> tuple[Textbook, ...]:
    """Every taught count that applies to ``model``'s class, each value once (the first name
    kept: the simpler rule), none that is the exact count itself."""
    sections = split(model.tree)
    syms = symbols(model, sections)
    out: list[Textbook] = []
    for t in (*_rules(model, sections, syms), *_parts(model, sections, syms)):
        if t.value != model.total and t.value > 0 and all(t.value != o.value for o in out):
            out.append(t)
    return tuple(out)


def flops(model: Model, counts: Sequence[Textbook]) -> tuple[Textbook, ...]:
    """2·N and 6·N (forward and training FLOPs per token) for N the exact count and each taught
    count: what an answer is when it is a FLOPs figure rather than parameters."""
    bases = [("N", f"{model.total:,}", model.total), *((t.formula, t.working, t.value) for t in counts)]
    out = []
    for k, what in ((2, "forward"), (6, "training")):
        for formula, working, n in bases:
            said = f"{k}·N, N = {formula}" if formula != "N" else f"{k}·N"
            out.append(Textbook(f"flops_{k}n_{what}", said, f"{k} · {working}", k * n, model.total, False))
    return tuple(out)


def _rules(model: Model, sections: Sequence[Section], syms: Symbols) -> list[Textbook]:
    """12·L·h², with the vocabulary table, and with the position table."""
    h, v, layers = syms.values.get("h"), syms.values.get("V"), _layers(sections)
    if not h or not layers:
        return []
    core = 12 * layers * h * h
    out = [Textbook("12Lh2", "12·L·h²", f"12 · {layers:,} · {h:,}²", core, model.total)]
    if v:
        out.append(Textbook("12Lh2_Vh", "12·L·h² + V·h", f"12 · {layers:,} · {h:,}² + {v:,} · {h:,}", core + v * h,
                            model.total))  # fmt: skip
    p = _table(sections, "position_embedding")
    if v and p:
        rows = p // h
        working = f"12 · {layers:,} · {h:,}² + ({v:,} + {rows:,}) · {h:,}"
        out.append(Textbook("12Lh2_VPh", "12·L·h² + (V + P)·h", working, core + (v + rows) * h, model.total))
    return out


def _parts(model: Model, sections: Sequence[Section], syms: Symbols) -> list[Textbook]:
    """Parts of the exact count: the non-embedding count (Kaplan's, and with the position table
    kept), the layers' weight matrices, the layers, the embeddings."""
    token, position = _table(sections, "token_embedding"), _table(sections, "position_embedding")
    segment, head = _table(sections, "segment_embedding"), _head(sections, "lm_head")
    said = [("V·h", token), ("P·h", position), ("T·h", segment), ("V·h", head), ("V", _head(sections, "output_bias"))]
    out = [_without("kaplan_non_embedding", model, said)]
    if position:
        out.append(_without("non_embedding_with_positions", model, [said[0], *said[3:]]))
    out = [t for t in out if t is not None]
    layers = [s for s in sections if s.kind == "layers"]
    if layers:
        out.append(_of("layer_matrices", _sum(syms, layers, _matrix), syms, model))
        out.append(_of("layers", _sum(syms, layers, lambda line, p: True), syms, model))
    embeddings = [s for s in sections if s.kind == "embeddings"]
    if embeddings:
        out.append(_of("embeddings", _sum(syms, embeddings, lambda line, p: True), syms, model))
    return out


def _without(key: str, model: Model, tables: Sequence[tuple[str, int]]) -> Textbook | None:
    """The count less some vocabulary tables: ``N - (V·h + P·h)`` (an untied head's V·h again,
    its bias V)."""
    held = [(f, v) for f, v in tables if v]
    if not held:  # no vocabulary table: nothing to leave out
        return None
    said = list(dict.fromkeys(f for f, _ in held))  # a tied table is one V·h, an untied head 2V·h
    said = [f"2{f}" if sum(g == f for g, _ in held) == 2 else f for f in said]
    formula = f"N - ({' + '.join(said)})" if len(said) > 1 else f"N - {said[0]}"
    working = f"{model.total:,} - " + " - ".join(f"{v:,}" for _, v in held)
    return Textbook(key, formula, working, model.total - sum(v for _, v in held), model.total)


def _layers(sections: Sequence[Section]) -> int:
    return sum(s.copies for s in sections if s.kind == "layers")


def _matrix(line: Any, p: Any) -> bool:
    """A weight matrix of a layer: not a bias, not a norm, not a 1-D tensor."""
    return line.kind != "norms" and p.name != "bias" and len(p.shape) >= 2


def _table(sections: Sequence[Section], role: str) -> int:
    """The parameters of the lookup tables of ``role`` (their own, a tie holds none)."""
    return sum(line.value for s in sections for line in s.lines if line.role == role and s.kind == "embeddings")


def _head(sections: Sequence[Section], role: str) -> int:
    """The output head's own vocabulary matrix (``lm_head``) or bias (``output_bias``)."""
    return sum(line.value for s in sections if s.kind == "output_head" for line in s.lines if line.role == role)


def _sum(syms: Symbols, sections: Sequence[Section], keep) -> list[tuple[Poly, Poly]]:
    """(repeat, what one copy holds) per section, of the parameters ``keep(line, param)`` picks."""
    out = []
    for s in sections:
        repeat = syms.poly(s.repeat) if s.repeat is not None else Poly.const(1)
        body = total(
            syms.product(line.repeat) * syms.product(p.shape)
            for line in s.lines
            for p in line.params
            if not p.tied_to and keep(line, p)
        )
        if body.terms:
            out.append((repeat, body))
    return out


def _of(key: str, parts: list[tuple[Poly, Poly]], syms: Symbols, model: Model) -> Textbook:
    """A part of the tree as a taught count: its formula section by section (layers as
    ``L·(…)``), the sections' figures added, and its value."""
    merged: dict[Poly, Poly] = {}
    for repeat, body in parts:  # an encoder's and a decoder's stacks of the same kind stay apart
        merged[repeat] = merged[repeat] + body if repeat in merged else body
    formula = " + ".join(times(r, b) if r != Poly.const(1) else render(b) for r, b in merged.items())
    said, value = [], 0
    for r, b in parts:
        copies, each = int(r.evaluate(syms.values)), int(b.evaluate(syms.values))
        said.append(f"{copies:,} × {each:,}" if r != Poly.const(1) else f"{each:,}")
        value += copies * each
    return Textbook(key, formula, " + ".join(said), value, model.total)
