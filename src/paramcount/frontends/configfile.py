"""config.json as read: a bounded JSON object, and the class names its ``architectures`` lists."""

from __future__ import annotations

import json

from ..errors import ParamcountError
from ..files import read_regular

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

MAX_CONFIG_BYTES = 16 << 20  # real configs are a few KB; refuse to parse a huge file
MAX_DEPTH = 64  # arrays and objects inside each other: real configs, manifests and bodies nest 3 to 6 deep


def loads(text: str | bytes, source: str, field: str | None = None) -> Any:
    """JSON text, or a one-line error: not JSON, nested past MAX_DEPTH (or Python's recursion
    limit, which the parser hits first on a long run of ``[``), or an integer past Python's
    4,300 digits. Every JSON read from input goes through here, so that no value nested a
    thousand deep reaches code that walks, copies or pickles it recursively."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParamcountError(
            f"not valid JSON (line {e.lineno}, column {e.colno})", source=source, field=field
        ) from None
    except RecursionError:
        raise ParamcountError("not valid JSON: nested too deeply", source=source, field=field) from None
    except ValueError:  # int('9' * 5000): Python refuses integers past 4,300 digits
        raise ParamcountError("holds an integer of more than 4,300 digits", source=source, field=field) from None
    check_depth(value, source, field)
    return value


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar: 0), counted level by level
    without recursion, and only to ``limit + 1``."""
    found, level = 0, [value]
    while found <= limit:
        level = [v for v in level if isinstance(v, dict | list)]
        if not level:
            break
        found += 1
        level = [c for v in level for c in (v.values() if isinstance(v, dict) else v)]
    return found


def check_depth(value: Any, source: str | None, field: str | None = None, limit: int = MAX_DEPTH) -> None:
    """A one-line error when ``value`` nests arrays and objects more than ``limit`` deep."""
    if depth(value, limit) > limit:
        why = f"nested too deeply: arrays and objects more than {limit} levels deep"
        raise ParamcountError(why, source=source, field=field)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path`` (a regular file of at most MAX_CONFIG_BYTES), or a one-line
    error naming the file."""
    src = str(path)
    raw = read_regular(path, MAX_CONFIG_BYTES, src, "a config")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParamcountError(f"cannot read: UnicodeDecodeError: {e}", source=src) from None
    data = loads(text, src)
    if not isinstance(data, dict):
        raise ParamcountError(f"expected a JSON object, got {type(data).__name__}", source=src)
    return data


def architectures(raw: Mapping[str, Any], source: str) -> list[str]:
    """The config's ``architectures``: a list of class names (an absent or null one is empty)."""
    archs = raw.get("architectures")
    if archs is None:
        return []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise ParamcountError(f"must be a list of class names, not {archs!r:.60}", source=source, field="architectures")
    return archs
