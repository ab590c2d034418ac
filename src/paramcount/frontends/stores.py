"""Models already on this machine: Ollama's store, the Hugging Face cache, LM Studio's folder.

``ollama:llama3.1:8b`` is read as Ollama reads it (github.com/ollama/ollama): the manifest at
``$OLLAMA_MODELS/manifests/<host>/<namespace>/<model>/<tag>`` (``envconfig.Models``,
``manifest.PathForName``, ``types/model/name.go``: host ``registry.ollama.ai``, namespace
``library``, tag ``latest`` by default) lists layers by media type; the model is the
``application/vnd.ollama.image.model`` blob, each ``…image.projector`` an mmproj, and the
``…image.params`` blob JSON options (``server/images.go`` ``GetModel``), at
``blobs/sha256-<hex>`` (``manifest.BlobsPath``). Every walk is bounded, never follows a link
out of its store, and reads headers only; a manifest, blob or params layer is read only when it
is a regular file inside the store (paramcount.files: no FIFO, device or link out of it).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files
from ..errors import ParamcountError
from ..gguf import reader as gguf
from ..model import Model
from .configfile import loads

MODEL = "application/vnd.ollama.image.model"
PROJECTOR = "application/vnd.ollama.image.projector"
PARAMS = "application/vnd.ollama.image.params"
MAX_MANIFEST_BYTES = 1 << 20
MAX_PARAMS_BYTES = 1 << 20
MAX_WALK = 10_000  # directory entries a store's walk visits before it stops
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")  # no "..", no separators; fullmatch ($ passes a final \n)
_DIGEST = re.compile(r"sha256[:-]([0-9a-fA-F]{64})")  # manifest.BlobsPath's pattern


def ollama_root() -> Path:
    """``$OLLAMA_MODELS``, else ``~/.ollama/models`` (envconfig.Models)."""
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")


def ollama_parts(name: str) -> tuple[str, str, str, str]:
    """host, namespace, model, tag of an Ollama name (``ParseNameBare`` merged with ``DefaultName``)."""
    tag = "latest"
    if name.rfind(":") > name.rfind("/"):
        name, tag = name.rsplit(":", 1)
    parts = name.split("/")
    if not 1 <= len(parts) <= 3:
        raise ParamcountError("not an Ollama model name (model, namespace/model or host/namespace/model)", source=name)
    host, namespace, model = (["registry.ollama.ai", "library"][: 3 - len(parts)] + parts)[-3:]
    for part in (host, namespace, model, tag):
        if not _PART.fullmatch(part):
            raise ParamcountError(f"{part!r} is not a part of an Ollama model name", source=name)
    return host, namespace, model, tag


@dataclass(frozen=True)
class Manifest:
    name: str
    path: Path
    layers: tuple[tuple[str, Path, int], ...]  # media type, blob, bytes
    root: Path  # the store: nothing outside it is read

    @property
    def size(self) -> int:
        return sum(s for _, _, s in self.layers)

    def of(self, media: str) -> list[Path]:
        return [p for m, p, _ in self.layers if m == media]


def _json(path: Path, root: Path, limit: int, what: str) -> Any:
    """A manifest's or params layer's JSON: a regular file inside the store, within ``limit``
    bytes and configfile.MAX_DEPTH levels of nesting."""
    src = str(path)
    raw = files.read_regular(files.inside(path, root, src), limit, src, what, links=False)
    try:
        return loads(raw, src)
    except ParamcountError as e:
        raise ParamcountError(f"{what} is unreadable: {e.message}", source=src) from None


def manifest(root: Path, path: Path, name: str) -> Manifest:
    """The manifest at ``path``: its layers' media types, blobs and sizes, each checked."""
    doc = _json(path, root, MAX_MANIFEST_BYTES, "the manifest")
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list):
        raise ParamcountError("the manifest has no list of layers", source=str(path), field="layers")
    out = []
    for i, layer in enumerate(layers[:1024]):
        d = _DIGEST.fullmatch(str(layer.get("digest", ""))) if isinstance(layer, dict) else None
        size = layer.get("size") if isinstance(layer, dict) else None
        if d is None or not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ParamcountError(
                "expected a mediaType, a sha256 digest and a size", source=str(path), field=f"layers[{i}]"
            )
        out.append((str(layer.get("mediaType")), root / "blobs" / f"sha256-{d[1]}", size))
    return Manifest(name, path, tuple(out), root)


def ollama_manifest(name: str) -> Manifest:
    root = ollama_root()
    path = root / "manifests" / Path(*ollama_parts(name))
    if not _present(path, root, f"ollama:{name}"):
        shown = files.shown(str(root))
        raise ParamcountError(f"no such model in Ollama's store ({shown}): ollama pull {name}", source=f"ollama:{name}")
    return manifest(root, path, name)


def _present(path: Path, root: Path, source: str) -> bool:
    """Whether ``path`` is there (a link or a FIFO too: reading it says what it is); a name the
    system cannot look up (a part over 255 bytes, a folder without permission) is one line."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise ParamcountError(f"cannot read Ollama's store ({files.shown(str(root))}): {why}", source=source) from None
    return True


def read_blob(m: Manifest, path: Path) -> gguf.GGUFFile:
    """A blob's GGUF header: a regular file inside the store, its links never followed out of it."""
    source = f"ollama:{m.name}"
    if not _present(path, m.root, source):
        raise ParamcountError(f"the blob {path.name} is missing from the store", source=source)
    return gguf.read_header(files.inside(path, m.root, str(path)), links=False)


def ollama_model(m: Manifest) -> Model:
    """The model a manifest names: its GGUF blob, with its projector as the model's towers."""
    source = f"ollama:{m.name}"
    blobs = m.of(MODEL)
    if len(blobs) != 1:
        raise ParamcountError(f"the manifest lists {len(blobs)} model layers; one expected", source=source)
    from ..records import replace

    model = replace(gguf.to_model(read_blob(m, blobs[0])), name=source, source=source)
    for proj in m.of(PROJECTOR)[:1]:
        mm = gguf.with_towers(gguf.to_model(read_blob(m, proj)))
        model = gguf.with_mmproj(model, mm, source)
    options = ollama_options(m)
    if options:
        said = ", ".join(f"{k} {v}" for k, v in options.items())
        model = replace(model, notes=(*model.notes, f"Ollama's params layer sets {said}"))
    if options.get("num_gpu", -1) >= 0:
        partial = "partial offload (num_gpu) is not modelled: memory and fit put every layer on the GPU"
        model = replace(model, notes=(*model.notes, partial))
    return model


RUNNER_OPTIONS = ("num_ctx", "num_gpu", "num_batch")  # api/types.go Runner: read when the model loads


def ollama_options(m: Manifest) -> dict[str, int]:
    """The load-time options the params layer sets (``api.Runner``'s json names), whole numbers."""
    out: dict[str, int] = {}
    for path in m.of(PARAMS)[:1]:
        doc = _json(path, m.root, MAX_PARAMS_BYTES, "the params layer")
        if not isinstance(doc, dict):
            raise ParamcountError("the params layer is not a JSON object", source=str(path))
        for key in RUNNER_OPTIONS:
            value = doc.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= 1 << 24:
                    raise ParamcountError(f"expected a whole number, got {value!r}", source=str(path), field=key)
                out[key] = value
    return out


def ollama_context(m: Manifest) -> int | None:
    """The params layer's num_ctx, cut to the model's trained context as Ollama cuts it
    (llm/server.go NewLlamaServer: ``opts.NumCtx > trainCtx`` becomes ``trainCtx``)."""
    asked = ollama_options(m).get("num_ctx", 0)
    if asked <= 0:
        return None
    blobs = m.of(MODEL)
    info = read_blob(m, blobs[0]) if len(blobs) == 1 else None
    trained = info.arch_metadata().get("context_length") if info else None
    return min(asked, trained) if isinstance(trained, int) and trained > 0 else asked


def load_ollama(name: str) -> Model:
    """``ollama:NAME`` counted from its blobs' headers."""
    return ollama_model(ollama_manifest(name))


# --- list --local ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    store: str
    name: str  # ollama:NAME, or org/repo/file in the store
    path: str  # what to give paramcount: ollama:NAME, a file or a folder
    size: int
    parameters: int | None
    note: str = ""


def _walk(root: Path, depth: int, budget: list[int]):
    """Paths ``depth`` levels below ``root``, links never followed, at most MAX_WALK visited."""
    if depth == 0:
        yield root
        return
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if depth > 1 and e.is_dir(follow_symlinks=False):
            yield from _walk(Path(e.path), depth - 1, budget)
        elif depth == 1 and (not e.is_symlink() or _inside(Path(e.path), root)):
            yield Path(e.path)


def _inside(path: Path, root: Path) -> bool:
    """Whether a link resolves inside the store (a Hub snapshot's links point at ../../blobs);
    a loop of links resolves nowhere else, and is said so when read."""
    return len(root.parents) > 1 and files.is_inside(path, root.parents[1])


def _mode(path: Path) -> int:
    """``path``'s file type, links followed (0: absent, unreadable, or a loop: nothing to list)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return 0


def _is_file(path: Path) -> bool:
    return stat.S_ISREG(_mode(path))


def _is_dir(path: Path) -> bool:
    return stat.S_ISDIR(_mode(path))


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


def _row(store: str, name: str, path: str, size: int, count) -> Found:
    try:
        return Found(store, name, path, size, count())
    except ParamcountError as e:
        return Found(store, name, path, size, None, f"unreadable: {e}")


def ollama_found(budget: list[int]) -> list[Found]:
    root = ollama_root()
    rows = []
    for path in _walk(root / "manifests", 4, budget):
        if _is_dir(path):  # anything else is read as a manifest, and says what is wrong with it
            continue
        host, ns, model, tag = path.relative_to(root / "manifests").parts
        name = f"{model}:{tag}" if (host, ns) == ("registry.ollama.ai", "library") else f"{host}/{ns}/{model}:{tag}"
        try:
            m = manifest(root, path, name)
        except ParamcountError as e:
            rows.append(Found("ollama", f"ollama:{name}", f"ollama:{name}", 0, None, f"unreadable: {e}"))
            continue
        rows.append(_row("ollama", f"ollama:{name}", f"ollama:{name}", m.size, lambda m=m: ollama_model(m).total))
    return rows


def hub_cache_root() -> Path:
    from .hub import cache_dir

    return Path(cache_dir() or Path.home() / ".cache" / "huggingface" / "hub")


def hub_found(budget: list[int]) -> list[Found]:
    """models--org--name/snapshots/<revision>/ holding GGUF files or config.json with safetensors."""
    rows = []
    for snap in _walk(hub_cache_root(), 3, budget):
        parts = snap.parts[-3:]
        if len(parts) < 3 or not parts[0].startswith("models--") or parts[1] != "snapshots" or not _is_dir(snap):
            continue
        found = [p for p in _walk(snap, 1, budget) if _is_file(p)]
        repo = parts[0].removeprefix("models--").replace("--", "/", 1)
        rows += _folder_rows("hf-cache", repo, snap, found)
    return rows


def lmstudio_found(budget: list[int]) -> list[Found]:
    """publisher/repo/*.gguf under ~/.lmstudio/models or ~/.cache/lm-studio/models."""
    rows = []
    for root in lmstudio_roots():
        for folder in _walk(root, 2, budget):
            if _is_dir(folder):
                found = [p for p in _walk(folder, 1, budget) if _is_file(p)]
                rows += _folder_rows("lm-studio", "/".join(folder.parts[-2:]), folder, found)
    return rows


def _folder_rows(store: str, label: str, folder: Path, found: list[Path]) -> list[Found]:
    size = sum(_size(p) for p in found)
    ggufs = [p for p in found if p.suffix.lower() == ".gguf"]
    if ggufs:
        models = [p for p in ggufs if "mmproj" not in p.name.lower() and not _later_shard(p.name)]
        return [_row(store, f"{label}/{p.name}", str(p), _size(p), lambda p=p: gguf.from_file(p).total) for p in models]
    if _is_file(folder / "config.json") and any(p.suffix == ".safetensors" for p in found):
        from .checkpoint import load_path

        return [_row(store, label, str(folder), size, lambda: load_path(folder).total)]
    return []


def _later_shard(name: str) -> bool:
    """``-00002-of-00003.gguf`` and on: read with the first shard."""
    m = gguf._SHARD.fullmatch(name)
    return bool(m and int(m["no"]) != 1)


def lmstudio_roots() -> tuple[Path, Path]:
    return Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"


def places() -> list[str]:
    """Where ``list --local`` looks, to say so when it finds nothing."""
    lms = " or ".join(str(p) for p in lmstudio_roots())
    return [f"Ollama's store ({ollama_root()})", f"the Hugging Face cache ({hub_cache_root()})", f"LM Studio ({lms})"]


def local_models() -> list[Found]:
    """Every model in the three stores, each walk bounded by MAX_WALK entries."""
    return [*ollama_found([MAX_WALK]), *hub_found([MAX_WALK]), *lmstudio_found([MAX_WALK])]
