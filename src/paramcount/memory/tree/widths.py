"""The widths of each model's widest layer, as the activation estimates read them.

Per token: the hidden size, attention and feed-forward widths, the vocabulary of the head
(:class:`Widths`). A model tree's are read from its weight shapes (:mod:`.layers`), a GGUF file's
from its tensors' shapes and metadata; a checkpoint's from its config.json tree
(:func:`shape_model`), which has the nested blocks its flat names lack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import BadSource, ParamcountError
from ...gguf.meta import Meta, is_gguf, metadata
from ...ir import Block, Tensor
from ...model import Model
from .layers import FeedForward, Layer, layers
from .modules import output_embedding, walk

_GENERATING = ("CausalLM", "LMHead", "ConditionalGeneration")


@dataclass(frozen=True)
class Widths:
    """Per-token activation widths (elements) of the widest layer, and the vocabulary of the head."""

    hidden: int
    attention: int  # q + k + v + the attention output, of the widest attention block
    ffn: int  # each feed-forward's up widths + inner width (k times for routed experts), summed
    logits: int  # V, 0 without a language-model head
    last_only: bool  # logits for the last position only (a generating head)
    graph_ffn: int = 0  # the widest feed-forward as ggml's graph holds it (:func:`graph_ffn_width`)
    shared: bool = False  # a layer runs several feed-forwards (routed experts, then a shared one)
    heads_width: int = 0  # the widest attention's output width (heads × head dim): one repeated key or value

    @property
    def layer(self) -> int:
        return 4 * self.hidden + max(self.attention, self.ffn)


def _ffn_width(f: FeedForward, h: int) -> int:
    """A dense MLP holds its up outputs and their product after the nonlinearity: 3I gated
    (transformers frees the gate once activated), 2I plain. Routed experts (transformers'
    ``integrations/moe.py grouped_mm_experts_forward``) keep, per routed copy, the gathered
    input h all through: with it first the fused gate-up output 2I, the activated gate and the
    product (h + 4I), then the down output, its weighted copy and that copy put back in token
    order (4h), which is the larger where I < 3h/4. Measured on an H200: Granite 3.1 3B-A800M
    (h 1,536, I 512, 8 of 40) at 8,192 × 4 allocated 1.37 GB more than h + 4I, the 4h phase's
    1.34 GB more."""
    if f.times > 1:
        return f.times * max(h + f.ups + 2 * f.inner, 4 * h)
    return f.ups + f.inner


def graph_ffn_width(ffns: list[FeedForward] | tuple[FeedForward, ...], h: int) -> int:
    """One layer's feed-forwards as llama.cpp's graph holds them (``build_ffn``,
    ``build_moe_ffn``): gate, up and their product, k copies for k routed experts (ggml-alloc
    frees gate and up once multiplied, before the down projection's k·h output, and
    ``ggml_mul_mat_id`` gathers no copy of the input); the h-wide outputs of the layer's other
    feed-forwards are held until summed."""
    if not ffns:
        return 0
    return max(f.times * (f.ups + f.inner) for f in ffns) + h * (len(ffns) - 1)


def _layer_widths(g: Layer) -> tuple[int, int, int]:
    """(h, W_attn, W_ffn) of one layer: attention holds q, k, v and its output. Several MLPs
    in one layer (routed experts and a shared expert) run one after another: the widest one's
    tensors, plus the h-wide outputs of the others held until they are summed."""
    attention = max((a.qkv + a.width for a in g.attention), default=0)
    ffn = max((_ffn_width(f, g.hidden) for f in g.ffn), default=0) + g.hidden * max(len(g.ffn) - 1, 0)
    return g.hidden, attention, ffn


def widths(model: Model) -> Widths:
    """The widest layer's widths (from :mod:`paramcount.memory.tree.layers`) and the output head's V."""
    groups = layers(model)
    found = [_layer_widths(g) for g in groups] or [(0, 0, 0)]
    h, attention, ffn = max(found, key=lambda t: 4 * t[0] + max(t[1], t[2]))
    name = output_embedding(model)
    vocab = next((m.d_out for m in walk(model) if m.name == name), 0) if name else 0
    graph = max((graph_ffn_width(g.ffn, g.hidden) for g in groups), default=0)
    shared = any(len(g.ffn) > 1 for g in groups)
    generating = any(tag in model.class_name for tag in _GENERATING)
    heads_width = max((a.width for g in groups for a in g.attention), default=0)
    return Widths(h, attention, ffn, vocab, generating, graph, shared, heads_width)


# --- the widths the activation estimate needs, from the tensors' shapes ---------------------

_DENSE = {"ffn_gate": "up", "ffn_up": "up", "ffn_down": "down"}
_SHARED = {"ffn_gate_shexp": "up", "ffn_up_shexp": "up", "ffn_down_shexp": "down"}
_EXPERTS = {"ffn_gate_exps": "up", "ffn_up_exps": "up", "ffn_gate_up_exps": "up", "ffn_down_exps": "down"}


def gguf_widths(model: Any, meta: Meta | None = None) -> Widths:
    """The widest layer's widths (as :func:`widths` defines them),
    read from the GGUF tensors: attention is the rows of every ``attn_*`` projection plus the
    columns of ``attn_output``; a feed-forward's ups are the rows of ``ffn_gate``/``ffn_up``
    and its inner width the columns of ``ffn_down`` (experts: k = ``expert_used_count`` of them)."""
    meta = meta or metadata(model)
    h = meta.integer("embedding_length")
    used = meta.integer("expert_used_count", 0, low=0)
    blocks = [_weights(b, meta.source) for b in model.tree.children if isinstance(b, Block) and b.name == "blk"]
    found = [_layer(shapes, h, used) for shapes in blocks]
    attention, ffn = max(found or [(0, 0)], key=lambda w: max(w))
    ffns = [_ffns(shapes, used) for shapes in blocks]
    graph = max((graph_ffn_width(f, h) for f in ffns), default=0)
    shared = any(len(f) > 1 for f in ffns)
    heads = max((s.get("attn_output", (0, 0))[-1] for s in blocks), default=0)
    return Widths(h, attention, ffn, _vocab(model.tree, meta.source), True, graph, shared, heads)


# The rank of each role's weight that the widths read (gguf-py's tensor_mapping: matrices, and
# the experts stacked in one 3-D tensor); a file with another is refused, never half-read.
RANKS = {**dict.fromkeys((*_DENSE, *_SHARED, "attn_output", "token_embd", "output"), 2), **dict.fromkeys(_EXPERTS, 3)}


def _weights(block: Block, source: str | None) -> dict[str, tuple[int, ...]]:
    """Each module of one layer (``attn_q``) and its weight's shape, in PyTorch order."""
    out = {}
    for child in block.children:
        if isinstance(child, Block):
            w = next((t for t in child.children if isinstance(t, Tensor) and t.name == "weight"), None)
            if w is not None:
                out[child.name] = _shape(block, child.name, tuple(int(d) for d in w.shape), source)
    return out


def _shape(block: Block, role: str, shape: tuple[int, ...], source: str | None) -> tuple[int, ...]:
    need = RANKS.get(role)
    if need is not None and len(shape) != need:
        name = f"{block.name}.{block.start}.{role}" if block.repeat else role
        raise BadSource(
            f"tensor {name}.weight has shape {list(shape)}; {role} is a {need}-D tensor in llama.cpp", source=source
        )
    return shape


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


def _vocab(tree: Block, source: str | None) -> int:
    """The rows of the output head (``output.weight``, or the tied ``token_embd.weight``)."""
    shapes = _weights(tree, source)
    return (shapes.get("output") or shapes.get("token_embd") or (0,))[0]


def shape_model(model: Model) -> Model:
    """The model activation estimates read layer widths from: a safetensors checkpoint's
    config.json model (the same architecture, in the nested tree the estimates walk; a tree
    built from a checkpoint's flat names has no attention blocks to find), else the model."""
    if getattr(model, "checkpoint", None) is not None and model.config:
        from ...frontends.config import from_config

        try:
            return from_config(model.config, model.source, model_class=model.class_name)
        except ParamcountError:
            pass
    return model


def feed_forwards(model: Model) -> list[FeedForward]:
    """Every layer's feed-forwards as :func:`widths` and :func:`gguf_widths` read them: a GGUF
    file's from its tensors (k = ``expert_used_count`` routed experts), any other model's from
    its tree (:func:`shape_model`)."""
    if is_gguf(model):
        meta = metadata(model)
        used = meta.integer("expert_used_count", 0, low=0)
        blocks = [_weights(b, meta.source) for b in model.tree.children if isinstance(b, Block) and b.name == "blk"]
        return [f for shapes in blocks for f in _ffns(shapes, used)]
    return [f for g in layers(shape_model(model)) for f in g.ffn]


def shape_widths(model: Model) -> Widths:
    """The layer widths the inference activation estimate reads: a GGUF file's from its tensors
    (:func:`gguf_widths`), any other model's from :func:`shape_model`."""
    return model.derived("widths", lambda: gguf_widths(model) if is_gguf(model) else widths(shape_model(model)))
