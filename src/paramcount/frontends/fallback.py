"""The transformers fallback: a model_type with no native family, counted by transformers itself.

When torch and transformers are installed (``pip install 'paramcount[transformers]'``), any
model_type that transformers can build from its own config is instantiated on the meta device
(no memory, no weights) and read back as a live module (:mod:`paramcount.frontends.module`):
the totals, names, shapes and ties are transformers' own, so the count is exact. What a native
family adds is not there: no config symbols (no derivation or slip check), and no KV-cache
layout (memory plans hold the weights alone). The result says so in ``counted_by``.

Nothing is downloaded and no remote code runs: the config class comes from transformers'
own ``CONFIG_MAPPING``, never from ``auto_map``.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, join
from ..model import Model
from ..records import replace

EXTRA = "pip install 'paramcount[transformers]'"
MAX_LAYERS = 1024  # transformers builds every layer: real models have at most a few hundred
MAX_INT = 1 << 26  # the same bound as every native dimension (arch.config.MAX_DIM)
MAX_DEPTH = 8  # nested sub-configs (text_config.vision_config…) deeper than any real config
NEEDS_NATIVE = "needs a native paramcount family"


def unknown(model_type: Any, source: str, supported: tuple[str, ...]) -> ParamcountError:
    """The error for a model_type neither paramcount nor (if installed) transformers can build."""
    known = f"supported natively: {', '.join(supported)}"
    if not isinstance(model_type, str):
        return ParamcountError(f"unknown model_type {model_type!r}; {known}", source=source, field="model_type")
    if not available():
        hint = f"; {EXTRA} counts any model_type transformers can build"
        return ParamcountError(f"unknown model_type {model_type!r}{hint}; {known}", source=source, field="model_type")
    import transformers

    why = f"transformers {transformers.__version__} does not know it either"
    return ParamcountError(f"unknown model_type {model_type!r}: {why}; {known}", source=source, field="model_type")


def available() -> bool:
    """Whether torch and transformers can be imported (without importing them)."""
    from importlib.util import find_spec

    return find_spec("torch") is not None and find_spec("transformers") is not None


def can_count(model_type: Any) -> bool:
    """Whether transformers (installed) has a config class for ``model_type``."""
    if not isinstance(model_type, str) or not available():
        return False
    from transformers import CONFIG_MAPPING

    return model_type in CONFIG_MAPPING


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


def _check_bounds(value: Any, source: str, field: str, depth: int = 0) -> None:
    """Refuse sizes that would make transformers build for minutes or exhaust memory."""
    if depth > MAX_DEPTH:
        raise ParamcountError(f"nested more than {MAX_DEPTH} deep", source=source, field=field)
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_bounds(v, source, f"{field}.{k}" if field else str(k), depth + 1)
    elif isinstance(value, int) and not isinstance(value, bool):
        high = MAX_LAYERS if "layer" in field.rsplit(".", 1)[-1] else MAX_INT
        if value > high:
            why = "the transformers fallback builds every layer" if high == MAX_LAYERS else "out of range"
            raise ParamcountError(f"{value:,} is over {high:,} ({why})", source=source, field=field)


def _class(transformers: Any, model_type: str, wanted: str | None, archs: list[str], source: str) -> tuple[str, str]:
    """(class to count, backbone class): ``wanted`` or the config's architectures, else the
    backbone (``AutoModel``'s class, or for a sub-model config the class built from it)."""
    backbone = _backbone(transformers, model_type)
    if wanted in (None, "auto"):
        wanted = next((a for a in archs if _exists(transformers, a)), None) or backbone
    elif wanted == "base":
        wanted = backbone
    if wanted is None:
        raise ParamcountError(
            f"transformers has no model class for {model_type!r} to build from this config; name one with --class",
            source=source,
            field="class",
        )
    if not _exists(transformers, wanted):
        raise ParamcountError(f"transformers has no class {wanted!r}", source=source, field="class")
    return wanted, backbone or wanted


def _exists(transformers: Any, name: str) -> bool:
    try:  # a class whose backend (timm, torchaudio) is missing raises on access
        return isinstance(getattr(transformers, name, None), type)
    except ImportError:
        return False


def _backbone(transformers: Any, model_type: str) -> str | None:
    """``AutoModel``'s class for ``model_type``; for a sub-model config (``clip_text_model``),
    the plainest class of its own modeling module that is built from exactly that config class."""
    import importlib

    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    found = MODEL_MAPPING_NAMES.get(model_type)
    if found:
        return found[0] if isinstance(found, (list, tuple)) else found
    config_class = transformers.CONFIG_MAPPING[model_type]
    try:
        modeling = importlib.import_module(config_class.__module__.replace(".configuration_", ".modeling_"))
    except ImportError:
        return None
    built = [
        name
        for name, obj in vars(modeling).items()
        if isinstance(obj, type) and getattr(obj, "config_class", None) is config_class and _exists(transformers, name)
    ]
    built = [n for n in built if not n.endswith("PreTrainedModel")]
    plain = [n for n in built if "For" not in n]
    return min(plain or built, key=len, default=None)


def _instantiate(transformers: Any, cls_name: str, config: Any, source: str, strict: bool = True) -> Any:
    """The model on the meta device. ``strict``: the class must be built from this config's class
    (transformers' own AutoModel mapping may pair a config with another family's class)."""
    import torch

    cls = getattr(transformers, cls_name)
    try:
        config_class = getattr(cls, "config_class", None)
    except ImportError as e:  # a placeholder for a class whose backend (timm, torchaudio) is missing
        text = " ".join(str(e).split())[:200]
        raise ParamcountError(f"transformers cannot build {cls_name} here: {text}", source=source) from None
    if strict and config_class is not None and not isinstance(config, config_class):
        raise ParamcountError(
            f"{cls_name} is built from a {config_class.__name__}, not this {type(config).__name__}",
            source=source,
            field="class",
        )
    try:
        with torch.device("meta"), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return cls(config)
    except Exception as e:  # transformers' own validation of a config it cannot build
        text = " ".join(str(e).split())[:200]
        raise ParamcountError(
            f"transformers could not build {cls_name}: {type(e).__name__}: {text}", source=source
        ) from None


def _config(transformers: Any, model_type: str, raw: Mapping[str, Any], source: str) -> Any:
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "auto_map", "transformers_version")}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return transformers.AutoConfig.for_model(model_type, **kwargs)
    except Exception as e:
        text = " ".join(str(e).split())[:200]
        raise ParamcountError(f"transformers rejects this config: {type(e).__name__}: {text}", source=source) from None


def _embedding_names(module: Any) -> set[str]:
    """Where the model's ``nn.Embedding`` tables are: their type is known here, not from names."""
    import torch

    return {name for name, m in module.named_modules() if isinstance(m, torch.nn.Embedding)}


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


def from_transformers(
    raw: Mapping[str, Any],
    source: str,
    model_type: str,
    name: str | None = None,
    model_class: str | None = None,
    notes: tuple[str, ...] = (),
) -> Model:
    """Count ``raw`` (a config of ``model_type``, which transformers knows) with transformers."""
    _check_bounds(raw, source, "")
    import transformers
    from transformers.utils import logging as hf_logging

    from .config import architectures
    from .module import from_module

    hf_logging.set_verbosity_error()
    config = _config(transformers, model_type, raw, source)
    cls, backbone_cls = _class(transformers, model_type, model_class, architectures(raw, source), source)
    module = _instantiate(transformers, cls, config, source, strict=cls != backbone_cls)
    counted = from_module(module, name or source)
    counted = replace(counted, tree=_mark_embeddings(counted.tree, _embedding_names(module)))
    backbone = counted.tree
    if backbone_cls != cls:
        prefix = getattr(module, "base_model_prefix", "")
        inner = next((c for c in counted.tree.children if getattr(c, "name", None) == prefix), None)
        backbone = (
            replace(inner, name="")
            if inner is not None
            else from_module(_instantiate(transformers, backbone_cls, config, source, strict=False)).tree
        )
    said = (
        f"counted by transformers {transformers.__version__} on the meta device: {model_type!r} has no native "
        "paramcount family, so totals, names, shapes and ties are transformers' own, without formulas"
    )
    return replace(
        counted,
        source=source,
        model_type=model_type,
        class_name=cls,
        backbone_class=backbone_cls,
        backbone=backbone,
        config=dict(raw),
        notes=(*notes, said),
        counted_by="transformers",
    )
