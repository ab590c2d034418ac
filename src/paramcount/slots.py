"""The model's tensors as groups of identical copies, with what a quantiser needs to know.

Repeated blocks are never unrolled: a tensor inside ``layers × 32`` is one :class:`Slot`
with 32 copies, named with the range (``model.layers.0–31.mlp.down_proj.weight``). Each slot
says whether it is the weight of a linear layer (what bitsandbytes, GPTQ and AWQ replace)
and which decoder layers it spans (what llama.cpp's mixes look at).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from .ir import Block, Node, Tensor, Tie, join

# transformers' Conv1D layers (the weight stored [in, out]), by family and module name.
CONV1D = {"gpt2": frozenset({"c_attn", "c_proj", "c_fc", "q_attn"})}


@dataclass(frozen=True)
class Slot:
    """``copies`` identical tensors (or ties) at the same place in every repeat."""

    layer_path: str  # the decoder-layer list this sits in ("model.layers"), or "" outside one
    layers: range | None  # indices of those layers, or None outside the stack
    rest: str  # the name after the layer index (or the full name outside the stack)
    shape: tuple[int, ...]
    kind: str
    copies: int  # all copies: layers × experts × …
    module: str  # the owning module's own name: "down_proj"
    linear: bool  # the weight of a Linear / Conv1D module
    transposed: bool = False  # Conv1D: stored [in, out]
    tie: str | None = None  # the tensor this one aliases
    order: int = 0  # position in model order
    # In a llama.cpp file planned from a config (gguf/layout.py): the GGUF role the
    # converter's name gives the tensor where its module's name does not say it, and the type it
    # is written in where llama-quantize keeps it (tensor_allows_quantization) other than F32.
    file_role: str | None = None
    file_type: str | None = None

    @property
    def name(self) -> str:
        return self.name_at(self.layers)

    def name_at(self, layers: range | None) -> str:
        if self.layers is None or layers is None:
            return self.rest
        return join(join(self.layer_path, _span(layers)), self.rest)

    @property
    def elements(self) -> int:
        """Values in one copy."""
        return math.prod(int(d) for d in self.shape)

    @property
    def per_layer(self) -> int:
        """Copies inside one decoder layer (experts of a checkpoint-form block)."""
        return self.copies // len(self.layers) if self.layers else self.copies

    @property
    def role(self) -> str:
        """What the tensor is: its module's name (``down_proj``), or its own name when it is a
        fused tensor directly in a block (``experts.down_proj``)."""
        last = self.rest.rsplit(".", 1)[-1]
        return self.module if last in ("weight", "bias") else last

    @property
    def is_bias(self) -> bool:
        return self.rest.rsplit(".", 1)[-1] == "bias"

    @property
    def in_out(self) -> tuple[int, int]:
        """(in features, out features) of a linear weight."""
        a, b = (int(d) for d in self.shape[-2:])
        return (a, b) if self.transposed else (b, a)


def _span(r: range) -> str:
    return str(r.start) if len(r) == 1 else f"{r.start}–{r.stop - 1}"


@dataclass(frozen=True)
class _Where:
    prefix: str
    kind: str
    copies: int
    layer_path: str
    layers: range | None


def slots(tree: Block, model_type: str = "", checkpoint: bool = False) -> list[Slot]:
    """Every tensor and tie of ``tree`` as a slot, in model order.

    With ``checkpoint`` a block's checkpoint naming replaces its in-memory one (per-expert
    linear layers where transformers fuses experts into 3-D tensors).
    """
    conv = CONV1D.get(model_type, frozenset())
    out = list(_walk(tree, _Where("", "other", 1, "", None), conv, checkpoint))
    return [Slot(**{**s.__dict__, "order": i}) for i, s in enumerate(out)]


def _walk(node: Node, at: _Where, conv: frozenset[str], checkpoint: bool) -> Iterator[Slot]:
    if not isinstance(node, Block):
        return
    if checkpoint and node.checkpoint is not None:
        node = node.checkpoint
    here = _enter(node, at)
    weight = next((c for c in node.children if c.name == "weight" and not isinstance(c, Block)), None)
    linear = weight is not None and is_linear(node, weight.kind or here.kind)
    for child in node.children:
        if isinstance(child, Block):
            yield from _walk(child, here, conv, checkpoint)
        else:
            yield _leaf(child, here, node.name, linear and child.name == "weight", conv)


def _enter(node: Block, at: _Where) -> _Where:
    """Where the children of ``node`` sit: its name, kind, copies and layer range."""
    kind = node.kind or at.kind
    copies = at.copies * node.copies
    if node.repeat is None:
        return _Where(join(at.prefix, node.name), kind, copies, at.layer_path, at.layers)
    if at.layers is None and node.label == "layer":
        return _Where("", kind, copies, join(at.prefix, node.name), node.indices())
    return _Where(join(join(at.prefix, node.name), _span(node.indices())), kind, copies, at.layer_path, at.layers)


def _leaf(t: Tensor | Tie, at: _Where, module: str, linear: bool, conv: frozenset[str]) -> Slot:
    kind = t.kind or at.kind
    return Slot(
        layer_path=at.layer_path,
        layers=at.layers,
        rest=join(at.prefix, t.name),
        shape=tuple(int(d) for d in t.shape),
        kind=kind,
        copies=at.copies,
        module=module,
        linear=linear,
        transposed=linear and module in conv,
        tie=t.target if isinstance(t, Tie) else None,
    )


def is_linear(block: Block, kind: str) -> bool:
    """Whether ``block`` is an nn.Linear (or Conv1D) in transformers: a 2-D ``weight`` and
    an optional ``bias`` and nothing else, that is not a lookup table or a norm.

    Embedding tables have no bias (ALBERT's ``embedding_hidden_mapping_in``, which has one,
    is a Linear); MoE routers called ``gate`` are custom router modules in transformers 5
    (Qwen2-MoE's ``shared_expert_gate`` is a plain Linear); T5's relative attention bias
    is an Embedding.
    """
    kids = block.children
    names = {c.name for c in kids}
    if not kids or any(isinstance(c, Block) for c in kids) or "weight" not in names or not names <= {"weight", "bias"}:
        return False
    weight = next(c for c in kids if c.name == "weight")
    if len(weight.shape) != 2 or kind == "norms" or block.name == "relative_attention_bias":
        return False
    if kind == "embeddings" and "bias" not in names:
        return False
    return not (kind == "router" and block.name == "gate")
