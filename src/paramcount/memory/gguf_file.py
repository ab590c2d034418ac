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
from .working_set import Widths, _ffn_width, graph_ffn_width

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


# ``general.file_type`` values as llama.cpp names them (``enum llama_ftype``; a test holds the
# table equal to gguf-py's ``LlamaFileType``, so reading a file needs no gguf package).
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
    18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
    25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
    32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}  # fmt: skip


def file_type(value: Any) -> str | None:
    """``general.file_type`` as llama.cpp names it (15 -> ``Q4_K_M``), or None if unknown."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return FILE_TYPES.get(value)


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
    blocks = [_weights(b) for b in model.tree.children if isinstance(b, Block) and b.name == "blk"]
    found = [_layer(shapes, h, used) for shapes in blocks]
    attention, ffn = max(found or [(0, 0)], key=lambda w: max(w))
    ffns = [_ffns(shapes, used) for shapes in blocks]
    graph = max((graph_ffn_width(f, h) for f in ffns), default=0)
    shared = any(len(f) > 1 for f in ffns)
    heads = max((s.get("attn_output", (0, 0))[-1] for s in blocks), default=0)
    return Widths(h, attention, ffn, _vocab(model.tree), True, graph, shared, heads)


def _weights(block: Block) -> dict[str, tuple[int, ...]]:
    """Each module of one layer (``attn_q``) and its weight's shape, in PyTorch order."""
    out = {}
    for child in block.children:
        if isinstance(child, Block):
            w = next((t for t in child.children if isinstance(t, Tensor) and t.name == "weight"), None)
            if w is not None:
                out[child.name] = tuple(int(d) for d in w.shape)
    return out


def _layer(shapes: Mapping[str, tuple[int, ...]], h: int, used: int) -> tuple[int, int]:
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
