"""The tree explain, compute and compare read: the family's, wherever a family is known.

A count read from files (a safetensors checkpoint, a GGUF file, a print(model) text) has a tree
made from tensor names: right in its total, but without the config's symbols, layer stacks or
component kinds that a derivation, an attention width or an embedding table is read from. Where
the files name a native family, :func:`resolve` gives that family's tree instead, built from the
config (a checkpoint's config.json, a GGUF file's metadata) and checked against the stored
tensors: every name and shape (a checkpoint), or every shape (a GGUF file, whose names are
llama.cpp's: :mod:`paramcount.family.gguf`). Where there is no family, or the check fails, the
model read from the files comes back with ``why``: the figures that need the family's structure
are then flagged, never 0 or a guess marked exact.
"""

from __future__ import annotations

from ..ir import Block, Node
from ..model import Model
from ..records import replace
from .resolved import GGUF, Resolved

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: count --json resolves, and start-up counts
if TYPE_CHECKING:
    from typing import Any


def resolve(model: Model) -> Resolved:
    """The family's model of ``model`` where one is known and the files agree with it (see the module)."""
    return model.derived("resolved", lambda: _resolve(model))  # once per model: a GGUF file's is built


def _resolve(model: Model) -> Resolved:
    if getattr(model, "checkpoint", None) is not None:
        return _checkpoint(model)
    if model.class_name == GGUF:
        from .gguf import resolve_gguf

        return resolve_gguf(model)
    if model.counted_by != "paramcount":
        return Resolved(model, why=f"counted by {model.counted_by}: {model.model_type!r} has no native family")
    if not model.config or (model.source == "live module" and _from_names(model.tree)):
        return Resolved(model, why="a print(model) text or a module gives names and shapes, not a config's fields")
    return Resolved(model)


def _from_names(node: Node) -> bool:
    """Whether no block says what it is: a tree made from tensor names (families' builders mark
    their blocks with kinds and labels; :func:`paramcount.flat.tree` never does)."""
    if not isinstance(node, Block):
        return True
    return not (node.kind or node.label) and all(_from_names(c) for c in node.children)


def backbone_of(r: Resolved) -> Resolved:
    """The same, for the backbone inside the class (what explain derives by default)."""
    m = r.model
    if m.class_name == m.backbone_class or m.backbone is m.tree:
        return r  # names alone found no base model inside (a checkpoint without config.json)
    return replace(r, model=replace(m, tree=m.backbone, class_name=m.backbone_class))


def _checkpoint(model: Any) -> Resolved:
    fam = model.family
    if fam is None:
        return Resolved(model, why=model.unchecked or "no config.json beside the weights")
    n = len(model.checkpoint.params)
    checked = f"the family's tree from {model.checkpoint.against}: all {n:,} stored tensors agree in name and shape"
    notes = (*fam.notes, checked)
    return Resolved(replace(fam, name=model.name, source=model.source, notes=notes), checked)
