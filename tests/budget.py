"""Bounds on the work a call does, counted rather than timed.

The suite runs on shared machines, where a wall-clock limit fails at random (issue 23 item 7). A
count of function calls or of objects built is the same on every machine and under any load, and
it still fails when a bound regresses: unrolling 4,096 layers, rescanning siblings (quadratic),
or looping over an array length a hostile file states. Each counter stops the work the moment its
budget is spent, so a regression fails at once instead of running for minutes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


class TooMuchWork(AssertionError):
    """A budget of calls or objects spent: raised inside the work, and asserted after it."""


@dataclass
class Count:
    budget: int
    n: int = 0
    over: bool = False
    by_class: dict[str, int] = field(default_factory=dict)


@contextmanager
def calls(budget: int) -> Iterator[Count]:
    """Count the Python and C function calls this thread makes (``sys.setprofile``'s call and
    c_call events) and stop at ``budget``. The count moves with the code, never with the machine;
    profiling costs a few times the work, so it bounds calls that run well under a second."""
    count = Count(budget)

    def profile(frame, event, arg) -> None:
        if event == "call" or event == "c_call":
            count.n += 1
            if count.n > budget:
                count.over = True
                sys.setprofile(None)
                raise TooMuchWork(f"more than {budget:,} calls")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(previous)
        _log(count)
        if count.over:  # also when the work caught TooMuchWork and raised something else
            raise TooMuchWork(f"more than {budget:,} calls")


@contextmanager
def lines(budget: int) -> Iterator[Count]:
    """Count the lines of Python this thread runs (``sys.settrace``'s line events, calls included)
    and stop at ``budget``: the finest count, for loops that call nothing (a scan char by char,
    a rescan of earlier siblings), at ten times the cost of the work, so on small inputs only."""
    count = Count(budget)

    def trace(frame, event, arg):
        count.n += 1
        if count.n > budget:
            count.over = True
            sys.settrace(None)
            raise TooMuchWork(f"more than {budget:,} lines run")
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        yield count
    finally:
        sys.settrace(previous)
        _log(count)
        if count.over:
            raise TooMuchWork(f"more than {budget:,} lines run")


@contextmanager
def built(monkeypatch, budget: int, *classes: type) -> Iterator[Count]:
    """Count the objects of ``classes`` constructed (tree nodes, unrolled leaves, modules) and stop
    at ``budget``: cheap enough for commands that take seconds, and it catches what makes them
    slow, a walk over every unrolled layer where the tree's repeat count should be multiplied."""
    count = Count(budget)
    for cls in classes:
        monkeypatch.setattr(cls, "__init__", _counting(cls.__init__, cls.__name__, count))
    try:
        yield count
    finally:
        for cls in classes:
            monkeypatch.setattr(cls, "__init__", cls.__init__.__wrapped__)
        _log(count)
        if count.over:
            raise TooMuchWork(f"more than {budget:,} objects built: {count.by_class}")


def _log(count: Count) -> None:
    """PARAMCOUNT_BUDGET_LOG=file appends each count to that file: how budgets are set from
    what the work measures (a budget is a few times the most seen)."""
    import os

    path = os.environ.get("PARAMCOUNT_BUDGET_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{count.n}\t{count.budget}\n")


def _counting(init, name: str, count: Count):
    def counted(self, *args, **kwargs) -> None:
        count.n += 1
        count.by_class[name] = count.by_class.get(name, 0) + 1
        if count.n > count.budget:
            count.over = True
            raise TooMuchWork(f"more than {count.budget:,} objects built: {count.by_class}")
        init(self, *args, **kwargs)

    counted.__wrapped__ = init
    return counted
