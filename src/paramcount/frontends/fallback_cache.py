"""The transformers fallback remembers: each answer its worker gave, kept in the user's cache.

A model counted through the fallback (:mod:`paramcount.frontends.fallback`) costs a child process
that imports torch and transformers and builds the model on the meta device: about 4.5 s and
340 MB each call. Its answer depends only on the request (model_type, config, class, backbone
class) and on the versions that built it, so it is kept as JSON in

    $PARAMCOUNT_CACHE_DIR, else $XDG_CACHE_HOME/paramcount, else ~/.cache/paramcount

under ``fallback/<key>.json``, the key the SHA-256 of the canonical JSON (sorted keys, no spaces)
of the request, the installed transformers' and torch's versions (read from their metadata,
nothing imported) and this file's FORMAT. ``PARAMCOUNT_NO_CACHE=1`` turns it off.

Bounded and distrustful: at most MAX_ENTRIES files and MAX_BYTES in all (the least recently used
go first), no entry over MAX_ENTRY; each is written to a temporary file and renamed into place
(a reader never sees half of one); a read checks the size, the JSON, the format, the key it was
written under and every field's type before the answer is used, and an entry that fails is
removed and counted again. Only JSON is read: nothing is unpickled or evaluated. A cache that
cannot be read or written (a read-only home) is no cache: the count goes on without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 1  # bumped when the answer's shape or its meaning changes: older entries are never read
MAX_ENTRY = 16 << 20  # bytes of one entry (a row per parameter tensor: a 1,000-layer model is ~1 MB)
MAX_ENTRIES = 256
MAX_BYTES = 64 << 20
FOLDER = "fallback"


def folder() -> Path | None:
    """Where the answers are kept, or None when the cache is off (PARAMCOUNT_NO_CACHE)."""
    if os.environ.get("PARAMCOUNT_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no"):
        return None
    root = os.environ.get("PARAMCOUNT_CACHE_DIR") or ""
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or ""
        root = os.path.join(xdg, "paramcount") if os.path.isabs(xdg) else os.path.join("~", ".cache", "paramcount")
    return Path(os.path.expanduser(root)) / FOLDER


def versions() -> dict[str, str | None]:
    """The installed transformers and torch, as their metadata says (nothing is imported)."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for package in ("transformers", "torch"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = None
    return out


def key(request: dict[str, Any]) -> str | None:
    """The SHA-256 of the request with the versions that answer it; None for a request JSON
    cannot write canonically (a NaN in the config: never cached)."""
    try:
        text = json.dumps(
            {"format": FORMAT, "request": request, "versions": versions()},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
            allow_nan=False,
        )
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def get(request: dict[str, Any]) -> dict[str, Any] | None:
    """The kept answer to ``request``, or None (none kept, the cache off, or an entry that fails
    its checks, which is removed)."""
    where, k = folder(), key(request)
    if where is None or k is None:
        return None
    path = where / f"{k}.json"
    try:
        doc = json.loads(_read(path))
        answer = _valid(doc, k)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        _remove(path)
        return None
    _touch(path)
    return answer


def _read(path: Path) -> bytes:
    """The entry's bytes: a regular file (not a FIFO that would block, not a device) of at most
    MAX_ENTRY bytes, read no further than that."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
        raise ValueError("not a regular file of at most MAX_ENTRY bytes")
    with path.open("rb") as f:
        data = f.read(MAX_ENTRY + 1)
    if len(data) > MAX_ENTRY:
        raise ValueError("oversized")
    return data


def put(request: dict[str, Any], answer: dict[str, Any]) -> None:
    """Keep ``answer`` (written whole or not at all), then evict past the bounds."""
    where, k = folder(), key(request)
    if where is None or k is None:
        return
    text = json.dumps({"format": FORMAT, "key": k, "answer": answer}, separators=(",", ":")).encode()
    if len(text) > MAX_ENTRY:
        return
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write(where / f"{k}.json", text)
        evict(where, MAX_ENTRIES, MAX_BYTES)
    except OSError:
        return


def _write(path: Path, data: bytes) -> None:
    """Atomically: a temporary file in the same folder, renamed over the entry."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        _remove(Path(tmp))
        raise


def evict(where: Path, entries: int, size: int) -> list[Path]:
    """Remove the least recently used entries past ``entries`` files or ``size`` bytes (and
    temporary files a killed writer left); the ones removed."""
    found = []
    for p in where.glob("*.json"):
        try:
            st = p.stat()
        except OSError:
            continue
        found.append((st.st_mtime_ns, p.name, st.st_size, p))
    found.sort(reverse=True)  # newest first
    kept, total, gone = 0, 0, []
    for _, name, bytes_, p in found:
        if name.startswith(".tmp-") or kept >= entries or total + bytes_ > size:
            _remove(p)
            gone.append(p)
            continue
        kept, total = kept + 1, total + bytes_
    return gone


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: the last to be evicted


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


# ---- what a kept answer must look like (fallback_build.build's answer) ----------------------------


def _valid(doc: Any, k: str) -> dict[str, Any]:
    """The answer inside ``doc``, if ``doc`` is an entry of this format written under key ``k``
    and every field has the type the fallback reads; else ValueError."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != k:
        raise ValueError("not an entry of this format and key")
    answer = doc["answer"]
    _rows(answer)
    if not isinstance(answer.get("version"), str) or not isinstance(answer.get("prefix"), str):
        raise ValueError("version or prefix")
    if "base" in answer:
        _rows(answer["base"])
    return answer


def _rows(rows: Any) -> None:
    """``{"class", "params": [[name, [dims], dtype]], "ties": {name: target}, "embeddings": [name]}``."""
    if not isinstance(rows, dict) or not isinstance(rows.get("class"), str):
        raise ValueError("rows")
    if not (isinstance(rows.get("params"), list) and isinstance(rows.get("embeddings"), list)):
        raise ValueError("rows")
    for p in rows["params"]:
        if not isinstance(p, list) or len(p) != 3:
            raise ValueError("param")
        name, shape, dtype = p
        if not (isinstance(name, str) and isinstance(dtype, str) and isinstance(shape, list)):
            raise ValueError("param")
        if not all(type(d) is int and 0 <= d < 1 << 62 for d in shape):
            raise ValueError("shape")
    ties = rows.get("ties")
    if not isinstance(ties, dict) or not all(isinstance(a, str) and isinstance(b, str) for a, b in ties.items()):
        raise ValueError("ties")
    if not all(isinstance(e, str) for e in rows["embeddings"]):
        raise ValueError("embeddings")
