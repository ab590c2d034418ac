"""The parameters of a live torch module as a tree: unique tensors in registration order, and
ties (a second name for the same tensor) as aliases, exactly as ``named_parameters()`` deduplicates.
Read by :mod:`.module` (a module counted as given) and by the fallback's worker (a class built on
the meta device)."""

from __future__ import annotations

from typing import Any

from .. import flat
from ..errors import ParamcountError
from ..flat import insert_tie
from ..ir import Block, Tie

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


def _with_ties(tree: Block, ties: dict[str, str], shapes: dict[str, tuple[int, ...]], kinds) -> Block:
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
