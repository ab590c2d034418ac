"""A Hugging Face ``config.json`` (a file, a model folder, or a dict) becomes a Model."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import cache

from ..arch import Family, family, model_type_of_class, supported
from ..errors import ParamcountError
from ..model import Model
from .configfile import architectures, read_json

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from pathlib import Path  # imported where a path is read: a catalog count needs none
    from typing import Any

# Classes transformers renamed after configs were saved naming them (such configs are old
# enough to have no model_type): the class transformers builds for them now.
RENAMED = {"T5WithLMHeadModel": "T5ForConditionalGeneration"}


def exists(path: str | Path) -> bool:
    """Whether ``path`` names something on disk; a name no file system accepts (longer than 255
    bytes in one part, a NUL byte) names nothing, rather than raising."""
    try:
        return os.path.exists(path)
    except (OSError, ValueError):
        return False


def config_path(path: Path) -> Path:
    """A folder stands for the ``config.json`` inside it."""
    return path / "config.json" if path.is_dir() else path


def current_class(name: str) -> str:
    """The PyTorch class of a name in ``architectures``: TensorFlow's and Flax's classes are the
    PyTorch class's name behind ``TF`` / ``Flax`` (TFBertForMaskedLM), old names as renamed."""
    for framework in ("TF", "Flax"):
        if name.startswith(framework) and name[len(framework) : len(framework) + 1].isupper():
            name = name[len(framework) :]
            break
    return RENAMED.get(name, name)


def model_type(raw: Mapping[str, Any], source: str) -> str:
    """``model_type``, or for older files the family of the class in ``architectures``: the
    family that defines the class, else the one whose model_type begins its name."""
    if raw.get("model_type") is not None:
        return raw["model_type"]
    for cls in map(current_class, architectures(raw, source)):
        found = model_type_of_class(cls) or type_by_name(cls)
        if found:
            return found
    raise ParamcountError(
        "is missing, and no known class in 'architectures' names the family", source=source, field="model_type"
    )


# What follows the family in a class name: its role (ForCausalLM, Model, WithLMHeadModel, LMHeadModel).
_ROLE = re.compile(r"For[A-Z]|Model|With[A-Z]|LMHead")


def type_by_name(class_name: str) -> str | None:
    """The longest model_type that begins ``class_name`` (separators aside, any case) right
    before the class's role: ``t5`` for T5WithLMHeadModel. transformers placed a config without
    model_type by the longest model_type inside its name or path (roberta before bert); in a
    class name the family is the prefix, and the role after it keeps ``phi`` out of
    DolphinForCausalLM and ``gpt_neox`` out of GPTNeoXJapaneseForCausalLM (another family)."""
    for key in sorted(supported(), key=len, reverse=True):
        plain = key.replace("_", "")
        if class_name.lower().startswith(plain) and _ROLE.match(class_name, len(plain)):
            return key
    return None


def placed_by_name(raw: Mapping[str, Any], fam: Family, cls: str) -> list[str]:
    """Say how a config without model_type was placed (and an old class name read)."""
    if raw.get("model_type") is not None:
        return []
    named = next((a for a in architectures(raw, "") if current_class(a) == cls), None) or cls
    said = [f"no model_type: {fam.model_type}, as the class {named} in 'architectures' names it"]
    return said + ([f"{named} is the old name of {cls}"] if named in RENAMED else [])


def pick_class(fam: Family, raw: Mapping[str, Any], wanted: str | None, source: str) -> tuple[str, list[str]]:
    """The class to count: ``wanted`` (a class name or 'base'), else the config's
    ``architectures`` entry, else the backbone."""
    if wanted in (None, "auto"):
        archs = architectures(raw, source)
        first = current_class(archs[0]) if archs else None
        if first is not None and first not in fam.classes:  # MosaicML's MPTForCausalLM is MptForCausalLM
            first = next((c for c in fam.classes if c.lower() == first.lower()), first)
        if first is None or first in fam.classes:
            return first or fam.backbone, []
        return fam.backbone, [f"class {first} from 'architectures' is not modelled; counting {fam.backbone}"]
    if wanted == "base":
        return fam.backbone, []
    if wanted not in fam.classes:
        raise ParamcountError(
            f"unknown class {wanted!r} for {fam.model_type}; choose one of: base, {', '.join(fam.classes)}",
            source=source,
            field="class",
        )
    return wanted, []


def from_config(
    raw: Mapping[str, Any],
    source: str,
    name: str | None = None,
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    fallback: bool = True,
) -> Model:
    """Count the model a config describes, for ``model_class`` and for its backbone.

    A model_type with no native family is counted by transformers on the meta device when it
    is installed and ``fallback`` is on (:mod:`paramcount.frontends.fallback`)."""
    if not isinstance(raw, Mapping):
        raise ParamcountError(f"expected a JSON object, got {type(raw).__name__}", source=source)
    raw = {**raw, **(overrides or {})}
    given = [k for k in (overrides or {}) if k != "model_type"]
    if num_labels is not None:
        raw = {k: v for k, v in raw.items() if k not in ("id2label", "label2id")} | {"num_labels": num_labels}
    mtype = model_type(raw, source)
    if not is_native(mtype):
        return _fallback(raw, source, mtype, name, model_class, fallback)
    fam = family(mtype, source)
    cfg = fam.cfg(raw, source)
    try:
        if fam.check:
            fam.check(cfg)
        cls, notes = pick_class(fam, raw, model_class, source)
        tree, backbone = fam.build(cls, cfg)
    except ParamcountError as e:  # a composite with a tower only transformers knows goes to the fallback
        tower_type = getattr(e, "model_type", None)  # set by arch.towers.NoNativeTower only
        if not (tower_type and fallback and _transformers_can(mtype) and _transformers_can(tower_type)):
            raise
        from . import fallback as fb

        return fb.from_transformers(raw, source, mtype, name=name, model_class=model_class, notes=(str(e),))
    notes += placed_by_name(raw, fam, cls)
    notes += fam.notes(cfg, cls) if fam.notes else []
    unused = [k for k in given if k not in cfg.seen]
    check_fields(fam, unused, source)
    notes += [f"{k} was given but changes no parameter of {fam.model_type}" for k in unused]
    if source.startswith("--arch"):
        notes += plain_notes(fam, cfg, cls, model_class)
    return Model(
        name=name or source,
        source=source,
        model_type=fam.model_type,
        class_name=cls,
        tree=tree,
        backbone_class=fam.backbone_of(cls),
        backbone=backbone,
        config=raw,
        notes=tuple(notes),
    )


def plain_notes(fam: Family, cfg: Any, cls: str, model_class: str | None) -> list[str]:
    """What plain dimensions (--arch) left to the family: the fields it filled in, and the class
    counted when none was asked for (the backbone: a config without ``architectures`` names none)."""
    taken = [f"{f} = {v}" for f, v in fam.defaults.items() if f in cfg.seen and not cfg.has(f) and v is not None]
    notes = [f"not given, so {fam.model_type}'s defaults: {', '.join(taken)}"] if taken else []
    heads = [c for c in fam.classes if c != cls]
    if model_class is None and heads:
        head = next((c for c in heads if c.endswith(("ForCausalLM", "ForConditionalGeneration"))), heads[0])
        notes.append(f"counted as {cls}, the backbone alone: --class {head} (or another class) adds a head")
    return notes


# Fields paramcount reads outside a family's own config class (transformers keeps them as extra
# attributes, and its caches read them), so --set takes them for any family.
EXTRA_FIELDS = frozenset(
    {"sliding_window", "layer_types", "attention_chunk_size", "use_sliding_window", "max_window_layers"}
    | {"num_labels", "torch_dtype", "rope_scaling", "rope_theta", "partial_rotary_factor"}
)


def check_fields(fam: Family, names: list[str], source: str) -> None:
    """A field given with --set that the family's transformers config class does not have is a
    typo until shown otherwise: one line with the closest real names. The fields a family reads
    (its defaults, aliases and ``extra_fields``) count as known too."""
    if not names:
        return
    fields = _config_fields().get(fam.model_type)
    if fields is None:
        return
    read = {*fam.defaults, *fam.extra_fields, *(n for names in fam.aliases.values() for n in names)}
    known = sorted({*fields, *read})
    model_type = fam.model_type
    for name in names:
        if name not in known and name not in EXTRA_FIELDS:
            import difflib

            close = difflib.get_close_matches(name, [*known, *EXTRA_FIELDS], n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ParamcountError(
                f"{name!r} is not a field of {model_type}'s transformers config{hint}", source=source, field="--set"
            )


@cache
def _config_fields() -> dict[str, list[str]]:
    from importlib import resources

    return json.loads((resources.files("paramcount") / "arch" / "config_fields.json").read_text())


def is_native(model_type: Any) -> bool:
    return isinstance(model_type, str) and model_type.replace("-", "_") in supported()


def _transformers_can(model_type: str) -> bool:
    from . import fallback as fb

    return fb.can_count(model_type)


def _fallback(
    raw: Mapping[str, Any], source: str, mtype: Any, name: str | None, model_class: str | None, allowed: bool
) -> Model:
    """A model_type paramcount does not know natively: transformers counts it, or one line why not."""
    from . import fallback

    if allowed and fallback.can_count(mtype):
        return fallback.from_transformers(raw, source, mtype, name=name, model_class=model_class)
    refused = fallback.remote_code_error(raw, source) if allowed and fallback.available() else None
    raise refused or fallback.unknown(mtype, source, supported())


def from_file(path: str | Path, **kwargs: Any) -> Model:
    from pathlib import Path

    p = config_path(Path(path))
    return from_config(read_json(p), str(p), name=str(path), **kwargs)
