"""A live torch ``nn.Module`` counted from its parameters (any device, meta included).

Ties come from identity: a parameter reachable under two names (``lm_head.weight`` and
``model.embed_tokens.weight``) is one tensor, counted once, the later name a tie to the first,
exactly as ``named_parameters()`` deduplicates. Buffers are never parameters. A transformers
model's config, when it has one, names the family, the components and the backbone.
"""

from __future__ import annotations

from typing import Any

from .. import flat
from ..errors import ParamcountError
from ..ir import Block
from ..model import Model
from ..records import replace
from .live import _parameters, tree_of


# torch dtype name -> the safetensors spelling the rest of paramcount uses
def _config_model(module: Any) -> Model | None:
    """The config path's count of this model's class, for component kinds and the backbone."""
    config = getattr(module, "config", None)
    to_dict = getattr(config, "to_dict", None)
    if not callable(to_dict):
        return None
    from .config import from_config

    raw = {k: v for k, v in to_dict().items() if k != "architectures"}
    try:
        return from_config(raw, "<module config>", model_class=type(module).__name__, fallback=False)
    except ParamcountError:
        return None


def _same(expected: Model, params, ties: dict[str, str]) -> bool:
    mine = {n: s for n, s, _ in params} | {n: ("tie", t) for n, t in ties.items()}
    theirs = {x.name: ("tie", x.tied_to) if x.tied_to else tuple(map(int, x.shape)) for x in expected.tensors()}
    return mine == theirs


def from_module(module: Any, name: str | None = None) -> Model:
    """Count a live ``torch.nn.Module``: the same tree and totals as its config would give."""
    try:
        import torch
    except ImportError:  # pragma: no cover - a module exists, so torch does
        raise ParamcountError("from_module needs torch") from None
    if not isinstance(module, torch.nn.Module):
        raise ParamcountError(f"expected a torch.nn.Module, got {type(module).__name__}")
    params, ties = _parameters(module)
    expected = _config_model(module)
    known = {x.name: x.kind for x in expected.tensors()} if expected else {}
    tree = tree_of(params, ties, lambda n: known.get(n) or flat.kind_of(n))
    cls = type(module).__name__
    if expected is not None and _same(expected, params, ties):
        # the module is what its config builds: the config's tree carries the symbols too
        return replace(expected, name=name or cls, source="live module")
    backbone, backbone_class = tree, cls
    if expected is not None:
        backbone_class = expected.backbone_class
        prefix = getattr(module, "base_model_prefix", "")
        inner = next((c for c in tree.children if isinstance(c, Block) and c.name == prefix), None)
        if inner is not None and backbone_class != cls:
            backbone = replace(inner, name="")
    model_type = expected.model_type if expected else getattr(getattr(module, "config", None), "model_type", None)
    return Model(
        name=name or cls,
        source="live module",
        model_type=model_type or "module",
        class_name=cls,
        tree=tree,
        backbone_class=backbone_class,
        backbone=backbone,
        config=expected.config if expected else {},
        notes=(),
    )
