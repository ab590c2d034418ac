"""GGUF files on the Hugging Face Hub, counted from their headers alone.

``org/name`` lists a repository's GGUF models (quant type, bytes, parameters);
``org/name:Q4_K_M`` or ``org/name:file.gguf`` counts one, with its other shards
(``-00002-of-00003``) and the mmproj file beside it. Each header is read with HTTP range
requests through :mod:`.hubhttp` (one deadline, byte limits, redirects only to HF_ENDPOINT): a
first chunk, then more only while the parser needs it, never past MAX_HEADER_BYTES (the bound
the web page holds uploads to), and each file's header once per command (``Remote`` keeps what
it read). The tree listing is parsed as it arrives, its entries, bytes and pages capped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..errors import ParamcountError
from ..gguf import reader as gguf
from ..model import Model
from . import hubhttp
from .hub import PROBE_SECONDS, _hub, client, looks_like_repo_id, offline, unreachable
from .hub_weights import ranged, resolve_url
from .safetensors import short

FIRST_CHUNK = 1 << 20  # most headers (32k vocabularies) fit in one request; Llama 3's 8 MB in four
MAX_HEADER_BYTES = gguf.MAX_HEADER_BYTES
MAX_TREE_ENTRIES = 20_000  # files listed in a repository before we stop walking its tree
MAX_TREE_BYTES = 16 << 20  # the listing's bytes, inflated, all pages: 20,000 entries are about 6 MB
MAX_PAGES = 100  # the Hub pages its listing by 1,000 entries
MAX_LISTED = 64  # models whose headers a listing reads
MAX_SHARDS = 1024  # files of one split model (llama.cpp's gguf-split numbers them in 5 digits)
MAX_FILE_BYTES = 1 << 50  # a listed size past a petabyte is no file

_SHARD = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.I)


def split(source: str) -> tuple[str, str | None] | None:
    """``(repo_id, selector)`` for ``org/name`` or ``org/name:Q4_K_M``; None for anything else."""
    repo, _, selector = source.partition(":")
    if not looks_like_repo_id(repo) or ".." in selector:  # the selector names a tree entry, never a local path
        return None
    return repo, selector or None


def quant_of(path: str) -> str | None:
    """The llama.cpp file type a file name states (``…-Q4_K_M.gguf`` → Q4_K_M), or None."""
    from ..gguf.meta import FILE_TYPES

    for name in sorted(FILE_TYPES.values(), key=len, reverse=True):
        if re.search(rf"(?<![A-Za-z0-9]){name}(?![A-Za-z0-9])", path, re.I):
            return name
    return None


@dataclass(frozen=True)
class Entry:
    """One model in a repository: its files (all shards, in order) and their bytes."""

    name: str
    files: tuple[tuple[str, int], ...]
    mmproj: bool

    @property
    def size(self) -> int:
        return sum(s for _, s in self.files)

    @property
    def quant(self) -> str | None:
        return quant_of(self.name.rsplit("/", 1)[-1])


def entries(files: dict[str, int]) -> list[Entry]:
    """The repository's GGUF files grouped into models: shards of one model together."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(files):
        m = _SHARD.match(path)
        key = f"{m['stem']}-*-of-{m['count']}.gguf" if m else path
        groups.setdefault(key, []).append((path, files[path]))
    return [Entry(key, tuple(f), "mmproj" in key.rsplit("/", 1)[-1].lower()) for key, f in groups.items()]


class Remote:
    """A repository read through :mod:`.hubhttp` under one deadline: its tree once, each header once."""

    def __init__(self, repo: str, revision: str | None = None, deadline: hubhttp.Deadline | None = None):
        _hub(repo)
        self.repo, self.revision = repo, revision
        if offline():
            why = "reading GGUF headers from the Hub needs the network; HF_HUB_OFFLINE is set"
            raise ParamcountError(why, source=repo)
        self.net = client(repo, deadline)
        self.endpoint = self.net.endpoint
        why = unreachable(self.endpoint, max(0.0, min(PROBE_SECONDS, self.net.deadline.left())))
        if why:
            raise ParamcountError(f"the Hub ({self.endpoint}) {why}", source=repo)
        self.headers: dict[str, gguf.GGUFFile] = {}
        self.requests = 0  # range requests sent

    def files(self) -> dict[str, int]:
        """Every ``.gguf`` file of the repository and its size in bytes (from the tree API),
        refused past MAX_TREE_ENTRIES entries while the listing arrives."""
        out: dict[str, int] = {}
        for i, item in enumerate(self._tree()):
            if i >= MAX_TREE_ENTRIES:
                raise ParamcountError(f"lists more than {MAX_TREE_ENTRIES:,} files; name one", source=self.repo)
            path, size = item.get("path"), item.get("size")
            if item.get("type") == "file" and isinstance(path, str) and path.lower().endswith(".gguf"):
                out[path] = _size(path, size, self.repo)
        return out

    def _tree(self) -> Iterator[dict[str, Any]]:
        """The entries of the tree API's pages (each at most MAX_TREE_BYTES with the pages before it),
        followed through ``Link: next`` on HF_ENDPOINT only, at most MAX_PAGES."""
        rev = quote(self.revision or "main", safe="")
        url: str | None = f"{self.endpoint}/api/models/{self.repo}/tree/{rev}?recursive=true"
        left = [MAX_TREE_BYTES]
        for _ in range(MAX_PAGES):
            with self.net.open(url, self.repo) as answer:
                if answer.status != 200:
                    raise hubhttp.refusal(answer, "file listing")
                yield from hubhttp.json_items(_spent(answer.chunks(left[0], "the file listing"), left), self.repo)
                url = _next(self.net, answer, url, self.repo)
            if url is None:
                return
        raise ParamcountError(f"the Hub's listing goes on past {MAX_PAGES} pages; name a file", source=self.repo)

    def header(self, path: str, size: int) -> gguf.GGUFFile:
        """The header of ``path`` (``size`` bytes on the Hub), read once; a growing buffer fetched
        by range requests, each asking only for bytes not yet held."""
        if path not in self.headers:
            self.headers[path] = self._read(path, size)
        return self.headers[path]

    def _read(self, path: str, size: int) -> gguf.GGUFFile:
        source = f"{self.repo}/{path}"
        url = resolve_url(self.net, self.repo, self.revision, path)
        data = b""
        while True:
            want = min(max(FIRST_CHUNK, 2 * len(data)), MAX_HEADER_BYTES, size)
            if want <= len(data):
                break
            data += self._range(url, len(data), want, source)
            info = gguf.parse_prefix(data, size, source)
            if info is not None:
                return info
        if len(data) >= size:
            gguf.parse(data, source)  # the whole file is held: say what is wrong with it
        raise ParamcountError(f"the GGUF header runs past {MAX_HEADER_BYTES:,} bytes; not read further", source=source)

    def _range(self, url: str, start: int, end: int, source: str) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive): exactly that many, or one line."""
        self.requests += 1
        got = ranged(self.net, url, start, end, source) or b""
        if len(got) != end - start:
            raise ParamcountError(f"the Hub sent {len(got):,} bytes of the {end - start:,} asked for", source=source)
        return got


def _size(path: str, size: Any, repo: str) -> int:
    """A listed file's size: a whole number of bytes a file can have."""
    if isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_FILE_BYTES:
        return size
    raise ParamcountError(f"the Hub lists {short(path)} with a size of {repr(size)[:40]}, not a file's", source=repo)


def _spent(chunks: Iterator[bytes], left: list[int]) -> Iterator[bytes]:
    """``chunks``, their bytes taken from what the listing has ``left``."""
    for chunk in chunks:
        left[0] -= len(chunk)
        yield chunk


def _next(net: hubhttp.Client, answer: Any, url: str, source: str) -> str | None:
    """The next page's address, when the Hub gives one on HF_ENDPOINT."""
    from urllib.parse import urljoin

    link = hubhttp.next_page(answer.header("Link"), source)
    if link is None:
        return None
    target = urljoin(url, link)
    if not net.allowed(target) or hubhttp.origin(target) != net.origin:
        raise ParamcountError(
            f"the Hub's next page is at {target[:200]!r}, not on HF_ENDPOINT: not followed", source=source
        )
    return target


def read_entry(remote: Remote, entry: Entry) -> gguf.GGUFFile:
    """One model's header, its shards merged as a local split model's are: their number checked
    against the file names before any is read, and against the first's ``split.count`` before
    the others are."""
    source = f"{remote.repo}/{entry.name}"
    named = _SHARD.match(entry.files[0][0])
    if len(entry.files) > MAX_SHARDS:
        raise ParamcountError(
            f"is split into {len(entry.files):,} files, more than {MAX_SHARDS:,}; none is read", source=source
        )
    if named and int(named["count"]) != len(entry.files):
        raise ParamcountError(
            f"the file names say {int(named['count'])} shards; the repository holds {len(entry.files)}", source=source
        )
    first = remote.header(*entry.files[0])
    count = first.metadata.get("split.count")
    if len(entry.files) == 1 and not (isinstance(count, int) and count > 1):
        return first
    if count != len(entry.files):
        raise ParamcountError(
            f"split.count says {count} shards; the repository holds {len(entry.files)}", source=source
        )
    infos = [first, *(remote.header(path, size) for path, size in entry.files[1:])]
    return gguf._merge(infos, count, source)


def pick(found: list[Entry], selector: str, repo: str) -> Entry:
    """The model ``selector`` names: a file (any shard of it), or a quant type."""
    sel = selector.lower()
    names = (sel, f"{sel}.gguf")
    by_file = [e for e in found if any(p.lower() in names or p.rsplit("/", 1)[-1].lower() in names for p, _ in e.files)]
    hits = by_file or [e for e in found if not e.mmproj and (e.quant or "").lower() == sel]
    if len(hits) == 1:
        return hits[0]
    quants = sorted({e.quant or e.name for e in found if not e.mmproj})
    if not hits:
        why = f"no GGUF file or quant {selector!r}; the repository holds: {', '.join(quants)}"
        raise ParamcountError(why, source=repo)
    names = ", ".join(e.name for e in hits)
    raise ParamcountError(f"{selector!r} names {len(hits)} files ({names}): give the file name", source=repo)


def projector(found: list[Entry], chosen: Entry) -> Entry | None:
    """The mmproj file beside a model: the only one, else the one of the model's quant, else F16."""
    projectors = [e for e in found if e.mmproj]
    if chosen.mmproj or not projectors:
        return None
    if len(projectors) == 1:
        return projectors[0]
    for quant in (chosen.quant, "F16", "BF16", "F32", "Q8_0"):
        same = [e for e in projectors if e.quant == quant]
        if same:
            return same[0]
    return projectors[0]


class ManyModels(ParamcountError):
    """A repository named without a file: the command line lists its models instead."""

    def __init__(self, remote: Remote, found: list[Entry]):
        self.remote, self.found = remote, found
        quants = ", ".join(sorted({e.quant or e.name for e in found if not e.mmproj}))
        super().__init__(f"holds GGUF files; name one as {remote.repo}:QUANT or :FILE ({quants})", source=remote.repo)


def load(
    repo: str, selector: str | None, revision: str | None = None, deadline: hubhttp.Deadline | None = None
) -> Model:
    """The model ``repo:selector`` names (with its mmproj), counted from headers alone; without
    a selector, ManyModels (the command line lists them). Every request of it, and of the
    listing ManyModels leads to, within one ``deadline`` (a new one when not given)."""
    remote = Remote(repo, revision, deadline)
    found = entries(remote.files())
    if not found:
        raise ParamcountError("holds no .gguf file", source=repo)
    if selector is None:
        raise ManyModels(remote, found)
    return model_of(remote, found, pick(found, selector, repo))


def model_of(remote: Remote, found: list[Entry], chosen: Entry) -> Model:
    info = read_entry(remote, chosen)
    model = gguf.to_model(info)
    if gguf.is_mmproj(info):
        return gguf.with_towers(model)
    extra = projector(found, chosen)
    if extra is None:
        return model
    mm = gguf.to_model(read_entry(remote, extra))
    return gguf.with_mmproj(model, gguf.with_towers(mm), f"{remote.repo}:{chosen.name} + {extra.name}")


@dataclass(frozen=True)
class Row:
    """A line of a repository's listing."""

    file: str
    quant: str
    files: int
    size: int
    parameters: int
    architecture: str


def listing(remote: Remote, found: list[Entry]) -> tuple[list[Row], int]:
    """Every GGUF model of the repository with its parameters (headers only), and how many were
    left unread past MAX_LISTED."""
    rows = []
    for e in found[:MAX_LISTED]:
        info = read_entry(remote, e)
        total = gguf.to_model(info).total
        rows.append(Row(e.name, e.quant or "?", len(e.files), e.size, total, info.architecture or "?"))
    return rows, max(0, len(found) - MAX_LISTED)
