"""Architecture families: one module per transformers ``model_type``, found by its file name.

A family module defines ``FAMILY``; the registry imports it only when a config asks for it,
so ``import paramcount`` stays cheap however many families there are.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from functools import cache

from ..errors import ParamcountError
from ..ir import Block
from ..records import field, record
from .blocks import WithHead
from .config import Cfg

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

# Shared modules beside the families (a family file is named after its model_type).
_NOT_FAMILIES = {"blocks", "config", "vision", "towers", "moe", "mla", "ssm", "linear_attention", "hybrid", "dense"}
_NOT_FAMILIES |= {"cache", "media"}  # the KV layouts and media tokens every family states its own with


@record(frozen=True)
class Family:
    """How one ``model_type`` becomes a tree.

    ``defaults`` are the values transformers' config class gives absent fields (only those
    the builders read); ``aliases`` the other names a field may carry in a file;
    ``classes`` maps each supported transformers class name to its builder.
    ``check`` validates field combinations that no single field can (heads into width).
    ``notes`` are said in the output for a config (where we depart from transformers, say).
    ``flag_fields`` renames the standard fields the CLI's dimension flags set where the
    family's config class calls them otherwise (Falcon: ``num_kv_heads``).
    ``cache_layout`` gives the family's KV-cache and recurrent-state layout, as transformers' caches
    hold it: ``cache_layout(cfg, model_type, class_name, mla) -> (kinds, notes)`` with ``kinds`` a list
    of :class:`paramcount.arch.cache.LayerKind` (see that module for the helpers). The
    older families' layouts live in ``kv_layout.BUILDERS``; a family with neither has none.
    """

    model_type: str
    defaults: Mapping[str, Any]
    classes: Mapping[str, Callable[[Cfg], Block]]
    backbone: str
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    check: Callable[[Cfg], None] | None = None
    notes: Callable[[Cfg, str], list[str]] | None = None
    flag_fields: Mapping[str, str] = field(default_factory=dict)
    cache_layout: Callable[[Cfg, str, str, str], tuple[list[Any], list[str]]] | None = None
    max_tokens: Callable[[Cfg], int] | None = None  # tokens in one input, where not max_position_embeddings
    # How published checkpoints name tensors where transformers renames them on loading (its
    # conversion_mapping.py): (regex, replacement) pairs applied in order, each at most once.
    renames: tuple[tuple[str, str], ...] = ()
    # Fields read beyond the config class's own: keyword arguments its __init__ keeps as plain
    # attributes (DeBERTa-v2's share_att_key), which --set must accept too.
    extra_fields: tuple[str, ...] = ()
    # Tokens one image of width × height adds to the context, as the model's processor counts them:
    # image_tokens(cfg, width, height) -> paramcount.arch.media.ImageTokens (see that module).
    image_tokens: Callable[[Cfg, int, int], Any] | None = None
    # Tokens a clip of so many seconds adds, as the model's processor counts them:
    # audio_tokens(cfg, seconds) -> paramcount.memory.context.audio.AudioTokens (see that module).
    audio_tokens: Callable[[Cfg, Any], Any] | None = None
    # A class built around another backbone than the family's (an mllama config's
    # MllamaForCausalLM holds the text model alone): class -> that backbone's class name; its
    # tree is the class tree's first child.
    backbones: Mapping[str, str] = field(default_factory=dict)

    def backbone_of(self, cls: str) -> str:
        return self.backbones.get(cls, self.backbone)

    def cfg(self, raw: Mapping[str, Any], source: str | None) -> Cfg:
        return Cfg(raw, self.defaults, source, self.aliases)

    def build(self, cls: str, cfg: Cfg) -> tuple[Block, Block]:
        """The trees of class ``cls`` and of the backbone class. A class that holds the
        backbone's own modules lends them to the backbone tree: they are built once."""
        builder, base = self.classes[cls], self.classes[self.backbone]
        tree = builder(cfg)
        if cls == self.backbone:
            return tree, tree
        if cls in self.backbones:
            return tree, Block("", tree.children[0].children, label="backbone")
        shared = builder.backbone_tree(tree, base, cfg) if isinstance(builder, WithHead) else None
        return tree, base(cfg) if shared is None else shared


def _module_name(model_type: str) -> str:
    return model_type.replace("-", "_")


@cache
def supported() -> tuple[str, ...]:
    """The model_types we can count, from the family files present (no imports)."""
    # the folder's .py files, as pkgutil.iter_modules would list them (pkgutil imports typing:
    # a twentieth of start-up)
    names = (f[:-3] for f in os.listdir(__path__[0]) if f.endswith(".py") and not f.startswith("_"))
    found = (n for n in names if n.isidentifier() and n not in _NOT_FAMILIES)
    return tuple(sorted(found))


def family(model_type: str, source: str | None = None) -> Family:
    """The family for ``model_type`` (``xlm-roberta`` and ``xlm_roberta`` alike)."""
    if not isinstance(model_type, str) or _module_name(model_type) not in supported():
        raise ParamcountError(
            f"unknown model_type {model_type!r}; supported: {', '.join(supported())}",
            source=source,
            field="model_type",
        )
    return _family(_module_name(model_type))


@cache
def _family(module: str) -> Family:
    return importlib.import_module(f"{__name__}.{module}").FAMILY


@cache
def _class_index() -> dict[str, str]:
    return {cls: name for name in supported() for cls in family(name).classes}


def model_type_of_class(class_name: str) -> str | None:
    """Which family defines ``class_name`` (for configs without ``model_type``)."""
    return _class_index().get(class_name)
