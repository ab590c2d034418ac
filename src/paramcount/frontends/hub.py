"""Hub ids that are not in the catalog, read from the Hugging Face Hub (the "hub" extra).

Only config.json is downloaded (and written to the HF cache once it passed its limits); the
weights are counted from their safetensors headers, read from the local cache when a complete
set is there, else with range requests (:mod:`.hub_weights`): kilobytes, not gigabytes. Every
request goes through :mod:`.hubhttp`: one deadline for the whole command, a byte limit on every
answer, redirects only to HF_ENDPOINT. huggingface_hub gives its settings (HF_ENDPOINT, the
token, the cache's place); its own download functions are not used, since they write a file to
the cache before any limit could refuse it. HF_HUB_OFFLINE is honoured (nothing is fetched; the
cache must hold the model) and remote code is never run: ``auto_map`` in a config is reported,
not imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..model import Model
from . import hub_cache, hubhttp
from .checkpoint import count_read, count_set, side_quant
from .config import from_config
from .configfile import MAX_CONFIG_BYTES, loads, read_json
from .safetensors import folder_sets

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
    """huggingface_hub, imported once HF_ENDPOINT is known to be an address (its constants
    module parses it on import: ``http://[::1`` would be its ValueError)."""
    if os.environ.get("HF_ENDPOINT"):
        hubhttp.endpoint(os.environ["HF_ENDPOINT"])
    try:
        import huggingface_hub
        from huggingface_hub import constants  # noqa: F401  (a lazy attribute: its errors show here)
    except ImportError:
        raise ParamcountError(
            "not in the catalog; to read it from the Hugging Face Hub install the extra: pip install 'paramcount[hub]'",
            source=repo_id,
        ) from None
    except Exception as e:  # a setting it refuses on import
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise ParamcountError(f"huggingface_hub cannot start: {type(e).__name__}: {first}", source=repo_id) from None
    return huggingface_hub


def client(repo_id: str, deadline: hubhttp.Deadline | None = None) -> hubhttp.Client:
    """The bounded client for HF_ENDPOINT (checked here), with the user's token if there is one
    (HF_TOKEN or ``hf auth login``; none when HF_HUB_DISABLE_IMPLICIT_TOKEN is set)."""
    hub = _hub(repo_id)
    token = None
    if not hub.constants.HF_HUB_DISABLE_IMPLICIT_TOKEN:
        try:
            token = hub.get_token()
        except Exception:  # an unreadable token file: go on without one
            token = None
    from importlib.metadata import PackageNotFoundError, version

    try:
        mine = version("paramcount")
    except PackageNotFoundError:  # run from a source tree
        mine = "dev"
    agent = f"paramcount/{mine}; huggingface_hub/{hub.__version__}"
    return hubhttp.Client(hub.constants.ENDPOINT, deadline or hubhttp.Deadline(), token, agent)


_NO_CONFIG = "the repository has no config.json"


class NoConfig(ParamcountError):
    """A reachable Hub repository without config.json: a repository of GGUF files, say, which
    :mod:`paramcount.frontends.hub_gguf` reads (with ``deadline``, what is left of this one)."""

    deadline: hubhttp.Deadline | None = None


def _cached(repo_id: str, revision: str | None, off: str) -> tuple[dict[str, Any], Path]:
    """config.json from the cache, and its snapshot folder."""
    folder = hub_cache.snapshot(repo_id, revision)
    if folder is None or not (folder / "config.json").is_file():
        raise ParamcountError(f"not in the local Hugging Face cache and {off}: nothing to count", source=repo_id)
    return read_json(folder / "config.json"), folder


def _fetched(net: hubhttp.Client, repo_id: str, revision: str | None) -> tuple[dict[str, Any], Path | None]:
    """config.json from the Hub, at most MAX_CONFIG_BYTES and a JSON object before it is written
    to the cache; its snapshot folder there, if written."""
    from .hub_weights import resolve_url

    source = f"{repo_id}/config.json"
    with net.open(resolve_url(net, repo_id, revision, "config.json"), repo_id) as answer:
        if answer.status == 404 and answer.header("X-Error-Code") in (None, "EntryNotFound"):
            error = NoConfig(_NO_CONFIG, source=repo_id)
            error.deadline = net.deadline
            raise error
        if answer.status != 200:
            raise hubhttp.refusal(answer, "config.json")
        data = answer.read(MAX_CONFIG_BYTES, "config.json")
        commit, etag = answer.header("X-Repo-Commit") or "", answer.header("X-Linked-Etag") or answer.header("ETag")
    config = loads(data.decode("utf-8", "replace"), source)
    if not isinstance(config, dict):
        raise ParamcountError(f"expected a JSON object, got {type(config).__name__}", source=source)
    return config, hub_cache.store(repo_id, revision, "config.json", data, commit, etag or "")


def _local(folder: Path | None, repo_id: str, opts: Mapping[str, Any]) -> Model | None:
    """The weights as the cache holds them, when a complete set is there."""
    if folder is None or not folder.is_dir():
        return None
    try:
        sets, _ = folder_sets(folder)
        return count_set(sets[0], repo_id, folder, (), opts, where="Hub cache") if sets else None
    except ParamcountError as e:
        if "missing from the folder" in e.message:  # a partly downloaded shard set
            return None
        raise


def _remote(net: hubhttp.Client, repo_id: str, revision: str | None, folder: Path | None, config, opts) -> Model | None:
    """Headers by range requests; None when the repository holds no safetensors weights."""
    from .hub_weights import read

    found = read(net, repo_id, revision)
    if found is None:
        return None
    files = [(h.file, None) for h in found.headers]
    quant = side_quant(folder) if folder is not None and folder.is_dir() else None
    return count_read(found, repo_id, config, f"{repo_id}/config.json", quant, (), files, None, opts, where="Hub")


def load(
    repo_id: str,
    revision: str | None = None,
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    deadline: hubhttp.Deadline | None = None,
) -> Model:
    """Count a Hub model: config.json, then the weights' headers (cached, else range requests),
    every request within one ``deadline`` (a new one when not given)."""
    _hub(repo_id)
    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": overrides}
    off, net = ("HF_HUB_OFFLINE is set" if offline() else None), None
    if off is None:
        net = client(repo_id, deadline)
        why = unreachable(net.endpoint, max(0.0, min(PROBE_SECONDS, net.deadline.left())))
        off = f"the Hub ({net.endpoint}) {why}" if why else None
    config, folder = _cached(repo_id, revision, off) if off or net is None else _fetched(net, repo_id, revision)
    model = _local(folder, repo_id, opts)
    if model is None and net is not None and not off:
        model = _remote(net, repo_id, revision, folder, config, opts)
    if model is None:
        why = f"{off} and the cache holds no complete set" if off else "the repository has none"
        model = from_config(config, f"{repo_id}/config.json", name=repo_id, **opts)
        model = _noted(model, f"no safetensors weights read ({why}); counted from config.json alone")
    if isinstance(config.get("auto_map"), dict):
        model = _noted(model, "config.json points at custom code (auto_map); it is never run, only the config is read")
    return model


def _noted(model: Model, note: str) -> Model:
    from ..records import replace

    return replace(model, notes=(*model.notes, note))
