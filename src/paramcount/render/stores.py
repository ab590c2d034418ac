"""Tables of models found elsewhere: a Hub repository's GGUF files, the local model stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from .text import n


def _gb(b: int) -> str:
    return f"{b / 1e9:,.2f}"


def gguf_repo_table(rows: Sequence[Any], left: int = 0) -> Table:
    """``paramcount org/name-GGUF``: each model (its shards as one) with its quant, bytes, count."""
    t = Table(show_edge=False, caption=f"{left} more not read (at most 64)" if left else None)
    for col, just in (("file", "left"), ("quant", "left"), ("files", "right"), ("GB", "right")):
        t.add_column(col, justify=just)
    t.add_column("parameters", justify="right")
    t.add_column("architecture")
    for r in rows:
        t.add_row(r.file, r.quant, str(r.files), _gb(r.size), n(r.parameters), r.architecture)
    return t


def local_table(rows: Sequence[Any]) -> Table:
    """``paramcount list --local``: each model found, the name to give paramcount, bytes, count."""
    t = Table(show_edge=False)
    for col, just in (("store", "left"), ("model", "left"), ("GB", "right"), ("parameters", "right")):
        t.add_column(col, justify=just)
    for r in rows:
        t.add_row(r.store, r.name, _gb(r.size), n(r.parameters) if r.parameters is not None else r.note)
    return t
