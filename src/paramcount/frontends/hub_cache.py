"""The Hugging Face cache as huggingface_hub lays it out (file_download.py ``hf_hub_download``):
``models--org--name/refs/<revision>`` holds a commit, ``snapshots/<commit>/<file>`` links to
``blobs/<etag>``. Read without huggingface_hub (whose download functions reach for the network
even for cached files), and written only with a file that passed every limit and whose bytes
match the name the Hub gave them."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from ..errors import ParamcountError

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_ETAG = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REVISION = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")


def root() -> Path:
    """HF_HUB_CACHE, else HF_HOME/hub, else huggingface_hub's default; read now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def revision_name(revision: str | None, source: str) -> str:
    """The revision (a branch, tag or commit) as a path under refs/ may spell it: never ``..``."""
    rev = revision or "main"
    if len(rev) > 200 or not _REVISION.match(rev) or ".." in rev.split("/"):
        raise ParamcountError(f"{rev[:200]!r} is not a revision name", source=source, field="revision")
    return rev


def repo_folder(repo_id: str) -> Path:
    return root() / f"models--{repo_id.replace('/', '--')}"


def snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot folder of ``revision`` (a commit, or a ref the cache names), if any."""
    rev = revision_name(revision, repo_id)
    folder = repo_folder(repo_id)
    commit = rev if COMMIT.match(rev) else _ref(folder / "refs" / rev)
    return folder / "snapshots" / commit if commit else None


def _ref(path: Path) -> str | None:
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        with open(path, "rb") as f:
            text = f.read(100).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text if COMMIT.match(text) else None


def _matches(data: bytes, etag: str) -> bool:
    """Whether ``data`` is what the Hub's ETag names: git's blob hash for a plain file, sha256
    for a large (LFS) one."""
    if len(etag) == 64:
        return hashlib.sha256(data).hexdigest() == etag
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == etag


def store(repo_id: str, revision: str | None, name: str, data: bytes, commit: str, etag: str) -> Path | None:
    """Write ``name`` (checked already) as huggingface_hub would: its snapshot folder, or None when
    the Hub's commit or ETag is not one (a mirror's, a hostile server's) or the cache is not
    writable: then nothing is written and the count goes on from memory."""
    etag, rev = etag.removeprefix("W/").strip('"'), revision_name(revision, repo_id)
    if not COMMIT.match(commit) or not _ETAG.match(etag) or not _matches(data, etag):
        return None
    folder = repo_folder(repo_id)
    blob, snap = folder / "blobs" / etag, folder / "snapshots" / commit
    try:
        _write(blob, data)
        _link(snap / name, blob)
        if rev != commit:
            _write(folder / "refs" / rev, commit.encode())
    except OSError:
        return None
    return snap


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.incomplete")
    try:
        part.write_bytes(data)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _link(path: Path, blob: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    try:
        path.symlink_to(os.path.relpath(blob, path.parent))
    except OSError:  # no symlinks (Windows without developer mode): a copy, as huggingface_hub does
        _write(path, blob.read_bytes())
