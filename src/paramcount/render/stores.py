"""Tables of models found elsewhere: a Hub repository's GGUF files, the local model stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from ..errors import printable
from .text import n


def gguf_repo_table(rows: Sequence[Any], left: int = 0) -> Table:
    """``paramcount org/name-GGUF``: each model (its shards as one) with its quant, bytes, count."""
    t = Table(show_edge=False, caption=f"{left} more not read (at most 64)" if left else None)
    for col, just in (("file", "left"), ("quant", "left"), ("files", "right"), ("bytes", "right")):
        t.add_column(col, justify=just)
    t.add_column("parameters", justify="right")
    t.add_column("architecture")
    for r in rows:
        t.add_row(r.file, r.quant, str(r.files), n(r.size), n(r.parameters), r.architecture)
    return t


def local_table(rows: Sequence[Any]) -> Table:
    """``paramcount list --local``: each model found, its bytes and parameters (paths: --json)."""
    t = Table(show_edge=False, caption="each model's path, to give paramcount: list --local --json")
    for col, just in (("store", "left"), ("model", "left"), ("bytes", "right"), ("parameters", "right")):
        t.add_column(col, justify=just)
    for r in rows:
        # a store's folder names are anyone's: a newline in one would split the row (issue 32 item 7)
        note = n(r.parameters) if r.parameters is not None else printable(r.note)
        t.add_row(printable(r.store), printable(r.name), n(r.size), note)
    return t
