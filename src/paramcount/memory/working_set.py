"""The activation working set of a forward pass at inference: a model, not an identity.

At inference nothing is kept for a backward pass, so only one layer's tensors are alive at a
time, plus the residual stream and the logits. For batch B and T tokens in one forward pass
(the prefill, the largest step) this estimates the peak as

    B·T·(4h + max(W_attn, W_ffn))·b  +  logits

with h the hidden width, b the activation dtype's bytes, and W_attn, W_ffn the widths of what
one layer's attention and feed-forward hold per token, read from the layer's weight shapes
(:mod:`paramcount.memory.layers`): q, k, v and the attention output; for a gated MLP gate
(after its activation), up and their product (3I), for a plain one the inner activation
before and after its nonlinearity (2I); for k of E routed experts, k times the gathered input,
the fused gate-up output, the activated gate and their product (k·(h + 4I)). The 4h are the
tensors transformers' forward keeps alongside: the embeddings output (the model's forward
holds it), the layer's input, the residual and its normed copy. Attention runs in a fused
kernel (SDPA / FlashAttention), so no T×T score matrix is held. Logits: a generating model
computes them for the last position only, in the activation dtype and again in fp32 (what
``generate`` keeps: B·V·(b + 4)); a masked-LM head for every position (B·T·V·b).

The accounting is per tensor, as Korthikanti et al. 2022 (arXiv:2205.05198, §4.1) count a
layer's activations, but keeps only what an inference forward holds at once. It is this
project's estimate; tests/test_plan.py holds it to the peak of live tensor storage measured
in a real transformers forward (a TorchDispatchMode that tracks every tensor's lifetime).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Model
from .layers import FeedForward, Layer, layers
from .modules import output_embedding, walk
from .terms import Term

SOURCE = (
    "per-layer working set of an inference forward (this project's model; per-tensor accounting as in "
    "Korthikanti et al. 2022, arXiv:2205.05198 §4.1, without the tensors kept for backward)"
)
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

    @property
    def layer(self) -> int:
        return 4 * self.hidden + max(self.attention, self.ffn)


def _ffn_width(f: FeedForward, h: int) -> int:
    """A dense MLP holds its up outputs and their product after the nonlinearity: 3I gated
    (transformers frees the gate once activated), 2I plain. Routed experts (grouped matmuls)
    hold, per routed copy, the gathered input h, the fused gate-up output 2I, the activated
    gate and the product: 4I + h."""
    if f.times > 1:
        return f.times * (h + f.ups + 2 * f.inner)
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
    """The widest layer's widths (from :mod:`paramcount.memory.layers`) and the output head's V."""
    groups = layers(model)
    found = [_layer_widths(g) for g in groups] or [(0, 0, 0)]
    h, attention, ffn = max(found, key=lambda t: 4 * t[0] + max(t[1], t[2]))
    name = output_embedding(model)
    vocab = next((m.d_out for m in walk(model) if m.name == name), 0) if name else 0
    graph = max((graph_ffn_width(g.ffn, g.hidden) for g in groups), default=0)
    shared = any(len(g.ffn) > 1 for g in groups)
    generating = any(tag in model.class_name for tag in _GENERATING)
    return Widths(h, attention, ffn, vocab, generating, graph, shared)


def activations(model: Model, context: int, batch: int, dtype_bytes: int, dtype: str, w: Widths | None = None) -> Term:
    """The inference working-set estimate as a Term (see the module docstring); ``w`` reuses widths."""
    w = w or widths(model)
    layer = batch * context * w.layer * dtype_bytes
    positions = batch if w.last_only else batch * context
    logits = positions * w.logits * (dtype_bytes + (4 if w.last_only else 0))
    where = ("last position, + fp32 copy" if w.last_only else "every position") if w.logits else "no LM head"
    formula = (
        f"B·T·(4h + max(W_attn, W_ffn))·b + logits = {batch}·{context}·(4·{w.hidden} + max({w.attention}, "
        f"{w.ffn}))·{dtype_bytes} + {logits:,} = {layer + logits:,} B"
    )
    assumption = (
        f"one layer's tensors alive at a time, fused attention (no T×T scores), {dtype} activations; "
        f"logits: {where} (V = {w.logits:,}); --context, --batch"
    )
    parts = (
        Term(
            "activations.layer", "widest layer", layer, f"{batch}·{context}·{w.layer}·{dtype_bytes}", "", True, SOURCE
        ),
        Term("activations.logits", f"logits ({where})", logits, f"{positions}·{w.logits}", "", True, SOURCE),
    )
    label = f"activations ({dtype}, {context:,} tokens × {batch})"
    return Term("activations", label, layer + logits, formula, assumption, True, SOURCE, parts)
