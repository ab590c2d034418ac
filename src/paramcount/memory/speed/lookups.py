"""What a token reads of the embedding tables: one row of each, not the table.

An input embedding is a lookup (``nn.Embedding`` in transformers and vLLM's
``VocabParallelEmbedding.forward``, ``ggml_get_rows`` in llama.cpp's ``build_inp_embd``): each
token reads the row of its id, so a decode step reads ``rows × row bytes`` of a table, never the
whole of it. A tied output head is another matter: the head multiplies the hidden state by the
whole table (``lm_head`` is the embedding's weight), so a tied table is read in full once per step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lookups:
    """The embedding tables a step looks rows up in (tied ones excluded: the head reads them whole).

    ``table``: their bytes, what a bound that reads every weight counts; ``row``: the bytes one
    token reads, one row of each table."""

    table: int
    row: int

    def read(self, tokens: int) -> int:
        """Bytes ``tokens`` lookups read (at most the tables themselves)."""
        return min(self.table, tokens * self.row)


def lookups(rows: Iterable[Any]) -> Lookups:
    """The untied embedding tables among weight rows (``kind == "embeddings"``), and one row of each."""
    rows = list(rows)
    tied = {tuple(r.shape) for r in rows if r.role == "tied" and r.kind == "output_head"}
    table = row = 0
    for r in rows:
        if r.kind != "embeddings" or not r.bytes or len(r.shape) != 2:
            continue
        if tuple(r.shape) in tied:  # the head's weight: read whole by the output matmul
            tied.discard(tuple(r.shape))
            continue
        table += r.bytes
        row += r.bytes // int(r.shape[0])  # a row is whole blocks: a quantised row's bytes divide exactly
    return Lookups(table, row)
