"""paramcount: exact parameter counts of Transformer models, with where they live.

    >>> import paramcount
    >>> m = paramcount.load("bert-base-chinese")
    >>> m.backbone_total
    102267648

A source is a catalog name (hub id or alias), a ``config.json`` path, a model folder, or a
config dict. Counting is arithmetic over a small tree; nothing heavy is imported.
"""

from __future__ import annotations

import importlib
import sys
import types

from .errors import ParamcountError
from .loader import from_dims, from_module, load
from .model import Model

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Model", "ParamcountError", "check", "compare", "derive", "from_dims", "from_module", "load", "parse_answer"]
__version__ = "0.1.0"

# Loaded on first use, so that a plain count imports neither the slip checker nor the derivation.
# Each name is also a submodule's name, and importing a submodule binds the package attribute to
# the module: the package's attribute lookup hands out the function all the same.
_LAZY = {"check": "check", "parse_answer": "check", "compare": "compare", "derive": "derive"}


class _Package(types.ModuleType):
    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if name in _LAZY and isinstance(value, types.ModuleType):
            return getattr(value, name)
        return value

    def __getattr__(self, name: str) -> Any:
        if name not in _LAZY:
            raise AttributeError(f"module 'paramcount' has no attribute {name!r}")
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


sys.modules[__name__].__class__ = _Package
