"""The GGUF name llama.cpp's converter gives a checkpoint tensor: gguf-py's ``TensorNameMap``.

``convert_hf_to_gguf.py`` names each tensor it writes through gguf-py's tensor map
(``tensor_mapping.py``): the checkpoint names every GGUF tensor has had, kept for an
architecture where its ``MODEL_TENSORS`` entry lists the tensor. ``names.json`` is a copy
of those tables (gguf-py as vendored by llama-cpp-python 0.3.36, written by
``tools/gguf_names.py``): the core never imports gguf.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "names.json")
_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")
SUFFIXES = (".weight", ".bias")  # the converter's map_tensor_name(try_suffixes=(".weight", ".bias"))


@cache
def _tables() -> dict:
    with open(_PATH, encoding="utf-8") as f:
        return json.load(f)


def architectures() -> frozenset[str]:
    """The llama.cpp architectures gguf-py names (``general.architecture`` values)."""
    return frozenset(_tables()["archs"])


class NameMap:
    """Checkpoint name → GGUF name for one architecture, as ``TensorNameMap(arch, n)`` maps it,
    for any block number (a block's names are kept with ``{bid}`` in them, never unrolled)."""

    def __init__(self, arch: str):
        t = _tables()
        kept = set(t["archs"].get(arch, ()))
        self.arch = arch
        self.known = arch in t["archs"]
        self.plain: dict[str, str] = {}
        self.block: dict[str, str] = {}
        for tensor, (gguf, keys) in t["tensors"].items():
            if tensor in kept:
                self.plain.update(dict.fromkeys([gguf, *keys], gguf))
        blocks = {**t["blocks"], **t["arch_blocks"].get(arch, {})}
        for tensor, (gguf, keys) in blocks.items():
            if tensor not in kept:
                continue
            self.block.update(dict.fromkeys([gguf, *keys], gguf))
            # a block entry without {bid} (Gemma 3n's and 4's per_layer_token_embd): TensorNameMap
            # formats it once per block to the same name, which maps it as a plain one
            self.plain.update({k: gguf for k in (gguf, *keys) if "{bid}" not in k and "{bid}" not in gguf})

    def gguf(self, name: str) -> str | None:
        """The GGUF name of checkpoint tensor ``name`` (suffix kept), or None."""
        for suffix in ("", *SUFFIXES):
            if suffix and not name.endswith(suffix):
                continue
            stem = name[: len(name) - len(suffix)]
            found = self._stem(stem)
            if found is not None:
                return found + suffix
        return None

    def _stem(self, stem: str) -> str | None:
        if stem in self.plain:
            return self.plain[stem]
        for m in _NUMBER.finditer(stem):  # the block number: gguf-py's {bid}, tried at each number
            key = stem[: m.start()] + "{bid}" + stem[m.end() :]
            if key in self.block:
                return self.block[key].format(bid=int(m.group()))
        return None


@cache
def name_map(arch: str) -> NameMap:
    return NameMap(arch)
