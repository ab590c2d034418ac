"""The JSON form of a count: a documented, versioned schema (see docs/json.md)."""

from __future__ import annotations

import json

from ..ir import Leaf, expr, runs
from ..model import Model

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "paramcount.count/1"


COLLAPSE_HINT = "; --json --collapsed lists each repeated tensor once, with its copies"


def to_dict(model: Model, tensors: bool = True, collapsed: bool = False) -> dict[str, Any]:
    """Everything a renderer needs, as plain JSON types. With ``collapsed`` the tensors of a
    repeated block are listed once: ``model.layers.{0..31}.mlp.up_proj.weight`` with
    ``copies`` 32 (``count`` is each copy's), as docs/json.md documents."""
    from ..family import resolve

    resolved = resolve(model)  # a file's summary figures from its family's tree, where known
    fam = resolved.model
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "name": model.name,
        "source": model.source,
        "model_type": model.model_type,
        "class": model.class_name,
        "counted_by": model.counted_by,
        "total": model.total,
        "exact": model.exact,
        "inexact_reason": model.inexact,
        "scope": list(model.scope),
        "total_with_ties": model.total_with_ties,
        "active": fam.active_total,
        "backbone": {"class": fam.backbone_class, "total": fam.backbone_total},
        "towers": fam.towers(),
        "components": fam.components(),
        "layers": [
            {"path": g.path, "first": g.first, "count": g.copies, "each": g.each, "total": g.count}
            for g in fam.layers()
        ],
        # whether active, backbone, towers, components and layers are the family's (else read
        # from tensor names: not exact, and why)
        "breakdown_exact": resolved.is_family,
        "breakdown_why": resolved.why,
        "ties": [{"name": n, "target": t, "count": c} for n, t, c in model.ties()],
        "notes": list(model.notes),
    }
    if tensors and collapsed:
        data["tensors_collapsed"] = [{**_tensor(r.leaf), "copies": r.copies} for r in runs(model.tree)]
    elif tensors:
        data["tensors"] = [_tensor(leaf) for leaf in model.tensors(instead=COLLAPSE_HINT)]
    return data


def _tensor(leaf: Leaf) -> dict[str, Any]:
    return {
        "name": leaf.name,
        "shape": [int(d) for d in leaf.shape],
        "dims": [expr(d) for d in leaf.shape],
        "count": 0 if leaf.tied_to else leaf.count,
        "component": leaf.kind,
        "tied_to": leaf.tied_to,
    }


def dumps(model: Model, tensors: bool = True, collapsed: bool = False) -> str:
    return json.dumps(to_dict(model, tensors, collapsed), indent=2, ensure_ascii=False)
