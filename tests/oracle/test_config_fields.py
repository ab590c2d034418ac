"""``arch/config_fields.json``: each native family's transformers config fields (its dataclass
fields and attribute_map names), which ``--set`` checks a field against. Generated from
transformers and held equal to it; ``UPDATE_FIELDS=1`` rewrites it (after adding a family)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from paramcount.arch import family, supported

transformers = pytest.importorskip("transformers")

PATH = Path(__file__).parent.parent.parent / "src" / "paramcount" / "arch" / "config_fields.json"


def fields() -> dict[str, list[str]]:
    out = {}
    for module in supported():
        mt = family(module).model_type
        cls = transformers.CONFIG_MAPPING[mt]
        out[mt] = sorted({f.name for f in dataclasses.fields(cls)} | set(getattr(cls, "attribute_map", {})))
    return out


def test_config_fields_are_transformers_own():
    expected = fields()
    if os.environ.get("UPDATE_FIELDS"):
        PATH.write_text(json.dumps(expected, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(PATH.read_text(encoding="utf-8")) == expected, (
        "stale: UPDATE_FIELDS=1 python -m pytest " + __file__
    )
