"""The transformers fallback: a model_type with no native family, counted by transformers itself.

When torch and transformers are installed (``pip install 'paramcount[transformers]'``), any
model_type that transformers can build from its own config is instantiated on the meta device
(no memory, no weights) and read back as parameter rows: the totals, names, shapes and ties are
transformers' own, so the count is exact. What a native family adds is not there: no config
symbols (no derivation or slip check), and no KV-cache layout (memory plans hold the weights
alone). The result says so in ``counted_by``.

Bounded, offline and narrow:

- before anything is imported, the config's numbers and lists are checked
  (:mod:`paramcount.frontends.fallback_bounds`), a backbone the config names for download or a
  timm backbone is refused, and the model_type and the class must be in transformers' own
  tables, shipped with paramcount (``transformers_types.json``);
- transformers runs in a worker process with a time, memory and module budget, no network,
  and ``HF_HUB_OFFLINE`` set (:mod:`paramcount.frontends.fallback_worker`);
- no remote code runs: the config class comes from transformers' own ``CONFIG_MAPPING``, never
  from ``auto_map``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, join
from ..model import Model, not_native
from ..records import replace
from .fallback_bounds import check, offline

EXTRA = "pip install 'paramcount[transformers]'"
NEEDS_NATIVE = "needs a native paramcount family"
TYPES_FILE = Path(__file__).parent / "transformers_types.json"

# Set while a caller wants only what a native family gives (a derivation, a slip check): the
# fallback refuses before its worker starts, since that worker's import of torch takes seconds.
NATIVE_ONLY: contextvars.ContextVar[str | None] = contextvars.ContextVar("paramcount_native_only", default=None)


@contextlib.contextmanager
def native_only(what: str) -> Iterator[None]:
    """Within: a model_type without a native family is refused as ``what`` needing one, unbuilt."""
    token = NATIVE_ONLY.set(what)
    try:
        yield
    finally:
        NATIVE_ONLY.reset(token)


@cache
def types() -> dict[str, Any]:
    """transformers' model_types and, for each, the classes it maps and the backbone class."""
    return json.loads(TYPES_FILE.read_text(encoding="utf-8"))


def known(model_type: Any) -> bool:
    """Whether transformers (the version the list was made from) has a config for ``model_type``."""
    return isinstance(model_type, str) and model_type in types()["types"]


def classes(model_type: str) -> list[str]:
    """The model classes transformers maps for ``model_type`` (what ``--class`` may name)."""
    entry = types()["types"][model_type]
    return sorted({*entry["classes"], *([entry["base"]] if entry["base"] else [])})


def unknown(model_type: Any, source: str, supported: tuple[str, ...]) -> ParamcountError:
    """The error for a model_type neither paramcount nor (if installed) transformers can build."""
    known_here = f"supported natively: {', '.join(supported)}"
    if not isinstance(model_type, str):
        return ParamcountError(f"unknown model_type {model_type!r}; {known_here}", source=source, field="model_type")
    if not available():
        hint = f"; {EXTRA} counts any model_type transformers can build"
        return ParamcountError(
            f"unknown model_type {model_type!r}{hint}; {known_here}", source=source, field="model_type"
        )
    listed, installed = types()["transformers"], _installed()
    why = f"transformers {listed} does not know it either"
    if installed not in (None, listed):
        why += f" (paramcount's list of its model_types; transformers {installed} is installed)"
    return ParamcountError(f"unknown model_type {model_type!r}: {why}; {known_here}", source=source, field="model_type")


def _installed() -> str | None:
    """The installed transformers' version, read from its metadata (nothing is imported)."""
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None


def available() -> bool:
    """Whether torch and transformers can be imported (without importing them)."""
    from importlib.util import find_spec

    return find_spec("torch") is not None and find_spec("transformers") is not None


def can_count(model_type: Any) -> bool:
    """Whether transformers (installed) has a config class for ``model_type``, from the shipped
    list of its model_types: nothing is imported to say no."""
    return known(model_type) and available()


def remote_code_error(raw: Mapping[str, Any], source: str) -> ParamcountError | None:
    """A config whose model exists only as remote code (``auto_map``) cannot be counted."""
    auto_map = raw.get("auto_map")
    if not auto_map:
        return None
    return ParamcountError(
        f"model_type {raw.get('model_type')!r} is defined by the repository's own code (auto_map: "
        f"{str(auto_map)[:80]}); paramcount never runs remote code, and transformers has no class for it",
        source=source,
        field="model_type",
    )


def pick_class(model_type: str, wanted: str | None, archs: list[str], source: str) -> tuple[str, str]:
    """(class to count, backbone class): ``wanted`` or the config's architectures, else the
    backbone, each one of the classes transformers maps for ``model_type``."""
    allowed = classes(model_type)
    base = types()["types"][model_type]["base"]
    if wanted in (None, "auto"):
        wanted = next((a for a in archs if a in allowed), None) or base
    elif wanted == "base":
        wanted = base
    if wanted is None:
        raise ParamcountError(
            f"transformers has no model class for {model_type!r} to build from this config",
            source=source,
            field="class",
        )
    if wanted not in allowed:
        raise ParamcountError(
            f"transformers has no class {wanted[:100]!r} for {model_type}; choose one of: base, {', '.join(allowed)}",
            source=source,
            field="class",
        )
    return wanted, base or wanted


def _mark_embeddings(node: Block, names: set[str], path: str = "") -> Block:
    """The tree with each embedding table's block marked as one (FLOPs and Kaplan's N skip
    lookups); a repeated block is looked up by its first copy's name."""
    children = []
    for c in node.children:
        if isinstance(c, Block):
            here = join(path, c.name if c.repeat is None else f"{c.name}.{c.start}")
            c = _mark_embeddings(c, names, here)
            if here in names and c.kind is None:
                c = replace(c, kind="embeddings")
        children.append(c)
    return replace(node, children=tuple(children))


def _tree(rows: Mapping[str, Any]) -> Block:
    """The tree of one built class, from the worker's rows."""
    from .live import tree_of

    params = [(str(n), tuple(int(d) for d in shape), str(dtype)) for n, shape, dtype in rows["params"]]
    return _mark_embeddings(tree_of(params, dict(rows["ties"])), set(rows["embeddings"]))


def _backbone(tree: Block, answer: Mapping[str, Any]) -> Block:
    """The backbone: the base model inside the class (under ``base_model_prefix``), or the one
    the worker built on its own when the class holds none by that name."""
    inner = next((c for c in tree.children if isinstance(c, Block) and c.name == answer["prefix"]), None)
    return replace(inner, name="") if inner is not None else _tree(answer["base"])


def _build(raw: Mapping[str, Any], source: str, model_type: str, cls: str, base: str) -> dict[str, Any]:
    """transformers' rows for the class (and its backbone): kept in the user's cache
    (:mod:`paramcount.frontends.fallback_cache`), else from the worker, then kept."""
    from . import fallback_cache, fallback_worker

    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "auto_map", "transformers_version")}
    request = {"model_type": model_type, "config": kwargs, "class": cls, "base": base}
    kept = fallback_cache.get(request)
    if kept is not None:
        return kept
    if fallback_worker.WORKER.pid is None:  # a fresh worker imports torch and transformers: seconds
        say = f"paramcount: counting {model_type} with transformers (no native family): importing torch …"
        print(say, file=sys.stderr, flush=True)
    try:
        answer = fallback_worker.ask(request)
    except ParamcountError as e:
        raise e.at(source) from None
    fallback_cache.put(request, answer)
    return answer


def from_transformers(
    raw: Mapping[str, Any],
    source: str,
    model_type: str,
    name: str | None = None,
    model_class: str | None = None,
    notes: tuple[str, ...] = (),
) -> Model:
    """Count ``raw`` (a config of ``model_type``, which transformers knows) with transformers."""
    from .configfile import architectures

    check(raw, source)
    offline(raw, source)
    archs = architectures(raw, source)
    cls, backbone_cls = pick_class(model_type, model_class, archs, source)
    if NATIVE_ONLY.get():
        raise not_native(NATIVE_ONLY.get(), f"{model_type!r} has none, so transformers would count it", source)
    if model_class in (None, "auto") and archs and archs[0] != cls:
        notes = (
            *notes,
            f"class {archs[0][:100]!r} from 'architectures' is not one transformers maps for "
            f"{model_type}; counting {cls}",
        )
    answer = _build(raw, source, model_type, cls, backbone_cls)
    tree = _tree(answer)
    said = (
        f"counted by transformers {answer['version']} on the meta device: {model_type!r} has no native "
        "paramcount family, so totals, names, shapes and ties are transformers' own, without formulas"
    )
    return Model(
        name=name or source,
        source=source,
        model_type=model_type,
        class_name=cls,
        tree=tree,
        backbone_class=backbone_cls,
        backbone=tree if backbone_cls == cls else _backbone(tree, answer),
        config=dict(raw),
        notes=(*notes, said),
        counted_by="transformers",
    )
