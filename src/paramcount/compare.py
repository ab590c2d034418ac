"""Models side by side: parameters per component, totals, depth and the config's symbols."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .derive import split, symbols
from .errors import ParamcountError
from .formula import symbol_key
from .ir import KINDS
from .model import Model


@dataclass(frozen=True)
class Comparison:
    """One column per model. ``components[i][kind]`` is absent when model i has none of it;
    ``symbols`` maps each symbol any model uses to its value per model (None where unused)."""

    names: tuple[str, ...]
    classes: tuple[str, ...]
    kinds: tuple[str, ...]
    components: tuple[dict[str, int], ...]
    totals: tuple[int, ...]
    backbone_totals: tuple[int, ...]
    active: tuple[int, ...]
    layers: tuple[int, ...]
    symbols: dict[str, tuple[int | None, ...]]
    # per model, why its components, layers and symbols are read from tensor names rather than
    # its family's tree (None: the family's tree): those figures are then not exact
    unsymbolic: tuple[str | None, ...] = ()

    def differences(self, kind: str) -> tuple[int, ...]:
        """Each model's count of ``kind`` minus the first model's (0 where both lack it)."""
        first = self.components[0].get(kind, 0)
        return tuple(c.get(kind, 0) - first for c in self.components)


def _symbols(model: Model) -> dict[str, int]:
    sections = split(model.tree)
    syms = symbols(model, sections)
    for s in sections:  # resolve every symbol the dimensions name, as the closed form does
        for line in s.lines:
            for p in line.params:
                syms.product(p.shape)
    return {k: v for k, v in syms.values.items() if not k.startswith("[")}


def compare(models: Sequence[Model]) -> Comparison:
    """Compare two or more counted models component by component, each on its family's tree
    where one is known (:func:`paramcount.family.resolve`)."""
    from .family import resolve

    if len(models) < 2:
        raise ParamcountError("compare needs at least two models", field="MODEL")
    resolved = [resolve(m) for m in models]  # a folder, a GGUF file: its family's tree where known
    models = [r.model for r in resolved]
    comps = tuple(m.components() for m in models)
    kinds = tuple(k for k in KINDS if any(k in c for c in comps))
    per_model = [_symbols(m) for m in models]
    names = sorted({s for sy in per_model for s in sy}, key=symbol_key)
    return Comparison(
        names=tuple(m.name for m in models),
        classes=tuple(m.class_name for m in models),
        kinds=kinds,
        components=comps,
        totals=tuple(m.total for m in models),
        backbone_totals=tuple(m.backbone_total for m in models),
        active=tuple(m.active_total for m in models),
        layers=tuple(sum(g.copies for g in m.layers()) for m in models),
        symbols={s: tuple(sy.get(s) for sy in per_model) for s in names},
        unsymbolic=tuple(r.why for r in resolved),
    )
