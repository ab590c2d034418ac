"""``arch/config_fields.json``: each native family's transformers config fields (its dataclass
fields and attribute_map names), which ``--set`` checks a field against; ``arch/config_positions.json``:
the position limit its config class defaults to, which a config without one gets from
transformers (and llama.cpp's converter, which loads configs through ``AutoConfig``). Generated
from transformers and held equal to it; ``UPDATE_FIELDS=1`` rewrites them (after adding a family)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from paramcount.arch import family, supported

transformers = pytest.importorskip("transformers")

PATH = Path(__file__).parent.parent.parent / "src" / "paramcount" / "arch" / "config_fields.json"
POSITIONS = PATH.with_name("config_positions.json")


def fields() -> dict[str, list[str]]:
    out = {}
    for module in supported():
        mt = family(module).model_type
        cls = transformers.CONFIG_MAPPING[mt]
        out[mt] = sorted({f.name for f in dataclasses.fields(cls)} | set(getattr(cls, "attribute_map", {})))
    return out


def _held(path, expected: dict) -> None:
    """``path`` holds ``expected``; UPDATE_FIELDS=1 writes it."""
    if os.environ.get("UPDATE_FIELDS"):
        path.write_text(json.dumps(expected, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == expected, (
        "stale: UPDATE_FIELDS=1 python -m pytest " + __file__
    )


def test_config_fields_are_transformers_own():
    _held(PATH, fields())


def positions() -> dict[str, int]:
    from paramcount.memory.core.limits import POSITION_FIELDS

    out = {}
    for module in supported():
        mt = family(module).model_type
        default = transformers.CONFIG_MAPPING[mt]()
        value = next((getattr(default, n, None) for n in POSITION_FIELDS if getattr(default, n, None)), None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[mt] = value
    return out


def test_config_positions_are_transformers_defaults():
    _held(POSITIONS, positions())
