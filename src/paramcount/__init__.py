"""paramcount: exact parameter counts of Transformer models, with where they live.

    >>> import paramcount
    >>> m = paramcount.load("bert-base-chinese")
    >>> m.backbone_total
    102267648

A source is a catalog name (hub id or alias), a ``config.json`` path, a model folder, or a
config dict. Counting is arithmetic over a small tree; nothing heavy is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ParamcountError
from .model import Model

__all__ = ["Model", "ParamcountError", "from_dims", "load"]
__version__ = "0.1.0"


def load(
    source: str | Path | Mapping[str, Any],
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Model:
    """Count a model from a catalog name, a config.json file or folder, or a config dict.

    ``model_class`` is a transformers class name (``BertModel``, ``LlamaForCausalLM``) or
    ``"base"`` for the backbone; by default the config's ``architectures`` class.
    ``overrides`` replaces config fields (``{"num_hidden_layers": 48}``).
    """
    from .frontends import catalog
    from .frontends.config import from_config, from_file

    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": overrides}
    if isinstance(source, Mapping):
        return from_config(source, "<config>", **opts)
    path = Path(source)
    if path.exists():
        return from_file(path, **opts)
    entry = catalog.get(str(source))
    return from_config(entry.config, f"catalog:{entry.id}", name=entry.id, **opts)


def from_dims(arch: str, model_class: str | None = None, **fields: Any) -> Model:
    """Count a model that exists only as dimensions: ``from_dims("gpt2", n_layer=96, ...)``."""
    from .frontends.config import from_config

    return from_config({"model_type": arch, **fields}, f"--arch {arch}", model_class=model_class)
