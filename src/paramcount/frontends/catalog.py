"""The bundled catalog: real config.json files of popular models, offline, under their hub ids.

Each entry is one JSON file in ``paramcount/catalog/`` named ``org--name.json``::

    {"id": "google-bert/bert-base-uncased", "aliases": ["bert-base-uncased"],
     "published": {"total": 109482240, "class": "BertModel", "source": "where the figure is printed"},
     "note": "what the model is and where its config comes from",
     "scope": "the text model only: ...",
     "config": {... the model's config.json ...}}

``published`` is optional: only an exact count its authors print (a test holds us to it).
``scope`` is set only where the count is not what the name suggests (the text tower of an
image+text model, a checkpoint's multi-token-prediction layers left out): every output shows it
under the headline, while ``note`` is shown only in ``paramcount list`` and the page's catalog.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache

from ..errors import ParamcountError
from ..records import field, record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

    from ..model import Model

DEFAULT = "google-bert/bert-base-chinese"  # the seed article's model


@record(frozen=True)
class Entry:
    id: str
    config: dict[str, Any]
    aliases: tuple[str, ...] = ()
    published: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    scope: str = ""  # what the count leaves out or departs from, said wherever the count is shown


_SAFE_FILE = re.compile(r"[\w.-]{1,200}")  # what catalog files are named; anything else is no file


def _file_name(model_id: str) -> str:
    return model_id.replace("/", "--") + ".json"


def _parse(text: str) -> Entry:
    data = json.loads(text)
    return Entry(
        id=data["id"],
        config=data["config"],
        aliases=tuple(data.get("aliases", ())),
        published=data.get("published", {}),
        note=data.get("note", ""),
        scope=data.get("scope", ""),
    )


# The package's own folder, not importlib.resources: paramcount is never run from a zip, and
# resources' imports (zipfile, tempfile, shutil) were a tenth of the CLI's start-up.
_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "catalog")


def _read(file: str) -> Entry:
    with open(os.path.join(_FOLDER, file), encoding="utf-8") as f:
        return _parse(f.read())


@cache
def _files() -> tuple[str, ...]:
    return tuple(f for f in os.listdir(_FOLDER) if f.endswith(".json"))


@cache
def entries() -> tuple[Entry, ...]:
    """Every catalog entry, sorted by id."""
    return tuple(sorted((_read(f) for f in _files()), key=lambda e: e.id.lower()))


@cache
def _names() -> dict[str, Entry]:
    return {n.lower(): e for e in entries() for n in (e.id, *e.aliases)}


def find(name: str) -> Entry | None:
    """The entry called ``name`` (its hub id or an alias, any case), or None."""
    file, key = _file_name(name), name.lower()
    if _SAFE_FILE.fullmatch(file) and os.path.isfile(os.path.join(_FOLDER, file)):
        return _read(file)  # the common cases read one file, not the whole catalog: a hub id,
    for f in _files():  # and an alias that is the hub name without its org (bert-base-uncased)
        if f.lower().endswith(f"--{key}.json"):
            entry = _read(f)
            if key in (n.lower() for n in (entry.id, *entry.aliases)):
                return entry
    return _names().get(key)


def get(name: str) -> Entry:
    entry = find(name)
    if entry is None:
        close = suggestions(name)
        hint = f"; did you mean {', '.join(close)}?" if close else "; 'paramcount list' shows the catalog"
        raise ParamcountError(f"not in the catalog, and not a file or folder{ollama_hint(name) or hint}", source=name)
    return entry


def ollama_hint(name: str) -> str:
    """``; did you mean ollama:llama3.1:8b?`` for a name with a tag as Ollama names models
    (``model:tag``, ``namespace/model:tag``), which paramcount reads from Ollama's store only
    when asked with ``ollama:``."""
    if name.startswith("ollama:") or name.rfind(":") <= name.rfind("/"):
        return ""
    from .stores import ollama_parts

    try:
        ollama_parts(name)
    except ParamcountError:
        return ""
    return f"; did you mean ollama:{name} (a model in Ollama's store)?"


def count(entry: Entry, **opts: Any) -> Model:
    """The entry counted from its config (``opts`` as ``from_config`` takes them), its scope said."""
    from ..records import replace
    from .config import from_config

    model = from_config(entry.config, f"catalog:{entry.id}", name=entry.id, **opts)
    return replace(model, scope=(entry.scope,)) if entry.scope else model


def suggestions(name: str, n: int = 5) -> list[str]:
    """Names that start with ``name`` (``bert`` → ``bert-base-cased``, …), else the closest ones;
    short names (aliases) before hub ids."""
    key, names = name.lower(), _names()
    short = sorted((k for k in names if "/" not in k), key=lambda k: (len(k), k))
    starts = [k for k in short if k.startswith(key)] or sorted(k for k in names if k.split("/")[-1].startswith(key))
    if starts:
        return starts[:n]
    import difflib  # only on a miss: it is a tenth of start-up

    return difflib.get_close_matches(key, names, n=3, cutoff=0.5)
