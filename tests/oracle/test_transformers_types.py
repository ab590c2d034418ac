"""``frontends/transformers_types.json``: every model_type transformers knows, with the model
classes it maps for each (its ``MODEL_*_MAPPING_NAMES`` tables) and the backbone the fallback
counts by default. The fallback refuses an unknown model_type, or a class outside that list,
from this file alone, without importing transformers. Generated from transformers and held
equal to the installed one; ``UPDATE_TYPES=1`` rewrites it (after upgrading transformers)."""

from __future__ import annotations

import importlib
import json
import os

import pytest

from paramcount.frontends import fallback

transformers = pytest.importorskip("transformers")


def _mapped() -> dict[str, set[str]]:
    from transformers.models.auto import modeling_auto

    out: dict[str, set[str]] = {}
    for name in dir(modeling_auto):
        if name.startswith("MODEL") and name.endswith("_MAPPING_NAMES"):
            for model_type, found in getattr(modeling_auto, name).items():
                out.setdefault(model_type, set()).update(found if isinstance(found, (list, tuple)) else [found])
    return out


def _built_from(model_type: str) -> list[str]:
    """For a sub-model config (``clip_text_model``) that no table maps: the classes of its own
    modeling module built from exactly that config class."""
    config_class = transformers.CONFIG_MAPPING[model_type]
    try:
        modeling = importlib.import_module(config_class.__module__.replace(".configuration_", ".modeling_"))
    except ImportError:
        return []
    return sorted(
        name
        for name, obj in vars(modeling).items()
        if isinstance(obj, type)
        and getattr(obj, "config_class", None) is config_class
        and not name.endswith("PreTrainedModel")
        and hasattr(transformers, name)
    )


def _base(model_type: str, classes: list[str]) -> str | None:
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    found = MODEL_MAPPING_NAMES.get(model_type)
    if found:
        return found[0] if isinstance(found, (list, tuple)) else found
    plain = [n for n in classes if "For" not in n]
    return min(plain or classes, key=len, default=None)


def generate() -> dict:
    """The file's content, from the installed transformers."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    mapped = _mapped()
    types = {}
    for model_type in sorted(CONFIG_MAPPING_NAMES):
        classes = sorted(mapped.get(model_type) or _built_from(model_type))
        types[model_type] = {"base": _base(model_type, classes), "classes": classes}
    return {"transformers": transformers.__version__, "types": types}


def test_the_list_is_the_installed_transformers_own():
    expected = generate()
    if os.environ.get("UPDATE_TYPES"):
        fallback.TYPES_FILE.write_text(json.dumps(expected, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        fallback.types.cache_clear()
    assert fallback.types() == expected, "stale: UPDATE_TYPES=1 python -m pytest " + __file__
