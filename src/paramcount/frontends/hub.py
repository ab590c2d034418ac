"""Hub ids that are not in the catalog, read through ``huggingface_hub`` (the "hub" extra).

Only config.json is downloaded; the weights are counted from their safetensors headers, read
from the local cache when a complete set is there, else with the Hub's range requests
(``get_safetensors_metadata``): kilobytes, not gigabytes. HF_HUB_OFFLINE is honoured (nothing
is fetched; the cache must hold the model) and remote code is never run: ``auto_map`` in a
config is reported, not imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..model import Model
from .checkpoint import count_read, count_set, side_quant
from .config import from_config
from .configfile import read_json
from .safetensors import Header, Read, ShardSet, check_layout, folder_sets, tensor_entry

REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")  # fullmatch: $ passes a final \n
_TRUE = {"1", "on", "yes", "true"}


def looks_like_repo_id(name: str) -> bool:
    """``org/name`` as the Hub spells ids (not a path that happens to have a slash in it)."""
    return bool(REPO_ID.fullmatch(name)) and not name.endswith((".json", ".safetensors")) and ".." not in name


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE), read now, not when huggingface_hub was imported."""
    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if env.strip().lower() in _TRUE:
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


PROBE_SECONDS = 3.0  # one connection attempt to the Hub before any request (its client retries for ~20 s)


def reachable(endpoint: str, seconds: float = PROBE_SECONDS) -> bool:
    """Whether one TCP connection to the Hub's endpoint opens within ``seconds``."""
    return unreachable(endpoint, seconds) is None


def unreachable(endpoint: str, seconds: float = PROBE_SECONDS) -> str | None:
    """Why one TCP connection to the Hub's endpoint does not open within ``seconds`` (None: it
    opens), as the socket says it: a name that does not resolve is not a timeout. The name lookup
    has no timeout of its own, so the attempt runs in a thread that is left behind."""
    import socket
    import threading
    from urllib.parse import urlsplit

    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    result: list[str | None] = []

    def attempt() -> None:
        try:
            socket.create_connection((url.hostname, port), timeout=seconds).close()
            result.append(None)
        except socket.gaierror:
            result.append(f"could not be found: the name {url.hostname} did not resolve (no network or DNS?)")
        except ConnectionRefusedError:
            result.append("refused the connection")
        except TimeoutError:
            result.append(f"did not answer within {seconds:g} s")
        except (OSError, ValueError) as e:
            result.append(f"could not be reached ({getattr(e, 'strerror', None) or e})")

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds)
    return result[0] if result else f"did not answer within {seconds:g} s"


def cache_dir() -> str | None:
    """HF_HUB_CACHE, else HF_HOME/hub, read now; None lets huggingface_hub use its default."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    return os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None


def _hub(repo_id: str):
    try:
        import huggingface_hub
    except ImportError:
        raise ParamcountError(
            "not in the catalog; to read it from the Hugging Face Hub install the extra: pip install 'paramcount[hub]'",
            source=repo_id,
        ) from None
    return huggingface_hub


def _error(repo_id: str, e: Exception, off: bool | str) -> ParamcountError:
    """One line for whatever huggingface_hub raised; ``off`` is why nothing was fetched, if so."""
    name = type(e).__name__
    if name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or (off and isinstance(e, FileNotFoundError)):
        why = off if isinstance(off, str) else "HF_HUB_OFFLINE is set" if off else "the Hub cannot be reached"
        return ParamcountError(f"not in the local Hugging Face cache and {why}: nothing to count", source=repo_id)
    if name == "GatedRepoError":
        return ParamcountError("is gated: accept its licence on the Hub and log in (HF_TOKEN)", source=repo_id)
    if name == "RepositoryNotFoundError":
        return ParamcountError("no such model on the Hub (or it is private; log in with HF_TOKEN)", source=repo_id)
    if name == "RevisionNotFoundError":
        return ParamcountError("no such revision on the Hub", source=repo_id)
    if name in ("EntryNotFoundError", "RemoteEntryNotFoundError"):
        return ParamcountError(_NO_CONFIG, source=repo_id)
    first = str(e).strip().splitlines()[0] if str(e).strip() else name
    return ParamcountError(f"the Hub could not be read: {name}: {first}", source=repo_id)


_NO_CONFIG = "the repository has no config.json"


class NoConfig(ParamcountError):
    """A reachable Hub repository without config.json: a repository of GGUF files, say, which
    :mod:`paramcount.frontends.hub_gguf` reads."""


def _config(hub, repo_id: str, revision: str | None, off: bool | str) -> Path:
    try:
        path = hub.hf_hub_download(
            repo_id, "config.json", revision=revision, cache_dir=cache_dir(), local_files_only=bool(off)
        )
    except Exception as e:  # every failure of the library becomes one line
        raise _error(repo_id, e, off) from None
    return Path(path)


def _local(folder: Path, repo_id: str, opts: Mapping[str, Any]) -> Model | None:
    """The weights as the cache holds them, when a complete set is there."""
    try:
        sets, _ = folder_sets(folder)
        return count_set(sets[0], repo_id, folder, (), opts, where="Hub cache") if sets else None
    except ParamcountError as e:
        if "missing from the folder" in e.message:  # a partly downloaded shard set
            return None
        raise


def _remote(hub, repo_id: str, revision: str | None, folder: Path, config, opts) -> Model | None:
    """Headers by range requests; None when the repository holds no safetensors weights."""
    try:
        meta = hub.get_safetensors_metadata(repo_id, revision=revision)
    except Exception as e:
        if type(e).__name__ == "NotASafetensorsRepoError":
            return None
        if type(e).__name__ == "SafetensorsParsingError":
            raise ParamcountError(f"a safetensors header on the Hub is broken: {e}", source=repo_id) from None
        raise _error(repo_id, e, False) from None
    read = from_metadata(meta, repo_id)
    files = [(f, None) for f in sorted(meta.files_metadata)]
    return count_read(
        read, repo_id, config, f"{repo_id}/config.json", side_quant(folder), (), files, None, opts, where="Hub"
    )


def from_metadata(meta: Any, source: str) -> Read:
    """huggingface_hub's SafetensorsRepoMetadata as the headers of a shard set, checked as ours are."""
    headers, tensors, seen = [], [], set()
    for file, fm in sorted(meta.files_metadata.items()):
        mine = [
            tensor_entry(
                name, {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}, source, file
            )
            for name, t in fm.tensors.items()
        ]
        check_layout(mine, None, f"{source}/{file}")
        twice = next((t.name for t in mine if t.name in seen), None)
        if twice is not None:
            raise ParamcountError(f"tensor {twice!r} is stored in two files", source=source)
        seen.update(t.name for t in mine)
        headers.append(Header(file, 0, 0, tuple(mine), dict(fm.metadata or {})))
        tensors += mine
    label = "model.safetensors.index.json" if meta.sharded else "model.safetensors"
    shard_set = ShardSet(
        f"{label} ({len(headers)} file{'s' if len(headers) != 1 else ''}, headers by range requests)", ()
    )
    return Read(shard_set, tuple(headers), tuple(tensors))


def load(
    repo_id: str,
    revision: str | None = None,
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Model:
    """Count a Hub model: config.json, then the weights' headers (cached, else range requests)."""
    hub = _hub(repo_id)
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # its retry messages would flood the terminal
    off: bool | str = offline()
    why = None if off else unreachable(hub.constants.ENDPOINT)
    if why:
        off = f"the Hub ({hub.constants.ENDPOINT}) {why}"
    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": overrides}
    try:
        config_file = _config(hub, repo_id, revision, off)
    except ParamcountError as e:
        if off or e.message != _NO_CONFIG:
            raise
        raise NoConfig(e.message, source=repo_id) from None  # the loader reads its GGUF files
    folder = config_file.parent
    config = read_json(config_file)
    model = _local(folder, repo_id, opts)
    if model is None and not off:
        model = _remote(hub, repo_id, revision, folder, config, opts)
    if model is None:
        model = from_config(config, f"{repo_id}/config.json", name=repo_id, **opts)
        why = f"{off if isinstance(off, str) else 'HF_HUB_OFFLINE is set'} and the cache holds no complete set"
        why = why if off else "the repository has none"
        model = _noted(model, f"no safetensors weights read ({why}); counted from config.json alone")
    if isinstance(config.get("auto_map"), dict):
        model = _noted(model, "config.json points at custom code (auto_map); it is never run, only the config is read")
    return model


def _noted(model: Model, note: str) -> Model:
    from ..records import replace

    return replace(model, notes=(*model.notes, note))
