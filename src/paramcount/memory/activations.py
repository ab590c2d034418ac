"""Activations kept for the backward pass in training: an estimate, after Korthikanti et al. 2022.

Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
(arXiv:2205.05198), eq. 1: a GPT layer with 16-bit activations keeps, for sequence length s,
micro-batch b, width h and a heads,

    s·b·h·(34 + 5·a·s/h) bytes:
    attention  11·s·b·h + 5·a·s²·b  (QKV input 2sbh, Q and K 4sbh, V 2sbh, output-projection
                                      input 2sbh, dropout mask sbh; softmax output 2as²b, its
                                      dropout mask as²b and output 2as²b)
    MLP        19·s·b·h               (input 2sbh, GeLU input 8sbh and output 8sbh at 4h, mask sbh)
    LayerNorms  4·s·b·h               (two inputs of 2sbh)

Selective recomputation (their §5) or a fused attention kernel (FlashAttention never stores
the s×s matrices) leaves 34·s·b·h; full recomputation keeps only each layer's input, 2·s·b·h
(their Table 2), and one layer's activations are rebuilt at a time during the backward pass.

Adaptation, so the same counting covers GQA/MQA, MLA, SwiGLU and experts: the widths come
from each layer's weight shapes (:mod:`paramcount.memory.layers`), every element at the
activation dtype's p bytes (2 above) and masks at one byte:

    attention  p·(h + Σ q,k,v widths + attention width)·s·b + h·s·b  [+ (2p+1)·a·s²·b]
    MLP        p·(h + Σ up widths + I [+ I if gated])·s·b + h·s·b    × k routed experts
    norms      p·h·s·b per attention block and per feed-forward

With q = k = v = h and a plain 4h MLP this is eq. 1 exactly; a SwiGLU MLP keeps gate, up,
their SiLU and product (4·I). Embeddings and the output layer follow Megatron-LM's
``theoretical_memory_usage.py`` (which cites the same paper): 8·s·b bytes of int64 token ids,
an embedding dropout mask s·b·h, the final norm and output-projection inputs 2·p·s·b·h and
the fp32 logits 4·s·b·V of the loss. Not counted: routing buffers, rotary tables, per-head
q/k norms, FlashAttention's softmax statistics (a·s·b fp32), allocator slack.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..errors import ParamcountError
from ..model import Model
from ..records import replace
from .layers import Attention, FeedForward, Layer, layers
from .modules import output_embedding, walk
from .terms import Term

RECOMPUTE = ("none", "selective", "full")
SOURCE = (
    "Korthikanti et al. 2022, eq. 1 and Table 2 (arXiv:2205.05198); embedding and output terms as "
    "Megatron-LM megatron/training/theoretical_memory_usage.py"
)
_HEAD_FIELDS = ("num_attention_heads", "num_heads", "encoder_attention_heads")
_ASSUMED_HEAD_DIM = 64


@dataclass(frozen=True)
class _Setting:
    tokens: int  # s·b
    context: int
    batch: int
    p: int  # bytes per activation element
    quadratic: bool  # the s×s attention matrices are stored
    heads: int | None
    flash: bool


def activations(
    model: Model,
    batch: int = 1,
    context: int = 2048,
    *,
    recompute: str = "none",
    flash: bool = True,
    dtype: str = "bf16",
) -> Term:
    """Activation memory of one training step's forward pass, kept for its backward (an estimate)."""
    if recompute not in RECOMPUTE:
        raise ParamcountError(f"recompute must be one of {', '.join(RECOMPUTE)}, not {recompute!r}", field="recompute")
    batch, context = _positive(batch, "batch"), _positive(context, "context")
    p = dtypes.nbytes(dtype, 1)
    heads = _heads(model)
    s = _Setting(context * batch, context, batch, p, recompute == "none" and not flash, heads, flash)
    groups = layers(model)
    if not groups:
        raise ParamcountError("no stack of transformer layers to estimate activations for", source=model.name)
    parts = [_layer_term(g, s, recompute) for g in groups] + _outer_terms(model, groups, s)
    if recompute == "full":
        parts.append(_rebuilt(groups, s))
    total = sum(t.bytes for t in parts)
    return Term(
        key="activations",
        label=f"activations ({dtype}, {context:,} tokens × {batch}, recompute {recompute})",
        bytes=total,
        formula=" + ".join(f"{t.bytes:,}" for t in parts) + f" = {total:,} B",
        assumption=_assumption(recompute, flash, heads, dtype),
        estimate=True,
        source=SOURCE,
        parts=tuple(parts),
    )


def _positive(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamcountError(f"{field} must be a whole number ≥ 1, not {value!r}", field=field)
    return value


def _heads(model: Model) -> int | None:
    """Query heads, from the config (the s×s matrices are one per head)."""
    from ..arch import family

    try:
        c = family(model.model_type).cfg(model.config, model.source)
    except ParamcountError:
        return None
    for name in _HEAD_FIELDS:
        value = c.get(name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# ---- one layer ---------------------------------------------------------------------------------


def per_token(layer: Layer, p: int) -> int:
    """Bytes one token keeps in one layer, without the s×s attention matrices."""
    h = layer.hidden
    attention = sum(p * (h + a.qkv + a.width) + h for a in layer.attention)
    ffn = sum(f.times * (p * (h + f.ups + f.inner + (f.inner if f.gated else 0)) + h) for f in layer.ffn)
    norms = p * h * (len(layer.attention) + (1 if layer.ffn else 0))
    return attention + ffn + norms


def quadratic(layer: Layer, s: _Setting) -> int:
    """The softmax output, its dropout mask and output: (2p + 1)·a·s²·b per attention block."""
    if not s.quadratic:
        return 0
    return sum((2 * s.p + 1) * _heads_of(a, s) * s.context * s.context * s.batch for a in layer.attention)


def _heads_of(a: Attention, s: _Setting) -> int:
    return s.heads or max(1, a.width // _ASSUMED_HEAD_DIM)


def _layer_term(g: Layer, s: _Setting, recompute: str) -> Term:
    if recompute == "full":
        each = s.p * g.hidden * s.tokens
        formula = f"{g.runs} × {s.p}·h·s·b = {g.runs} × {s.p}·{g.hidden}·{s.tokens:,} = {g.runs * each:,} B"
        return Term(
            "activations.layers", f"{g.label}: layer inputs", g.runs * each, formula, "full recomputation", True
        )
    c, q = per_token(g, s.p), quadratic(g, s)
    formula = f"{g.runs} × ({s.tokens:,} tokens × {c:,} B" + (f" + {q:,} B s×s" if q else "") + ")"
    return Term(
        "activations.layers",
        g.label,
        g.runs * (s.tokens * c + q),
        formula + f" = {g.runs * (s.tokens * c + q):,} B",
        _widths(g),
        estimate=True,
    )


def _widths(g: Layer) -> str:
    attn = "; ".join(f"q+k+v {a.qkv:,}, attention {a.width:,}" for a in g.attention)
    ffn = "; ".join(
        f"{'gated' if f.gated else 'plain'} I={f.inner:,}" + (f" × {f.times}" if f.times > 1 else "") for f in g.ffn
    )
    return f"h={g.hidden:,}; {attn}; {ffn}"


def _rebuilt(groups: list[Layer], s: _Setting) -> Term:
    """During the backward pass one layer at a time is recomputed and held whole (with its s×s
    matrices unless attention is fused)."""
    s = replace(s, quadratic=not s.flash)
    worst = max(groups, key=lambda g: s.tokens * per_token(g, s.p) + quadratic(g, s))
    n = s.tokens * per_token(worst, s.p) + quadratic(worst, s)
    return Term(
        "activations.recomputed",
        f"one layer rebuilt in backward ({worst.label})",
        n,
        f"{n:,} B",
        "full recomputation keeps one layer's activations at a time",
        estimate=True,
    )


def _outer_terms(model: Model, groups: list[Layer], s: _Setting) -> list[Term]:
    h_in, h_out = groups[0].hidden, groups[-1].hidden
    ids, mask = 8 * s.tokens, s.tokens * h_in
    embed = Term(
        "activations.embeddings",
        "token ids and embedding dropout mask",
        ids + mask,
        f"8·s·b + s·b·h = {ids:,} + {mask:,} B",
        "int64 ids; a one-byte mask",
        estimate=True,
    )
    vocab = _vocab(model)
    if vocab is None:
        n = s.p * h_out * s.tokens
        return [
            embed,
            Term("activations.output", "final norm input", n, f"{s.p}·s·b·h = {n:,} B", "no LM head", estimate=True),
        ]
    inputs, logits = 2 * s.p * h_out * s.tokens, 4 * vocab * s.tokens
    out = Term(
        "activations.output",
        "output layer and loss",
        inputs + logits,
        f"2·{s.p}·s·b·h + 4·s·b·V = {inputs:,} + {logits:,} B",
        "fp32 logits for the cross-entropy",
        estimate=True,
    )
    return [embed, out]


def _vocab(model: Model) -> int | None:
    name = output_embedding(model)
    return next((m.d_out for m in walk(model) if m.name == name), None) if name else None


def _assumption(recompute: str, flash: bool, heads: int | None, dtype: str) -> str:
    said = [f"activations {dtype} (--precision)", f"recompute {recompute} (--recompute)"]
    said.append(
        "fused attention: no s×s matrices (--no-flash to store them)" if flash else "s×s attention matrices stored"
    )
    if not flash and recompute == "none" and heads is None:
        said.append(f"heads unknown: head dim {_ASSUMED_HEAD_DIM} assumed")
    said.append("dropout masks counted as in the paper; models trained without dropout keep none")
    return "; ".join(said)


__all__ = ["RECOMPUTE", "SOURCE", "FeedForward", "activations", "per_token", "quadratic"]
