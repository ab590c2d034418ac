"""The JSON form of a count: a documented, versioned schema (see README, "JSON output")."""

from __future__ import annotations

import json
from typing import Any

from ..ir import expr
from ..model import Model

SCHEMA = "paramcount.count/1"


def to_dict(model: Model, tensors: bool = True) -> dict[str, Any]:
    """Everything a renderer needs, as plain JSON types."""
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "name": model.name,
        "source": model.source,
        "model_type": model.model_type,
        "class": model.class_name,
        "counted_by": model.counted_by,
        "total": model.total,
        "total_with_ties": model.total_with_ties,
        "active": model.active_total,
        "backbone": {"class": model.backbone_class, "total": model.backbone_total},
        "towers": model.towers(),
        "components": model.components(),
        "layers": [
            {"path": g.path, "first": g.first, "count": g.copies, "each": g.each, "total": g.count}
            for g in model.layers()
        ],
        "ties": [{"name": n, "target": t, "count": c} for n, t, c in model.ties()],
        "notes": list(model.notes),
    }
    if tensors:
        data["tensors"] = [
            {
                "name": leaf.name,
                "shape": [int(d) for d in leaf.shape],
                "dims": [expr(d) for d in leaf.shape],
                "count": 0 if leaf.tied_to else leaf.count,
                "component": leaf.kind,
                "tied_to": leaf.tied_to,
            }
            for leaf in model.tensors()
        ]
    return data


def dumps(model: Model, tensors: bool = True) -> str:
    return json.dumps(to_dict(model, tensors), indent=2, ensure_ascii=False)
