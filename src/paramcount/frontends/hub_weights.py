"""The safetensors headers of a Hub repository, by range requests through :mod:`.hubhttp`.

What huggingface_hub's ``HfApi.get_safetensors_metadata`` (hf_api.py) reads, read within our
limits: ``model.safetensors``'s header (the first FIRST bytes, then the rest of a longer header,
never past MAX_HEADER_BYTES), else ``model.safetensors.index.json`` (at most MAX_INDEX_BYTES)
and each shard's header, the shards counted (at most MAX_SHARDS) before any is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import ParamcountError
from .configfile import loads
from .hubhttp import Client, refusal
from .safetensors import MAX_INDEX_BYTES, MAX_TENSORS, Header, Read, ShardSet, _shard_name, parse_header, short

FIRST = 100_000  # huggingface_hub's first range for a header (hf_api.py, get_safetensors_metadata)
MAX_HEADER_BYTES = 25_000_000  # huggingface_hub's constants.SAFETENSORS_MAX_HEADER_LENGTH
MAX_SHARDS = 1024  # a trillion parameters in bf16 is 400 shards of 5 GB
SINGLE, INDEX = "model.safetensors", "model.safetensors.index.json"


def resolve_url(client: Client, repo: str, revision: str | None, path: str) -> str:
    """The Hub's download address of a file (huggingface_hub's HUGGINGFACE_CO_URL_TEMPLATE)."""
    return f"{client.endpoint}/{repo}/resolve/{quote(revision or 'main', safe='')}/{quote(path)}"


def read(client: Client, repo: str, revision: str | None) -> Read | None:
    """The repository's safetensors headers; None when it has neither file."""
    single = header(client, repo, revision, SINGLE, missing_ok=True)
    if single is not None:
        return merged([single], "model.safetensors", repo)
    shards = index_shards(client, repo, revision)
    if shards is None:
        return None
    headers, total = [], 0
    for shard in shards:
        headers.append(header(client, repo, revision, shard))
        total += len(headers[-1].tensors)
        if total > MAX_TENSORS:
            raise ParamcountError(
                f"the shards hold more than {MAX_TENSORS:,} tensors; at most that many are read", source=repo
            )
    return merged(headers, INDEX, repo)


def index_shards(client: Client, repo: str, revision: str | None) -> list[str] | None:
    """The shards the index names, in order, counted before any is read; None without an index."""
    source = f"{repo}/{INDEX}"
    with client.open(resolve_url(client, repo, revision, INDEX), source) as answer:
        if answer.status == 404 and answer.header("X-Error-Code") in (None, "EntryNotFound"):
            return None
        if answer.status != 200:
            raise refusal(answer, INDEX)
        raw = answer.read(MAX_INDEX_BYTES, "the index")
    data = loads(raw.decode("utf-8", "replace"), source)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ParamcountError("missing or empty", source=source, field="weight_map")
    shards: dict[str, None] = {}
    for name in weight_map.values():
        if name not in shards:
            _shard_name(Path("."), name, source)  # a file name inside the repository
            if not name.endswith(".safetensors"):
                raise ParamcountError(f"weight_map names {short(name)}, not a .safetensors file", source=source)
            shards[name] = None
            if len(shards) > MAX_SHARDS:
                raise ParamcountError(f"names more than {MAX_SHARDS:,} shards; none is read", source=source)
    return sorted(shards)


def header(client: Client, repo: str, revision: str | None, path: str, missing_ok: bool = False) -> Header | None:
    """One file's header: its first FIRST bytes, then the rest of a longer header."""
    source, url = f"{repo}/{path}", resolve_url(client, repo, revision, path)
    first = ranged(client, url, 0, FIRST, source, missing_ok)
    if first is None:
        return None
    if len(first) < 8:
        raise ParamcountError(f"not a safetensors file: {len(first)} bytes", source=source)
    n = int.from_bytes(first[:8], "little")
    if n > MAX_HEADER_BYTES:
        raise ParamcountError(f"header length {n:,} is past the {MAX_HEADER_BYTES:,} read from the Hub", source=source)
    raw = first[8 : 8 + n]
    if len(raw) < n and len(first) == FIRST:
        raw += ranged(client, url, FIRST, 8 + n, source) or b""
    if len(raw) < n:
        raise ParamcountError(f"header length {n:,} runs past the end of the file", source=source)
    meta, tensors = parse_header(raw, None, source, path)
    return Header(path, 0, 0, tuple(tensors), meta)


def ranged(client: Client, url: str, start: int, end: int, source: str, missing_ok: bool = False) -> bytes | None:
    """Bytes ``start`` to ``end`` (exclusive) or fewer where the file ends; None for a file the
    repository does not hold, when ``missing_ok``."""
    with client.open(url, source, {"Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}) as answer:
        if missing_ok and answer.status == 404 and answer.header("X-Error-Code") in (None, "EntryNotFound"):
            return None
        if answer.status == 416:  # the file ends before ``start``
            return b""
        if answer.status != 206:
            raise range_refusal(answer)
        return answer.read(end - start, "the range asked for")


def range_refusal(answer: Any) -> ParamcountError:
    if answer.status == 200:
        why = "the server ignored the range request (HTTP 200, the whole file): not downloaded"
        return ParamcountError(why, source=answer.source)
    return refusal(answer, "such file")


def merged(headers: list[Header], label: str, source: str) -> Read:
    """Headers of one set, each tensor stored once, as a local shard set's are read."""
    seen: set[str] = set()
    for h in headers:
        twice = next((t.name for t in h.tensors if t.name in seen), None)
        if twice is not None:
            raise ParamcountError(f"tensor {short(twice)} is stored in two files", source=source)
        seen.update(t.name for t in h.tensors)
    n = len(headers)
    shard_set = ShardSet(f"{label} ({n} file{'s' if n != 1 else ''}, headers by range requests)", ())
    return Read(shard_set, tuple(headers), tuple(t for h in headers for t in h.tensors))
