"""config.json as read: a bounded JSON object, and the class names its ``architectures`` lists."""

from __future__ import annotations

import json
import stat

from ..errors import ParamcountError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

MAX_CONFIG_BYTES = 16 << 20  # real configs are a few KB; refuse to parse a huge file


def loads(text: str, source: str, field: str | None = None) -> Any:
    """JSON text, or a one-line error: not JSON, nested past Python's recursion limit, or an
    integer past Python's 4,300 digits."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ParamcountError(
            f"not valid JSON (line {e.lineno}, column {e.colno})", source=source, field=field
        ) from None
    except RecursionError:
        raise ParamcountError("not valid JSON: nested too deeply", source=source, field=field) from None
    except ValueError:  # int('9' * 5000): Python refuses integers past 4,300 digits
        raise ParamcountError("holds an integer of more than 4,300 digits", source=source, field=field) from None


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``, or a one-line error naming the file."""
    src = str(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a pipe or device would block or never end
            raise ParamcountError("not a regular file", source=src)
        size = info.st_size
        if size > MAX_CONFIG_BYTES:
            raise ParamcountError(f"file is {size:,} bytes; a config is at most {MAX_CONFIG_BYTES:,}", source=src)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamcountError("no such file", source=src) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ParamcountError(f"cannot read: {e.__class__.__name__}: {e}", source=src) from None
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
