"""What a browser may send becomes a Model, without ever naming a path on the server.

A client names a catalog entry, or sends a config.json as JSON, a ``print(model)`` text, or
the header bytes of a safetensors or GGUF file (the browser reads those bytes and nothing
more). On a page served to this machine alone it may also name a model of Ollama's store
(``ollama:NAME``, a name the store's own rules check, never a path) or one GGUF file of a Hub
repository (``org/repo:QUANT``, its header read by bounded range requests). Each goes through
the same readers as the command line; none of them is ever taken as a file name, and none is
evaluated.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError
from ..model import Model
from ..records import replace

MAX_HEADER_UPLOAD = 32 << 20  # GGUF headers carry the tokenizer: ~8 MB for Llama 3, more for 256k vocabularies
MAX_UPLOADS_KEPT = 16  # parsed headers kept for the page to ask about again (class, memory)
MAX_UPLOAD_BYTES = 1 << 30  # what the kept uploads may weigh together, as UPLOAD_WEIGHT estimates it
UPLOAD_WEIGHT = 10  # a parsed header's Python objects against its bytes (GGUF token arrays: ~8x)
_CATALOG_NAME = re.compile(r"[\w.+\-/]{1,200}")
_UNSAFE_NAME = re.compile(r"[^\w.+\- ()\[\]]")


def catalog_model(name: str, **opts: Any) -> Model:
    """A bundled catalog entry by hub id or alias; never a path, never the Hub."""
    from ..frontends import catalog

    entry = catalog.find(name) if _CATALOG_NAME.fullmatch(name) else None
    if entry is None:
        names = [n for e in catalog.entries() for n in (e.id, *e.aliases)]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ParamcountError(f"not in the catalog{hint}", source=name[:200], field="name")
    return catalog.count(entry, **opts)


def config_model(config: Mapping[str, Any], **opts: Any) -> Model:
    """A config.json the page sent as a JSON object."""
    from ..frontends.config import from_config

    return from_config(config, "config.json", name="pasted config.json", **opts)


def printout_model(text: str, tied: bool | None, model_class: str | None) -> tuple[Model, list[str]]:
    """The text of ``print(model)``, parsed by its brackets (never evaluated).

    The text fixes its class; ``base`` counts its backbone (the module inside that the
    family names), as ``--class base`` does for a config."""
    from ..frontends.printout import from_text

    model = from_text(text, "pasted print(model)", tied=tied).model
    choices = ["base"] if model.backbone_class != model.class_name else []
    if model_class in (None, "auto", model.class_name):
        return model, choices
    if model_class in ("base", model.backbone_class):
        return with_backbone_tree(model), choices
    raise ParamcountError(
        f"a print(model) text counts the class it shows; choose {model.class_name} or base ({model.backbone_class})",
        field="model_class",
    )


def family_classes(model: Model) -> list[str]:
    """``base`` and every class the model's family defines (where a config names the family)."""
    from ..arch import family

    if model.counted_by != "paramcount":  # the transformers fallback: the classes transformers maps
        from ..frontends import fallback

        mapped = fallback.classes(model.model_type) if fallback.known(model.model_type) else [model.class_name]
        return ["base", *mapped]
    return ["base", *family(model.model_type).classes]


def load(source: Any, model_class: str | None, num_labels: int | None, overrides: list[str], uploads: Uploads):
    """(Model, the classes the page may offer besides auto) for a request's source."""
    from ..frontends.dims import parse_set

    fields = parse_set(overrides) or None  # the CLI's --set FIELD=VALUE, read the same way
    if fields and source.kind not in ("catalog", "config"):
        raise ParamcountError("config fields can be set only for a catalog model or a config.json", field="overrides")
    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": fields}
    if source.kind == "catalog":
        model = catalog_model(source.name, **opts)
        return model, family_classes(model)
    if source.kind == "config":
        model = config_model(source.config, **opts)
        return model, family_classes(model)
    if source.kind == "printout":
        return printout_model(source.text, source.tied, model_class)
    if source.kind == "store":
        return store_model(source.name, model_class), []
    up = uploads.get(source.id)
    model = upload_model(up, model_class, num_labels)
    has_family = up.config is not None and model.class_name != "checkpoint"
    return model, family_classes(model) if has_family else []


def store_model(name: str, model_class: str | None) -> Model:
    """``ollama:NAME`` from Ollama's store, or ``org/repo:QUANT``: one GGUF file on the Hub
    (what the CLI's loader reads for these names)."""
    from ..frontends import hub_gguf, stores

    if model_class not in (None, "auto"):
        raise ParamcountError("a GGUF file counts what it stores; it has no class to choose", field="model_class")
    if name.startswith("ollama:"):
        return stores.load_ollama(name.removeprefix("ollama:"))
    named = hub_gguf.split(name)
    if named is None or named[1] is None:
        raise ParamcountError(
            "expected ollama:NAME or org/repo:QUANT (one GGUF file of a Hub repository, like Q4_K_M)", field="name"
        )
    return hub_gguf.load(*named)


def gguf_header(source: Any, uploads: Uploads | None) -> Any:
    """An uploaded GGUF file's parsed header (what Ollama's plan reads), else None."""
    if source.kind != "upload" or uploads is None:
        return None
    up = uploads.get(source.id)
    return up.parsed if up.format == "gguf" else None


def with_backbone_tree(model: Model) -> Model:
    """The model with its backbone as the counted tree: what ``paramcount explain`` derives."""
    return replace(model, tree=model.backbone, class_name=model.backbone_class)


# --- header bytes from the browser ---------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """A file's header as the browser sent it, parsed; ``size`` is the whole file's length."""

    format: str
    name: str
    size: int
    parsed: Any  # safetensors: a Read; gguf: a GGUFFile; None: a heavy header, read in a worker (Held)
    config: Mapping[str, Any] | None = None
    header: bytes = b""  # the bytes of a heavy header, kept unparsed


def heavy_safetensors(fmt: str, name: str, size: int, header: bytes, config: Mapping[str, Any] | None) -> Upload:
    """A large safetensors header, checked (in a worker) and held as bytes: every request on it is
    answered in a worker, which reads it again (a parsed header of 100k tensors weighs ~50 times
    its bytes, and sending it back across the pipe costs seconds of the server's time)."""
    parsed = parse_upload(fmt, name, size, header, config)
    return Upload(fmt, parsed.name, size, None, config, header)


class Held:
    """One upload, sent to a worker process with its request (Uploads holds a lock, which no
    process can share); a heavy header is parsed there, once."""

    def __init__(self, key: str, up: Upload):
        self.key, self.up = key, up

    def get(self, key: str) -> Upload:
        if key != self.key:
            raise ParamcountError("this upload is no longer held by the server: drop the file again", field="id")
        up = self.up
        if up.parsed is None:
            self.up = parse_upload(up.format, up.name, up.size, up.header, up.config)
        return self.up


def safe_name(name: str) -> str:
    """A client's file name fit to show: its last path part, plain characters, bounded."""
    base = re.split(r"[\\/]", name)[-1]
    return _UNSAFE_NAME.sub("_", base)[:120] or "upload"


def parse_upload(fmt: str, name: str, size: int, header: bytes, config: Mapping[str, Any] | None) -> Upload:
    """Parse header bytes of a safetensors or GGUF file whose full length is ``size``."""
    name = safe_name(name)
    if len(header) > MAX_HEADER_UPLOAD:
        raise ParamcountError(f"header of {len(header):,} bytes; at most {MAX_HEADER_UPLOAD:,} accepted", source=name)
    if size < len(header):
        raise ParamcountError(f"file size {size:,} is smaller than the {len(header):,} header bytes sent", source=name)
    parse = _safetensors if fmt == "safetensors" else _gguf
    return Upload(fmt, name, size, parse(name, size, header), config)


def _safetensors(name: str, size: int, header: bytes) -> Any:
    from ..frontends.safetensors import MAX_HEADER_BYTES, Header, Read, ShardSet, parse_header

    if len(header) < 8:
        raise ParamcountError(f"not a safetensors header: {len(header)} bytes, fewer than 8", source=name)
    n = int.from_bytes(header[:8], "little")
    if n > MAX_HEADER_BYTES:
        raise ParamcountError(f"header length {n:,} is absurd (the format allows {MAX_HEADER_BYTES:,})", source=name)
    if len(header) != 8 + n:
        raise ParamcountError(f"the header is 8 + {n:,} bytes; {len(header):,} were sent", source=name)
    meta, tensors = parse_header(header[8:], size - 8 - n, name, name)
    head = Header(name, size, 8 + n, tuple(tensors), meta)
    return Read(ShardSet(name, ()), (head,), tuple(tensors))


def _gguf(name: str, size: int, header: bytes) -> Any:
    from ..gguf import reader as gguf

    info = gguf.parse_prefix(header, size, name)
    if info is None:
        raise ParamcountError(
            f"the GGUF header runs past the {len(header):,} bytes sent (send the whole header)", source=name
        )
    return info


def upload_model(up: Upload, model_class: str | None, num_labels: int | None) -> Model:
    """The model an upload holds; a config sent beside a safetensors header names class and ties."""
    if up.format == "gguf":
        from ..gguf.reader import to_model

        if model_class not in (None, "auto"):
            raise ParamcountError("a GGUF file counts what it stores; it has no class to choose", field="model_class")
        return to_model(up.parsed)
    from ..frontends.checkpoint import count_read

    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": None}
    config = dict(up.config) if up.config is not None else None
    files = [(up.name, up.size)]
    header = up.parsed.header_bytes
    return count_read(up.parsed, up.name, config, "config.json (pasted)", None, (), files, header, opts, "upload")


class Uploads:
    """The last few parsed uploads by content id, so the page need not send a header twice."""

    def __init__(self, keep: int = MAX_UPLOADS_KEPT, max_bytes: int = MAX_UPLOAD_BYTES):
        self.keep, self.max_bytes, self.items, self.lock = keep, max_bytes, OrderedDict(), threading.Lock()
        self.weights: dict[str, int] = {}

    @staticmethod
    def key(fmt: str, name: str, size: int, header: bytes, config: Mapping[str, Any] | None) -> str:
        h = hashlib.sha256(json.dumps([fmt, name, size, config], sort_keys=True, default=str).encode())
        h.update(header)
        return h.hexdigest()[:32]

    @property
    def weight(self) -> int:
        return sum(self.weights.values())

    def put(self, key: str, up: Upload, header_bytes: int = 0) -> None:
        """Keep ``up``, dropping the oldest past ``keep`` uploads or ``max_bytes`` (the newest stays)."""
        with self.lock:
            self.items[key] = up
            self.weights[key] = header_bytes * UPLOAD_WEIGHT
            self.items.move_to_end(key)
            while len(self.items) > 1 and (len(self.items) > self.keep or self.weight > self.max_bytes):
                old, _ = self.items.popitem(last=False)
                self.weights.pop(old, None)

    def get(self, key: str) -> Upload:
        with self.lock:
            up = self.items.get(key)
            if up is not None:
                self.items.move_to_end(key)
        if up is None:
            raise ParamcountError("this upload is no longer held by the server: drop the file again", field="id")
        return up
