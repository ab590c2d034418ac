"""Raw parameters of printed transformers classes no paramcount family defines, from their source.

A module that holds an ``nn.Parameter`` beside its submodules (a ViT-like embedding's
``cls_token``, a dual encoder's ``logit_scale``, RWKV's ``time_decay``) prints only the
submodules. Where no family knows the printed class, but transformers is installed and defines
it, the ``__init__`` of each printed class (and of the transformers classes it inherits) is read
as text, never run: an ``nn.Parameter`` assigned to ``self`` there, or a ``register_parameter``,
names a tensor the text cannot show, and the count becomes a lower bound that names it (one
made only under a config flag is named too: "at least" stays true). Reading
the class imports its modelling module (torch and transformers): only for such printouts.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

_ASSIGNED = re.compile(r"self\.(\w+)\s*(?::[^=\n]+)?=\s*(?:torch\.)?(?:nn\.)?Parameter\(")
_REGISTERED = re.compile(r"register_parameter\(\s*[\"'](\w+)[\"']")
# How transformers names its model classes: a text whose root is named otherwise (``Net``) never
# pays for importing transformers (seconds).
_TRANSFORMERS_NAME = re.compile(r"[A-Z]\w*(Model|For[A-Z]\w*|Encoder|Decoder|Transformer|Backbone|VQVAE|HifiGan)\w*")


def _modules(mod: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every printed module with children, with its first path."""
    if not mod.children:
        return
    yield path, mod
    for c in mod.children:
        if c.mod is not None:
            key = c.key if c.start is None else str(c.start)
            yield from _modules(c.mod, f"{path}.{key}" if path else key)


def _module_of(root: str) -> Any:
    """transformers' modelling module that defines class ``root``, or None."""
    from .fallback import available

    if not _TRANSFORMERS_NAME.fullmatch(root) or not available():
        return None
    try:
        import transformers

        cls = getattr(transformers, root, None)
    except Exception:  # a broken optional install must not stop a count: no help from the source
        return None
    return sys.modules.get(getattr(cls, "__module__", ""), None) if isinstance(cls, type) else None


def _towers(root: Any) -> None:
    """Import the modelling modules of the printed classes transformers exports (towers built by
    AutoModel, such as a SigLIP vision model), so their inner classes can be read."""
    import transformers

    for _, mod in _modules(root):
        if _TRANSFORMERS_NAME.fullmatch(mod.cls):
            try:
                getattr(transformers, mod.cls, None)
            except Exception:  # an optional tower that fails to import only loses its help
                continue


def _loaded(name: str) -> Any:
    """Class ``name`` from a transformers modelling module already imported (another tower's)."""
    for key, module in list(sys.modules.items()):
        if key.startswith("transformers.models.") and ".modeling_" in key:
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                return cls
    return None


@cache
def _raw(cls: type) -> frozenset[str]:
    names: set[str] = set()
    for k in cls.__mro__:
        init = vars(k).get("__init__")
        if init is None or not k.__module__.startswith("transformers."):
            continue
        try:
            text = inspect.getsource(init)
        except (OSError, TypeError):
            continue
        names |= set(_ASSIGNED.findall(text)) | set(_REGISTERED.findall(text))
    return frozenset(names)


def hidden(root: Any) -> list[tuple[str, str, list[str]]]:
    """(path, class, names) of printed modules whose transformers source holds parameters the
    text does not show; empty when transformers is absent or does not define the root class."""
    module = _module_of(root.cls)
    if module is None:
        return []
    _towers(root)
    out, seen = [], set()
    for path, mod in _modules(root):
        if mod.cls in seen:
            continue
        seen.add(mod.cls)
        cls = getattr(module, mod.cls, None) or _loaded(mod.cls)
        if not isinstance(cls, type):
            continue
        missing = sorted(_raw(cls) - {c.key for c in mod.children})
        if missing:
            out.append((path, mod.cls, missing))
    return out
