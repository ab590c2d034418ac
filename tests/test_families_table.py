"""The table of families in docs/families.md is generated from the registry and the catalog, never
kept by hand: this test fails when it is stale, and ``UPDATE_DOCS=1`` rewrites it."""

from __future__ import annotations

import os
from pathlib import Path

from paramcount.arch import family, supported
from paramcount.frontends import catalog
from paramcount.frontends.config import model_type

PAGE = Path(__file__).parent.parent / "docs" / "families.md"
HEADER = "| model_type | backbone | other classes | in the catalog |\n|---|---|---|---|\n"


def catalog_names() -> dict[str, list[str]]:
    """model_type -> the catalog's names for it (an alias where it has one)."""
    out: dict[str, list[str]] = {}
    for e in catalog.entries():
        mt = model_type(e.config, e.id).replace("-", "_")
        out.setdefault(mt, []).append(e.aliases[0] if e.aliases else e.id.split("/", 1)[1])
    return out


def table() -> str:
    names = catalog_names()
    rows = []
    for module in supported():
        fam = family(module)
        others = ", ".join(c for c in fam.classes if c != fam.backbone)
        rows.append(f"| `{fam.model_type}` | {fam.backbone} | {others} | {', '.join(sorted(names.get(module, [])))} |")
    return HEADER + "\n".join(rows) + "\n"


def current(text: str) -> tuple[int, int]:
    start = text.index(HEADER)
    return start, text.index("\n\n", start) + 1


def test_families_page_table_is_the_registry():
    text = PAGE.read_text(encoding="utf-8")
    start, end = current(text)
    if os.environ.get("UPDATE_DOCS"):
        PAGE.write_text(text[:start] + table() + text[end:], encoding="utf-8")
        text = PAGE.read_text(encoding="utf-8")
        start, end = current(text)
    assert text[start:end] == table(), "the families table is stale: UPDATE_DOCS=1 python -m pytest " + __file__
