"""Sources to counted models: the one place a catalog name, a path, a Hub id, a store name or a
config dict is resolved to its front end. The CLI, the page and the library API call it; nothing
below it (the planners, the families, the front ends) does: they take a :class:`Model`."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ParamcountError
from .model import Model

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from pathlib import Path  # imported where a path is read: a catalog count needs none
    from typing import Any


def load(
    source: str | Path | Mapping[str, Any],
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Model:
    """Count a model from a catalog name, a config.json file or folder, or a config dict.

    ``model_class`` is a transformers class name (``BertModel``, ``LlamaForCausalLM``) or
    ``"base"`` for the backbone; by default the config's ``architectures`` class.
    ``overrides`` replaces config fields (``{"num_hidden_layers": 48}``). A count past
    ``MAX_TOTAL`` is refused.
    """
    return _bounded(_load(source, model_class, num_labels, overrides))


def _load(source, model_class, num_labels, overrides) -> Model:
    from .frontends import catalog
    from .frontends.config import from_config

    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": overrides}
    if isinstance(source, Mapping):
        return from_config(source, "<config>", **opts)
    if str(source) == "-":
        from .frontends import printout

        return printout.read_stdin(printout.tie_of(overrides, "<stdin>"))
    from .frontends.config import exists

    if exists(source):
        from pathlib import Path

        return _load_path(Path(source), opts)
    if catalog.find(str(source)) is None:
        if looks_like_path(str(source)):
            raise ParamcountError("no such file or folder", source=str(source))
        from .frontends import hub

        if hub.looks_like_repo_id(str(source)):
            try:
                return hub.load(str(source), **opts)
            except hub.NoConfig as e:  # a repository of GGUF files has no config.json
                from .frontends import hub_gguf

                return hub_gguf.load(str(source), None, None, e.deadline)
        if ":" in str(source):
            return _load_store(str(source))
    return catalog.count(catalog.get(str(source)), **opts)


FILE_SUFFIXES = (".json", ".gguf", ".safetensors", ".txt")


def looks_like_path(source: str) -> bool:
    """Whether ``source`` is written as a path rather than a name: ``./x``, ``/x``, ``~/x``,
    ``a\\b``, ``a/b/c`` (a Hub id has one slash) or a file's suffix (``x.json``, ``org/x.gguf``);
    ``org/name:file.gguf`` names a file of a Hub repository and ``ollama:NAME`` a model in Ollama's
    store, not paths."""
    repo, colon, _ = source.partition(":")
    if source.startswith("ollama:") or (colon and repo.count("/") == 1 and not repo.startswith((".", "~", "/"))):
        return False  # ollama:NAME, or org/name:FILE of a Hub repository (the file may sit in a folder)
    if source.startswith(("/", "./", "../", "~", ".\\")) or "\\" in source or source.count("/") > 1:
        return True
    return ":" not in source and source.lower().endswith(FILE_SUFFIXES)


# Past this a count is no model (GPT-3 has 1.75e11 parameters; a Mixtral config at every dimension
# bound has 3.71e27): repeats nested in a printout or a header, whose figures would
# overflow every float that memory and compute work in.
MAX_TOTAL = 10**30


def _bounded(model: Model) -> Model:
    if model.total > MAX_TOTAL or model.total_with_ties > MAX_TOTAL:
        digits = int(model.total_with_ties.bit_length() * 0.30103)  # no float: it may be past 1e308
        raise ParamcountError(
            f"counts about 10^{digits} parameters, past 10^30: repeats nested too deeply to be a model",
            source=model.name,
        )
    return model


def _load_path(path: Path, opts: dict[str, Any]) -> Model:
    """A file or folder: a GGUF file, a print(model) text, safetensors weights, else a config."""
    from .frontends import printout
    from .frontends.checkpoint import load_path
    from .frontends.config import from_file
    from .gguf import reader as gguf

    if path.is_file():
        model = gguf.read(path)  # None when the file is not a GGUF file
        if model is None:
            model = printout.read(path, opts["overrides"])  # None unless a printout
        if model is not None:
            return model
    found = load_path(path, **opts)  # None unless safetensors weights are there
    if found is None and path.is_dir():
        found = gguf.from_folder(path)  # a GGUF model, with its mmproj beside it, as one model
    return found if found is not None else from_file(path, **opts)


def _load_store(source: str) -> Model:
    """``org/name:Q4_K_M`` (a GGUF file on the Hub) or ``ollama:llama3.1:8b`` (Ollama's store)."""
    from .frontends import hub_gguf

    if source.startswith("ollama:"):
        from .frontends.stores import load_ollama

        return load_ollama(source.removeprefix("ollama:"))
    named = hub_gguf.split(source)
    if named is None:
        from .frontends import catalog

        return catalog.count(catalog.get(source))  # its error: no such model
    return hub_gguf.load(*named)


def from_module(module: Any, name: str | None = None) -> Model:
    """Count a live torch ``nn.Module`` (any device, meta included); ties from shared tensors."""
    from .frontends.module import from_module as count_module

    return count_module(module, name)


def from_dims(arch: str, model_class: str | None = None, **fields: Any) -> Model:
    """Count a model that exists only as dimensions: ``from_dims("gpt2", n_layer=96, ...)``."""
    from .frontends.config import from_config

    return from_config({"model_type": arch, **fields}, f"--arch {arch}", model_class=model_class)
