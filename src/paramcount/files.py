"""Opening a file the user named: a regular file only, never blocking, within a size limit.

A name may lead to a FIFO (opening one for reading waits for a writer, for ever), a device
(/dev/zero never ends, /dev/urandom neither), a folder, or, inside a store, a link out of it.
Readers of user-named files open through here: ``O_NONBLOCK`` so that a FIFO cannot hold the
open, then ``fstat`` on the open descriptor (what will be read, not what the name was a moment
before), then the size limit, before a byte is read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from .errors import ParamcountError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING, nor pathlib at import: each is a twentieth of start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import BinaryIO

KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a link",
}


def kind(mode: int) -> str:
    """What a file of ``mode`` is, in words."""
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


@contextlib.contextmanager
def open_regular(path: str | Path, source: str | None = None, *, links: bool = True) -> Iterator[BinaryIO]:
    """``path`` open for reading, or a one-line error when it is not a regular file (a FIFO is
    refused without waiting for a writer). ``links=False``: a link as the last part is refused
    (``O_NOFOLLOW``). An OSError while the caller reads becomes a one-line error too."""
    src = source or str(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ParamcountError("no such file", source=src) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ParamcountError("is a link, which is not followed here (or a loop of links)", source=src) from None
        raise ParamcountError(f"cannot open: {_why(e)}", source=src) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ParamcountError(f"is {kind(mode)}, not a regular file", source=src)
        os.set_blocking(fd, True)
        try:
            yield f
        except OSError as e:
            raise ParamcountError(f"cannot read: {_why(e)}", source=src) from None


def read_regular(
    path: str | Path, limit: int, source: str | None = None, what: str = "the file", *, links: bool = True
) -> bytes:
    """A regular file's bytes, refused past ``limit`` bytes before any is read."""
    src = source or str(path)
    with open_regular(path, src, links=links) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ParamcountError(f"{what} is {size:,} bytes; at most {limit:,} are read", source=src)
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise ParamcountError(f"{what} is over {limit:,} bytes; at most {limit:,} are read", source=src)
    return data


def shown(path: str | Path, limit: int = 200) -> str:
    """A path fit for a one-line message (an OLLAMA_MODELS of 5,000 characters is cut)."""
    text = str(path)
    return text if len(text) <= limit else text[:limit] + "…"


def inside(path: str | Path, root: str | Path, source: str | None = None) -> Path:
    """``path`` with its links resolved, or a one-line error when they lead out of ``root``
    (itself resolved: a store may live behind a link)."""
    from pathlib import Path

    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if not real.is_relative_to(base):
        raise ParamcountError(
            f"links out of the store ({shown(base)}) to {shown(real)}; links out of a store are not followed",
            source=source or str(path),
        )
    return real


def is_inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path``'s links resolve inside ``root`` (loops and unreadable parts: they do not)."""
    try:
        inside(path, root)
    except (ParamcountError, OSError, ValueError):
        return False
    return True
