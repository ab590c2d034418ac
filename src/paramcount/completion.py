"""Shell completion for bash, zsh and fish, generated from the command line's own parsers.

One source of truth: each command's flags and fixed choices are read from the very argparse parser
that command builds, and the words a flag takes from the tables the library checks them against
(the catalog, the GPU table, the runtimes, the weight and cache schemes). So a new flag, model or
GPU is completed as soon as it exists; re-run ``paramcount completion SHELL`` after an upgrade.

Imported only by ``paramcount completion``: the rest of the command line never pays for it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

SHELLS = ("bash", "zsh", "fish")

# What a script embeds is only ever these characters: nothing from a table can break out of the
# shell's quoting (a word with anything else is left out rather than escaped).
_SAFE = re.compile(r"[A-Za-z0-9._/+@-]+")


@dataclass(frozen=True)
class Option:
    strings: tuple[str, ...]  # --flash-attn, -fa
    takes: bool  # a value follows
    words: tuple[str, ...]  # the values it takes, where they are a fixed set
    files: bool  # the value is a file to write or read
    help: str
    repeat: bool = False
    metavar: str = "VALUE"  # what the value is called (N, NAME), where zsh shows it


@dataclass(frozen=True)
class Command:
    name: str
    options: tuple[Option, ...]
    models: bool  # its positional arguments are models: catalog names or files
    help: str
    words: tuple[str, ...] = ()  # a positional argument's fixed set (completion's shells)


class _Built(Exception):
    """Carries the parser a command built out of it, before it parses anything."""


def parser(command: str, table: Mapping[str, Callable[[list[str]], int]], cls: type) -> argparse.ArgumentParser:
    """The parser ``paramcount COMMAND`` builds, taken from the command itself (``table``: the
    CLI's commands, ``cls``: the parser class they build): each ``run_*`` builds its parser and
    then parses, so parsing is stopped there and the parser kept. (parse_known_args is what
    parse_args and every other parse_* calls.)"""

    def built(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Built(self)

    own = cls.__dict__.get("parse_known_args")
    cls.parse_known_args = built
    try:
        table[command]([])
    except _Built as b:
        return b.args[0]
    finally:
        if own is None:
            del cls.parse_known_args  # argparse's again
        else:
            cls.parse_known_args = own
    raise RuntimeError(f"paramcount {command} returned without parsing its arguments")


def catalog_names() -> tuple[str, ...]:
    """Every catalog model's hub id and aliases."""
    from .frontends import catalog

    return tuple(sorted({n for e in catalog.entries() for n in (e.id, *e.aliases)}, key=str.lower))


def _families() -> tuple[str, ...]:
    from .frontends import catalog

    return tuple(sorted({e.config.get("model_type", "") for e in catalog.entries()} - {""}))


def _value_words() -> dict[str, tuple[str, ...]]:
    """The words a flag takes that argparse does not know as choices (its type checks them)."""
    from .memory.context.kv_cache import CACHE_DTYPES
    from .memory.core.gpus import GPUS
    from .memory.runtimes import RUNTIMES
    from .memory.weights.base import SCHEMES

    families = _families()
    return {
        "gpu": tuple(GPUS),
        "runtime": (*RUNTIMES, "ollama"),  # Ollama's own plan (cli.run_ollama), not a planner of runtimes
        "dtype": SCHEMES,
        "kv_dtype": tuple(CACHE_DTYPES),
        "family": families,
        "arch": families,
    }


FILE_FLAGS = ("plot",)  # a flag whose value is a path
MODEL_ARGS = ("model", "models", "a", "b")  # positionals that name a model or a source file


def _option(action: argparse.Action, words: dict[str, tuple[str, ...]]) -> Option:
    takes = action.nargs != 0
    fixed = tuple(str(c) for c in action.choices) if action.choices else words.get(action.dest, ())
    help_text = (action.help or "").replace("%%", "%") if action.help != argparse.SUPPRESS else ""
    return Option(
        tuple(action.option_strings),
        takes,
        tuple(w for w in fixed if _SAFE.fullmatch(w)) if takes else (),
        takes and action.dest in FILE_FLAGS,
        help_text,
        isinstance(action, argparse._AppendAction),
        _metavar(action),
    )


def _metavar(action: argparse.Action) -> str:
    """``N``, ``NAME``; a word list (``{a,b}``) and anything odd read as ``VALUE``."""
    name = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return name if _SAFE.fullmatch(name) else "VALUE"


def commands(table: Mapping[str, Callable[[list[str]], int]], cls: type) -> tuple[Command, ...]:
    """Every command of ``table`` with its options, as its parser has them."""
    values = _value_words()
    out = []
    for name in table:
        p = parser(name, table, cls)
        options = tuple(_option(a, values) for a in p._actions if a.option_strings)
        positionals = [a for a in p._actions if not a.option_strings]
        models = any(a.dest in MODEL_ARGS for a in positionals)
        words = tuple(str(w) for a in positionals for w in a.choices or () if _SAFE.fullmatch(str(w)))
        out.append(Command(name, options, models, p.description or "", words))
    return tuple(out)


def model_names() -> tuple[str, ...]:
    """The catalog names a shell can complete as they are (no quoting needed)."""
    return tuple(n for n in catalog_names() if _SAFE.fullmatch(n))
