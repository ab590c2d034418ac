"""Raw parameters of printed transformers classes no paramcount family defines, from their source.

A module that holds an ``nn.Parameter`` beside its submodules (a ViT-like embedding's
``cls_token``, a dual encoder's ``logit_scale``, RWKV's ``time_decay``) prints only the
submodules. Where no family knows the printed class, but transformers is installed and defines
it, the ``__init__`` of each printed class (and of the transformers classes it inherits) is read
as text, never run: an ``nn.Parameter`` assigned to ``self`` there, or a ``register_parameter``,
names a tensor the text cannot show, and the count becomes a lower bound that names it (one
made only under a config flag is named too: "at least" stays true). Reading
the class imports its modelling module (torch and transformers): only for such printouts.

The same source says what print(model) cannot show about sharing: the ties a model class declares
(``_tied_weights_keys``, expanded over the printed names as transformers expands them), and the
modules a class is handed by its caller (Zamba's hybrid layers all hold one ``shared_transf``),
which the text prints at every place they are used.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from itertools import cycle
from typing import Any

_ASSIGNED = re.compile(r"self\.(\w+)\s*(?::[^=\n]+)?=\s*(?:torch\.)?(?:nn\.)?Parameter\(")
_REGISTERED = re.compile(r"register_parameter\(\s*[\"'](\w+)[\"']")
# Ties a model makes as it is built (Bark's fine model) or by its own tie_weights: not readable
_BUILT_TIES = re.compile(r"self\._tied_weights_keys\b")
_HANDED = re.compile(r"^\s*self\.(\w+)\s*=\s*(\w+)\s*$", re.M)  # self.child = an argument
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


# --- sharing -----------------------------------------------------------------------------


@dataclass
class Sharing:
    """What transformers' source says the printed modules share, which the text cannot show."""

    keys: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (model's path, _tied_weights_keys)
    unreadable: list[str] = field(default_factory=list)  # ties the source sets in code, not as data
    handed: list[tuple[str, str]] = field(default_factory=list)  # (child's path, class it is handed to)


def walk(mod: Any, path: str = "", repeated: bool = False) -> Iterator[tuple[str, Any, bool]]:
    """Every printed module with children: its first path, and whether it is one of a run."""
    if not mod.children:
        return
    yield path, mod, repeated
    for c in mod.children:
        if c.mod is not None:
            key = c.key if c.start is None else str(c.start)
            yield from walk(c.mod, f"{path}.{key}" if path else key, repeated or c.copies > 1)


def _sources(cls: type, method: str) -> Iterator[tuple[type, str]]:
    """The source of one method of ``cls`` and of the transformers classes it inherits."""
    for k in cls.__mro__:
        target = vars(k).get(method)
        if target is None or not k.__module__.startswith("transformers.models."):
            continue
        try:
            yield k, inspect.getsource(target)
        except (OSError, TypeError):
            continue


@cache
def _handed(cls: type) -> frozenset[str]:
    """Children ``__init__`` stores from its own arguments (``self.shared_transf = shared_transf``):
    modules made by the caller, which may hand the same one to several layers."""
    names: set[str] = set()
    for k, text in _sources(cls, "__init__"):
        try:
            args = set(inspect.signature(vars(k)["__init__"]).parameters) - {"self", "config"}
        except (TypeError, ValueError):
            continue
        names |= {child for child, arg in _HANDED.findall(text) if arg in args}
    return frozenset(names)


@cache
def _builds_ties(cls: type) -> bool:
    """Whether a class (or a transformers class it inherits) ties in code: its own tie_weights,
    or ``_tied_weights_keys`` set on the instance. Methods are read one by one: the source of a
    whole class parses its module (a second for a large one)."""
    for k in cls.__mro__:
        if not k.__module__.startswith("transformers.models."):
            continue
        for name, f in vars(k).items():
            if inspect.isfunction(f) and (name in ("tie_weights", "_tie_weights") or _reads(f, _BUILT_TIES)):
                return True
    return False


def _reads(f: Any, pattern: re.Pattern[str]) -> bool:
    try:
        return bool(pattern.search(inspect.getsource(f)))
    except (OSError, TypeError):
        return False


def _model_ties(cls: type, path: str, repeated: bool, out: Sharing) -> None:
    if _builds_ties(cls):
        out.unreadable.append(f"{cls.__name__} ties weights in code as it is built")
        return
    keys = getattr(cls, "_tied_weights_keys", None)
    if not keys:
        return
    if not isinstance(keys, dict) or repeated:
        out.unreadable.append(f"{cls.__name__} at {path or '(root)'} declares ties this reader cannot place")
        return
    out.keys.append((path, dict(keys)))


def sharing(root: Any) -> Sharing | None:
    """What the printed transformers classes share, from their source; None when transformers is
    absent or does not define the root class (nothing can be read)."""
    module = _module_of(root.cls)
    if module is None:
        return None
    _towers(root)
    from transformers import PreTrainedModel

    out = Sharing()
    for path, mod, repeated in walk(root):
        cls = getattr(module, mod.cls, None) or _loaded(mod.cls)
        if not isinstance(cls, type):
            continue
        printed = {c.key for c in mod.children if c.mod is not None}
        out.handed += [(f"{path}.{key}" if path else key, mod.cls) for key in sorted(_handed(cls) & printed)]
        if issubclass(cls, PreTrainedModel):
            _model_ties(cls, path, repeated, out)
    return out


def expand(keys: dict[str, str], prefix: str, names: dict[str, bool]) -> dict[str, str] | None:
    """A model's ``_tied_weights_keys`` over the printed tensor names under ``prefix``, as
    transformers' ``get_expanded_tied_weights_keys`` expands them (each a regex from the start of
    the name; targets paired in sorted order with the sources, cycled). ``names`` maps each name to
    whether it is one of a run (named by its first index). None where a key matches nothing
    printed, a tensor of a run, or targets that do not pair with its sources."""
    lead = f"{prefix}." if prefix else ""
    local = {n[len(lead) :]: r for n, r in names.items() if n.startswith(lead)}
    out: dict[str, str] = {}
    for target, source in keys.items():
        ts = sorted(n for n in local if re.search("^" + target, n))
        ss = sorted(n for n in local if re.search("^" + source, n))
        if not ts or not ss or len(ts) % len(ss) or any(local[n] for n in ts + ss):
            return None
        for t, s in zip(ts, cycle(ss)):
            out[t] = out.get(s, s)  # a source that is itself a target: its own source, as transformers does
    return {lead + t: lead + s for t, s in out.items()}


# --- leaves that hold nothing ------------------------------------------------------------

# How a module's own code makes a parameter (a leaf prints no submodules, so it has no other way)
_MAKES = re.compile(r"Parameter|register_parameter")


def parameter_free(root: Any, classes: set[str]) -> set[str]:
    """Of the printed leaf ``classes`` (modules that print no shape), those transformers' source
    shows hold no parameter: no method of the class, nor of the transformers classes it inherits,
    makes one, and it inherits nothing else with parameters (only ``nn.Module``). Empty when
    transformers is absent or does not define the root class."""
    module = _module_of(root.cls)
    if module is None or not classes:
        return set()
    _towers(root)
    return {name for name in classes if _free(getattr(module, name, None) or _loaded(name))}


@cache
def _free(cls: Any) -> bool:
    if not isinstance(cls, type):
        return False
    import torch

    for k in cls.__mro__:
        if k in (object, torch.nn.Module):
            continue
        if not k.__module__.startswith("transformers."):
            return False  # an nn.Linear or nn.LayerNorm subclass holds the parent's parameters
        if any(inspect.isfunction(f) and _reads(f, _MAKES) for f in vars(k).values()):
            return False
    return True
