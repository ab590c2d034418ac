"""What a GGUF model needs beyond its tensor tree: the file's metadata and its layers' widths.

``Model.config`` of a GGUF model holds the ``{arch}.*`` keys the planner reads, without the prefix
(``ARCH_KEYS`` in :mod:`paramcount.frontends.gguf`), and ``general.file_type``; the same whether
the file was read from disk or from header bytes alone (the web page's upload). A key the file
does not state is an error where it matters, never a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

        return NoLayout(f"{self.arch}.{key} is needed for the KV cache, but the file does not state it")


def metadata(model: Any) -> Meta:
    """The model's GGUF metadata, as its reader kept it in ``Model.config``."""
    values = dict(getattr(model, "config", None) or {})
    return Meta(model.model_type, values, file_type(values.get("general.file_type")))


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
