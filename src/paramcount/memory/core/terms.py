"""One result type for every memory figure: a term with its bytes, formula and assumptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GB = 10**9
GIB = 2**30


@dataclass(frozen=True)
class Term:
    """A memory figure, shown with how it was computed and what it assumes.

    ``estimate`` marks modelled figures (activations, runtime overhead) as opposed to
    identities (weights, KV cache); ``source`` cites the formula of an estimate. ``parts``
    are sub-terms whose bytes sum to this one. ``host`` marks memory the runtime holds in host
    RAM beside the device the plan is for (llama.cpp's input layer on a GPU): a plan's
    ``total`` leaves it out and its ``host`` sums it, so it is never added to GPU memory.
    ``error`` is an estimate's measured error where it has been held to recorded figures (the
    least and greatest relative error, the number of figures and where they are kept).
    """

    key: str
    label: str
    bytes: int
    formula: str
    assumption: str
    estimate: bool = False
    source: str = ""
    parts: tuple[Term, ...] = ()
    host: bool = False
    error: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs, hashable like the rest

    @property
    def gb(self) -> float:
        return self.bytes / GB

    @property
    def gib(self) -> float:
        return self.bytes / GIB
