"""The catalog: every row of the tables, and lookup by the names vendors and tools print.

A name is read as a set of words: case, spaces, punctuation and word order do not matter, nor do
vendor words ("NVIDIA GeForce", "AMD Radeon", "Apple", "(R)"), memory types ("HBM3") or an
SXM generation ("SXM4" is "SXM"); "RTX3060" is "RTX 3060". A name matches a row when its words
are the row's key, name or an alias; failing that, when they are a part of exactly one row's
words ("4090", "7995WX"). A part of several rows ("A100", "M2 Max", "4060 Ti") is refused with
the choices; nothing is picked unless the table names a common one (the 12 GB RTX 3060).
"""

from __future__ import annotations

import difflib
import re
from functools import cache

from ..errors import ParamcountError
from . import amd, apple, cpus, nvidia
from .row import Hardware

# words that name no product: vendors and brands, "(R)" and "(TM)", editions, memory types
_VENDOR_WORDS = frozenset((
    "nvidia", "geforce", "amd", "radeon", "instinct", "tesla", "apple", "intel", "r", "tm", "mac", "rtx", "gtx", "rx",
))  # fmt: skip
_NOISE = frozenset((
    "generation", "edition", "processor", "cpu", "gpu", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7",
))  # fmt: skip
_MAX_NAME = 200


def catalog() -> tuple[Hardware, ...]:
    """Every row: NVIDIA, AMD, Apple, then CPUs, each in its table's order."""
    return _rows()


@cache
def _rows() -> tuple[Hardware, ...]:
    return (*nvidia.ALL, *amd.ALL, *apple.ALL, *cpus.ALL)  # keys unique: tests/test_hardware.py


def words(name: str) -> frozenset[str]:
    """``"NVIDIA A100-SXM4-80GB"`` → {a, 100, sxm, 80, gb}: the words a name is compared by."""
    s = name.lower().replace("+", " plus ")
    s = re.sub(r"\b\d+-core\b", " ", s)  # "AMD EPYC 9654 96-Core Processor"
    s = re.sub(r"sxm\d", "sxm", s)
    s = re.sub(r"(?<=\d)gib\b", "gb", s)
    tokens = re.findall(r"[a-z]+|\d+", s)
    return frozenset(t for t in tokens if t not in _VENDOR_WORDS and t not in _NOISE)


def _forms(row: Hardware) -> list[frozenset[str]]:
    return [words(n) for n in (row.key, row.name, *row.aliases)]


@cache
def _index() -> tuple[dict[frozenset[str], tuple[str, ...]], dict[str, Hardware]]:
    """Words → the rows they name. A key or alias outranks a vendor's name that several memory
    sizes share: "RTX 3060" is the 12 GB card's alias and both cards' name."""
    exact: dict[frozenset[str], dict[str, int]] = {}
    for row in _rows():
        named = [(words(row.key), 0), (words(row.name), 1), *((words(a), 0) for a in row.aliases)]
        for form, rank in named:
            ranks = exact.setdefault(form, {})
            ranks[row.key] = min(rank, ranks.get(row.key, rank))
    best = {form: min(ranks.values()) for form, ranks in exact.items()}
    index = {form: tuple(k for k, r in ranks.items() if r == best[form]) for form, ranks in exact.items()}
    return index, {r.key: r for r in _rows()}


def candidates(name: str) -> tuple[Hardware, ...]:
    """The rows ``name`` could mean: those it names exactly, else those it names a part of."""
    exact, by_key = _index()
    query = words(name[:_MAX_NAME])
    if not query:
        return ()
    if query in exact:
        return tuple(by_key[k] for k in exact[query])
    if not any(w.isdigit() for w in query):  # "max", "ultra", "pro" alone name no product
        return ()
    return tuple(r for r in _rows() if any(query <= f for f in _forms(r)))


def lookup(name: str, field: str = "--gpu") -> Hardware:
    """A row by name: ``"NVIDIA GeForce RTX 3060"``, ``"H100 SXM"``, ``"Apple M2 Max 64GB"``, ``"epyc-9654"``.

    Raises :class:`ParamcountError` (one line) for a name that is several rows, listing them, and
    for an unknown name, with the closest names."""
    found = candidates(name)
    if len(found) == 1:
        return found[0]
    shown = name.strip()[:80]
    if found:
        raise ParamcountError(f"{shown!r} is more than one: say {_choices(found)}", field=field)
    raise ParamcountError(f"unknown hardware {shown!r}{_close(name)} (`paramcount hardware` lists them)", field=field)


def _choices(rows: tuple[Hardware, ...]) -> str:
    keys = [r.key for r in rows]
    return ", ".join(keys[:-1]) + f" or {keys[-1]}" if len(keys) > 1 else keys[0]


def _close(name: str) -> str:
    spelled = {" ".join(sorted(f)): r.key for r in _rows() for f in _forms(r)}
    close = difflib.get_close_matches(" ".join(sorted(words(name[:_MAX_NAME]))), list(spelled), n=4, cutoff=0.6)
    keys = list(dict.fromkeys(spelled[c] for c in close))
    return f"; did you mean {', '.join(keys)}?" if keys else ""
