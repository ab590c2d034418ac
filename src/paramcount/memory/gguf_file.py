"""What a GGUF model needs beyond its tensor tree: the file's metadata and its layers' widths.

``paramcount.load`` keeps only some ``{arch}.*`` keys as ``Model.config`` (``ARCH_KEYS`` in
:mod:`paramcount.frontends.gguf`). The KV cache also needs keys outside that list
(``attention.sliding_window``, ``attention.kv_lora_rank``, ``attention.key_length_mla``) and
the weights name the file type (``general.file_type``). So when the model came from a GGUF file
on disk, its header is read again through the same reader (header only, cached) and used when
it holds the same tensors. A model from header bytes alone (the web page's upload) has only its
``Model.config``: :class:`Meta` says so (``complete`` is False) and a missing key is then an
error where it matters, never a silent default.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, Tensor
from .layers import FeedForward
from .working_set import Widths, _ffn_width

GGUF = "GGUF"  # Model.class_name of a model read from a GGUF file


def is_gguf(model: Any) -> bool:
    return getattr(model, "class_name", None) == GGUF


@dataclass(frozen=True)
class Meta:
    """The ``{arch}.*`` metadata of a GGUF model, without the prefix."""

    arch: str
    values: Mapping[str, Any]
    complete: bool  # the whole header was read: a key absent here is absent from the file
    file_type: str | None = None  # "Q4_K_M", from general.file_type

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.values

    def integer(self, key: str, default: Any = ..., low: int = 1) -> int:
        """A whole-number key, or a one-line error naming it."""
        value = self.values.get(key, default)
        if value is ...:
            raise self.missing(key)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1 << 26:
            raise ParamcountError(f"{self.arch}.{key}: expected a whole number ≥ {low}, got {value!r}")
        return value

    def missing(self, key: str) -> ParamcountError:
        from .kv_layout import NoLayout

        why = "the file does not state it" if self.complete else "it was not read (read the .gguf file from disk)"
        return NoLayout(f"{self.arch}.{key} is needed for the KV cache, but {why}")


def metadata(model: Any) -> Meta:
    """The model's GGUF metadata: its config, completed from its file's header when there is one."""
    base = dict(getattr(model, "config", None) or {})
    info = _same_file(model)
    if info is None:
        return Meta(model.model_type, base, False)
    prefix = f"{info.architecture}."
    values = {k[len(prefix) :]: v for k, v in info.metadata.items() if k.startswith(prefix)}
    return Meta(model.model_type, {**base, **values}, True, file_type(info.metadata.get("general.file_type")))


def file_type(value: Any) -> str | None:
    """``general.file_type`` as llama.cpp names it (15 -> ``Q4_K_M``), if the gguf package knows it."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    try:
        import gguf

        name = gguf.LlamaFileType(value).name
    except (ImportError, ValueError):
        return None
    return None if name == "GUESSED" else name.removeprefix("MOSTLY_").removeprefix("ALL_")


def _same_file(model: Any) -> Any:
    """The header of the file the model was read from, if it is on disk and holds the same tree."""
    path = _path(getattr(model, "source", ""))
    if path is None:
        return None
    try:
        stat = path.stat()
        info, tree = _read(str(path), stat.st_size, stat.st_mtime_ns)
    except (OSError, ParamcountError):
        return None
    return info if tree == model.tree else None


def _path(source: Any) -> Path | None:
    """A split model's source names its shards with ``*``: the first shard holds the metadata."""
    if not isinstance(source, str) or not source:
        return None
    p = Path(source)
    if "*" in p.name:
        p = p.with_name(p.name.replace("*", "00001", 1))
    return p if p.is_file() else None


@functools.lru_cache(maxsize=8)
def _read(path: str, size: int, mtime: int) -> tuple[Any, Block]:
    from ..frontends.gguf import read_shards, to_model

    info = read_shards(path)
    return info, to_model(info).tree


# --- the widths the activation estimate needs, from the tensors' shapes ---------------------

_DENSE = {"ffn_gate": "up", "ffn_up": "up", "ffn_down": "down"}
_SHARED = {"ffn_gate_shexp": "up", "ffn_up_shexp": "up", "ffn_down_shexp": "down"}
_EXPERTS = {"ffn_gate_exps": "up", "ffn_up_exps": "up", "ffn_gate_up_exps": "up", "ffn_down_exps": "down"}


def widths(model: Any, meta: Meta | None = None) -> Widths:
    """The widest layer's widths (as :func:`paramcount.memory.working_set.widths` defines them),
    read from the GGUF tensors: attention is the rows of every ``attn_*`` projection plus the
    columns of ``attn_output``; a feed-forward's ups are the rows of ``ffn_gate``/``ffn_up``
    and its inner width the columns of ``ffn_down`` (experts: k = ``expert_used_count`` of them)."""
    meta = meta or metadata(model)
    h = meta.integer("embedding_length")
    used = meta.integer("expert_used_count", 0, low=0)
    found = [_layer(b, h, used) for b in model.tree.children if isinstance(b, Block) and b.name == "blk"]
    attention, ffn = max(found or [(0, 0)], key=lambda w: max(w))
    return Widths(h, attention, ffn, _vocab(model.tree), True)


def _weights(block: Block) -> dict[str, tuple[int, ...]]:
    """Each module of one layer (``attn_q``) and its weight's shape, in PyTorch order."""
    out = {}
    for child in block.children:
        if isinstance(child, Block):
            w = next((t for t in child.children if isinstance(t, Tensor) and t.name == "weight"), None)
            if w is not None:
                out[child.name] = tuple(int(d) for d in w.shape)
    return out


def _layer(block: Block, h: int, used: int) -> tuple[int, int]:
    shapes = _weights(block)
    qkv = sum(s[0] for n, s in shapes.items() if n.startswith("attn_") and n != "attn_output" and len(s) == 2)
    attention = qkv + shapes.get("attn_output", (0, 0))[-1]
    ffn = sum(_ffn_width(f, h) for f in _ffns(shapes, used))
    return attention, ffn


def _ffns(shapes: Mapping[str, tuple[int, ...]], used: int) -> list[FeedForward]:
    out = []
    for names, times in ((_DENSE, 1), (_SHARED, 1), (_EXPERTS, used)):
        ups = sum(s[-2] for n, s in shapes.items() if names.get(n) == "up")
        inner = next((s[-1] for n, s in shapes.items() if names.get(n) == "down"), 0)
        if inner and times:
            out.append(FeedForward(ups, inner, times))
    return out


def _vocab(tree: Block) -> int:
    """The rows of the output head (``output.weight``, or the tied ``token_embd.weight``)."""
    shapes = _weights(tree)
    return (shapes.get("output") or shapes.get("token_embd") or (0,))[0]
