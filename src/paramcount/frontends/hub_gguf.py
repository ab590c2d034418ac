"""GGUF files on the Hugging Face Hub, counted from their headers alone.

``org/name`` lists a repository's GGUF models (quant type, bytes, parameters);
``org/name:Q4_K_M`` or ``org/name:file.gguf`` counts one, with its other shards
(``-00002-of-00003``) and the mmproj file beside it. Each header is read with HTTP range
requests through huggingface_hub's session: a first chunk, then more only while the parser
needs it, never past MAX_HEADER_BYTES (the bound the web page holds uploads to), and each
file's header once per command (``Remote`` keeps what it read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError
from ..gguf import reader as gguf
from ..model import Model
from .hub import _error, _hub, looks_like_repo_id, offline, reachable

FIRST_CHUNK = 1 << 20  # most headers (32k vocabularies) fit in one request; Llama 3's 8 MB in four
MAX_HEADER_BYTES = gguf.MAX_HEADER_BYTES
MAX_TREE_ENTRIES = 20_000  # files listed in a repository before we stop walking its tree
MAX_LISTED = 64  # models whose headers a listing reads
TIMEOUT = 30.0  # seconds per request: the session's default is none

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
    """A repository read through huggingface_hub: its tree once, each header once."""

    def __init__(self, repo: str, revision: str | None = None):
        self.hub = _hub(repo)
        from huggingface_hub.utils import logging as hub_logging

        hub_logging.set_verbosity_error()
        self.repo, self.revision, self.endpoint = repo, revision, self.hub.constants.ENDPOINT
        if offline():
            why = "reading GGUF headers from the Hub needs the network; HF_HUB_OFFLINE is set"
            raise ParamcountError(why, source=repo)
        if not reachable(self.endpoint):
            raise ParamcountError(f"the Hub ({self.endpoint}) did not answer", source=repo)
        self.headers: dict[str, gguf.GGUFFile] = {}
        self.requests = 0  # range requests sent

    def files(self) -> dict[str, int]:
        """Every ``.gguf`` file of the repository and its size in bytes (from the tree API)."""
        api = self.hub.HfApi(endpoint=self.endpoint)
        out: dict[str, int] = {}
        try:
            for i, item in enumerate(api.list_repo_tree(self.repo, recursive=True, revision=self.revision)):
                if i >= MAX_TREE_ENTRIES:
                    raise ParamcountError(f"lists more than {MAX_TREE_ENTRIES:,} files; name one", source=self.repo)
                size = getattr(item, "size", None)
                if item.path.lower().endswith(".gguf") and isinstance(size, int):
                    out[item.path] = size
        except ParamcountError:
            raise
        except Exception as e:  # every failure of the library becomes one line
            raise _error(self.repo, e, False) from None
        return out

    def header(self, path: str, size: int) -> gguf.GGUFFile:
        """The header of ``path`` (``size`` bytes on the Hub), read once; a growing buffer fetched
        by range requests, each asking only for bytes not yet held."""
        if path not in self.headers:
            self.headers[path] = self._read(path, size)
        return self.headers[path]

    def _read(self, path: str, size: int) -> gguf.GGUFFile:
        source = f"{self.repo}/{path}"
        from urllib.parse import quote

        # the Hub's download address (huggingface_hub's HUGGINGFACE_CO_URL_TEMPLATE), on the endpoint read now
        url = f"{self.endpoint}/{self.repo}/resolve/{quote(self.revision or 'main', safe='')}/{quote(path)}"
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
        """Bytes ``start`` to ``end`` (exclusive): at most that many are read, whatever is sent."""
        from huggingface_hub.utils import build_hf_headers

        self.requests += 1
        headers = {**build_hf_headers(), "Range": f"bytes={start}-{end - 1}"}
        try:
            with self.hub.get_session().stream("GET", url, headers=headers, timeout=TIMEOUT) as r:
                if r.status_code != 206:
                    raise ParamcountError(_status(r.status_code), source=source)
                return _body(r, end - start, source)
        except ParamcountError:
            raise
        except Exception as e:
            raise ParamcountError(f"the Hub could not be read: {type(e).__name__}: {e}", source=source) from None


def _status(code: int) -> str:
    if code == 200:
        return "the server ignored the range request (HTTP 200, the whole file): not downloaded"
    if code == 404:
        return "no such file on the Hub (HTTP 404)"
    if code in (401, 403):
        return f"HTTP {code}: gated or private; log in (HF_TOKEN)"
    return f"the Hub answered HTTP {code} to a range request"


def _body(response: Any, n: int, source: str) -> bytes:
    chunks, got = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk[: n - got])
        got += len(chunks[-1])
        if got >= n:
            break
    if got != n:
        raise ParamcountError(f"the Hub sent {got:,} bytes of the {n:,} asked for", source=source)
    return b"".join(chunks)


def read_entry(remote: Remote, entry: Entry) -> gguf.GGUFFile:
    """One model's header, its shards merged as a local split model's are."""
    infos = [remote.header(path, size) for path, size in entry.files]
    count = infos[0].metadata.get("split.count")
    if len(infos) == 1 and not (isinstance(count, int) and count > 1):
        return infos[0]
    if count != len(infos):
        raise ParamcountError(
            f"split.count says {count} shards; the repository holds {len(infos)}", source=f"{remote.repo}/{entry.name}"
        )
    return gguf._merge(infos, count, f"{remote.repo}/{entry.name}")


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


def load(repo: str, selector: str | None, revision: str | None = None) -> Model:
    """The model ``repo:selector`` names (with its mmproj), counted from headers alone; without
    a selector, ManyModels (the command line lists them)."""
    remote = Remote(repo, revision)
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
