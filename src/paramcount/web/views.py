"""Models, trees and derivations as the plain JSON the page draws from.

The tree keeps its repeats (``layer × 32`` is one node with ``repeat: 32``): the page
multiplies, it never receives an unrolled copy of every layer.
"""

from __future__ import annotations

from typing import Any

from ..ir import Node, Tensor, Tie, expr
from ..model import Model
from ..render.labels import KINDS, TOWERS


def summary(model: Model) -> dict[str, Any]:
    """Totals, components, layer runs, ties and notes; a file's breakdown from its family's tree
    where it has one (:func:`paramcount.family.resolve`), as ``paramcount --json`` gives it."""
    from ..family import resolve

    labels = KINDS["en"]
    resolved = resolve(model)
    fam = resolved.model
    return {
        "name": model.name,
        "source": model.source,
        "model_type": model.model_type,
        "class_name": model.class_name,
        "counted_by": model.counted_by,
        "exact": model.exact,
        "inexact_reason": model.inexact,
        "scope": list(model.scope),
        "total": model.total,
        "total_with_ties": model.total_with_ties,
        "active": fam.active_total,
        "backbone_class": fam.backbone_class,
        "backbone_total": fam.backbone_total,
        "towers": [{"tower": k, "label": TOWERS["en"][k], "count": n} for k, n in fam.towers().items()],
        "components": [{"kind": k, "label": labels.get(k, k), "count": n} for k, n in fam.components().items()],
        "layers": [
            {"path": g.path, "first": g.first, "copies": g.copies, "each": g.each, "total": g.count}
            for g in fam.layers()
        ],
        "breakdown_exact": resolved.is_family,
        "breakdown_why": resolved.why,
        "ties": [{"name": n, "target": t, "count": c} for n, t, c in model.ties()],
        "notes": [
            *model.notes,
            *([f"breakdown read from tensor names, not exact: {resolved.why}"] if resolved.why else []),
        ],
    }


MAX_TREE_DEPTH = 64  # real trees are about 8 deep; deeper blocks are sent with their count alone


def tree(node: Node, kind: str = "other", depth: int = 0) -> dict[str, Any]:
    """One node and its children; ``kind`` is the component, inherited where a node has none.

    Blocks deeper than MAX_TREE_DEPTH (names nested hundreds of dots deep) keep their count
    and come with ``elided: true`` and no children."""
    kind = node.kind or kind
    if isinstance(node, Tensor | Tie):
        return {
            "name": node.name,
            "type": "tie" if isinstance(node, Tie) else "tensor",
            "kind": kind,
            "count": node.count,
            "shape": [int(d) for d in node.shape],
            "dims": [expr(d) for d in node.shape],
            "dtype": getattr(node, "dtype", None),
            "tied_to": node.target if isinstance(node, Tie) else None,
        }
    return {
        "name": node.name,
        "type": "block",
        "kind": kind,
        "count": node.count,
        "repeat": node.repeat,
        "start": node.start,
        "label": node.label,
        "active": list(node.active) if node.active else None,
        "children": [tree(c, kind, depth + 1) for c in node.children] if depth < MAX_TREE_DEPTH else [],
        "elided": depth >= MAX_TREE_DEPTH and bool(node.children),
    }


def root(model: Model) -> dict[str, Any]:
    """The counted tree, its root named after the class (transformers' root module has no name)."""
    data = tree(model.tree)
    data["name"] = data["name"] or model.class_name
    return data


def derivation(resolved: Any, lang: str) -> dict[str, Any]:
    """The derivation of a resolved model (:func:`paramcount.family.resolve`) as blocks of typed
    pieces; formulas as TeX for KaTeX, numbers as digits (none past derive.MAX_DERIVED distinct
    tensors: :func:`paramcount.derive.derive_resolved` refuses it)."""
    from ..derive import derive_resolved
    from ..render.derivation import document

    doc = document(derive_resolved(resolved), lang)
    return {"lang": lang, "blocks": [_block(b) for b in doc.blocks]}


def _block(b: Any) -> dict[str, Any]:
    return {
        "kind": b.kind,
        "cells": [_cell(c) for c in b.cells],
        "rows": [[_cell(c) for c in row] for row in b.rows],
        "right": list(b.right),
        "strong": list(b.strong),
    }


def _cell(cell: Any) -> list[dict[str, str]]:
    return [_piece(p) for p in cell if p != ""]


def _piece(p: Any) -> dict[str, str]:
    from ..render.doc import Code, Mark, Math, Num, tex_math

    if isinstance(p, Math):
        return {"t": "math", "v": tex_math(p.text), "text": p.text}
    if isinstance(p, Code):
        return {"t": "code", "v": p.text, "text": None}
    if isinstance(p, Num):
        return {"t": "num", "v": f"{p.value:,}", "text": None}
    if isinstance(p, Mark):
        return {"t": "mark", "v": "✓", "text": None}
    return {"t": "text", "v": str(p), "text": None}


def checkpoint(model: Model) -> dict[str, Any] | None:
    """What a checkpoint's header says about storage: bytes per dtype and per storage scheme."""
    ck = getattr(model, "checkpoint", None)
    if ck is None:
        return None
    return {
        "read": ck.chosen,
        "file_bytes": ck.file_bytes,
        "header_bytes": ck.header_bytes,
        "data_bytes": ck.data_bytes,
        "parameters": ck.parameters,
        "by_dtype": [{"name": k, "tensors": t, "elements": e, "bytes": b} for k, (t, e, b) in ck.by_dtype().items()],
        "by_storage": [
            {"name": k, "tensors": t, "elements": e, "bytes": b} for k, (t, e, b) in ck.by_storage().items()
        ],
        "quantization": ck.quantization,
        "differences": len(ck.differences),
    }


def gguf_storage(info: Any) -> dict[str, Any]:
    """A GGUF header's bytes per quant type, in the same shape as a checkpoint's."""
    return {
        "read": info.path,
        "file_bytes": info.file_size,
        "header_bytes": info.data_offset,
        "data_bytes": info.nbytes,
        "parameters": info.elements,
        "by_dtype": [
            {"name": s.type_name, "tensors": s.tensors, "elements": s.elements, "bytes": s.nbytes}
            for s in info.by_type()
        ],
        "by_storage": [],
        "quantization": f"GGUF, {info.bits_per_weight:.4f} bits per weight",
        "differences": 0,
    }
