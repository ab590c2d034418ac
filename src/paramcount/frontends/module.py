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
from ..ir import Block, Tie
from ..model import Model
from ..records import replace

# torch dtype name -> the safetensors spelling the rest of paramcount uses
_DTYPES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int8": "I8",
    "uint8": "U8",
    "int32": "I32",
    "int64": "I64",
    "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
}


def _dtype(p: Any) -> str:
    name = str(p.dtype).removeprefix("torch.")
    return _DTYPES.get(name, name)


def _parameters(module: Any) -> tuple[list[tuple[str, tuple[int, ...], str]], dict[str, str]]:
    """Unique parameters in registration order, and each duplicate name -> the first name."""
    seen: dict[int, str] = {}
    params, ties = [], {}
    for name, p in module.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            ties[name] = seen[id(p)]
        else:
            seen[id(p)] = name
            params.append((name, tuple(int(d) for d in p.shape), _dtype(p)))
    return params, ties


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


def _with_ties(tree: Block, ties: dict[str, str], shapes: dict[str, tuple[int, ...]], kinds) -> Block:
    from .checkpoint import insert_tie

    for name, target in ties.items():
        tie = Tie(name.rsplit(".", 1)[-1], shapes[target], target, kinds(name))
        tree = insert_tie(tree, name.split("."), tie)
    return tree


def tree_of(params: list[tuple[str, tuple[int, ...], str]], ties: dict[str, str], kind=flat.kind_of) -> Block:
    """The tree of unique parameters (name, shape, dtype) in registration order, with ``ties``
    (a duplicate name -> the name it shares storage with) as aliases."""
    shapes = {n: s for n, s, _ in params}
    try:
        return _with_ties(flat.tree(params, kind), ties, shapes, kind)
    except ValueError as e:
        raise ParamcountError(str(e)) from None


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
