"""The house's layers (docs/architecture.md), checked on the source as it is: the contracts in
pyproject.toml (import-linter), no import circle anywhere in src/ (imports inside functions
included), and no room below the loader reaching back up to ``paramcount`` itself."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
# The rooms that take a Model and never resolve a source themselves.
LOW = ("memory", "arch", "frontends", "gguf", "family", "formula", "loader")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("paramcount", cache_dir=None)


def test_the_import_contracts_are_kept():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    report = out.getvalue()
    assert code == 0, report
    assert "3 kept, 0 broken" in report, report


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return out


def test_no_import_circles(graph):
    assert _circles(graph) == []


def test_the_circle_finder_finds_one(graph):
    graph.add_import(importer="paramcount.ir", imported="paramcount.model", line_number=1, line_contents="x")
    assert ["paramcount.count", "paramcount.ir", "paramcount.model"] in _circles(graph)
    graph.remove_import(importer="paramcount.ir", imported="paramcount.model")


def test_no_low_room_calls_the_top(graph):
    """``from .. import load`` in a planner or a front end: the loader's callers are above it."""
    callers = graph.find_modules_that_directly_import("paramcount")
    low = sorted(m for m in callers if m.split(".")[1] in LOW)
    assert low == []
