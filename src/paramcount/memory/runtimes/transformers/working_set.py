"""The activation working set of a forward pass at inference: a model, not an identity.

At inference nothing is kept for a backward pass, so only one layer's tensors are alive at a
time, plus the residual stream and the logits. For batch B and T tokens in one forward pass
(the prefill, the largest step) this estimates the peak as

    max(B·T·(4h + W_ffn)·b,  B·T·(4h + W_attn [+ 2·H·d])·b + attention's T×T)
        + masks held + sliding layers' prefill keys and values + logits

with h the hidden width, b the activation dtype's bytes, and W_attn, W_ffn the widths of what
one layer's attention and feed-forward hold per token, read from the layer's weight shapes
(:mod:`paramcount.memory.tree.layers`): q, k, v and the attention output; for a gated MLP gate
(after its activation), up and their product (3I), for a plain one the inner activation
before and after its nonlinearity (2I); for k of E routed experts, k times the larger of
two phases: the gathered input, the fused gate-up output, the activated gate and their
product (h + 4I), then the gathered input beside the down output and its weighted and
reordered copies (4h). The 4h in the formula above are the tensors transformers' forward
keeps alongside: the embeddings output (the model's forward
holds it), the layer's input, the residual and its normed copy. What attention adds (keys and
values repeated to every head, masks, scores) follows the implementation transformers runs and
the kernel PyTorch picks (:mod:`paramcount.memory.runtimes.transformers.attention`); sdpa's flash kernel adds
nothing. A sliding-window layer of the dynamic cache keeps a view of its whole prefill keys and
values, held past its window until the next step. Logits: a generating model
computes them for the last position only, in the activation dtype and again in fp32 (what
``generate`` keeps: B·V·(b + 4)); a masked-LM head for every position (B·T·V·b).

The accounting is per tensor, as Korthikanti et al. 2022 (arXiv:2205.05198, §4.1) count a
layer's activations, but keeps only what an inference forward holds at once. It is this
project's estimate; tests/test_plan.py holds it to the peak of live tensor storage measured
in a real transformers forward (a TorchDispatchMode that tracks every tensor's lifetime), and
tests/test_gpu_measured.py to the H100's peak allocations (tests/fixtures/gpu_h100.json).
"""

from __future__ import annotations

from ....model import Model
from ...core.terms import Term
from ...tree.widths import Widths, widths
from .attention import SOURCE as ATTN_SOURCE
from .attention import Attending, held, per_call

SOURCE = (
    "per-layer working set of an inference forward (this project's model; per-tensor accounting as in "
    "Korthikanti et al. 2022, arXiv:2205.05198 §4.1, without the tensors kept for backward); checked against "
    "tests/fixtures/gpu_h100.json (H100 peak allocations)"
)
KV_SOURCE = "transformers 5.23 cache_utils.py DynamicSlidingWindowLayer.update (keys = full_key_states[:, :, -W+1:])"


def activations(
    model: Model,
    context: int,
    batch: int,
    dtype_bytes: int,
    dtype: str,
    w: Widths | None = None,
    attending: Attending | None = None,
    storage: int = 0,
) -> Term:
    """The inference working-set estimate as a Term (see the module docstring); ``w`` reuses
    widths. ``attending`` (:mod:`paramcount.memory.runtimes.transformers.attention`) adds what the attention kernel
    allocates (masks, T×T scores, keys and values repeated to every head); ``storage`` is the
    bytes sliding-window layers hold past their window after the prefill (the cache keeps a view
    of the whole concatenated keys and values)."""
    w = w or widths(model)
    b, tokens = dtype_bytes, batch * context
    k = attending.kernel(context, dtype) if attending else None
    ffn_phase = tokens * (4 * w.hidden + w.ffn) * b
    # the costliest kind of layer's attention (masked sliding layers, unmasked full ones)
    calls = [(0, 0)]
    for each in attending.kernels(context, dtype) if attending else ():
        repeat = 2 * w.heads_width if each.repeats else 0
        calls.append(
            (repeat, per_call(each, batch, context, attending.heads, b, attending.sinks, dtype, attending.path))
        )
    repeat, quad = max(calls, key=lambda c: tokens * c[0] * b + c[1])
    attn_phase = tokens * (4 * w.hidden + w.attention + repeat) * b + quad
    layer = max(ffn_phase, attn_phase)
    masks = held(k, batch, context, b, attending.kinds, attending.path, attending.heads) if k else 0
    positions = batch if w.last_only else tokens
    logits = positions * w.logits * (b + (4 if w.last_only else 0))
    where = ("last position, + fp32 copy" if w.last_only else "every position") if w.logits else "no LM head"
    parts = [
        Term(
            "activations.layer",
            "widest layer",
            layer,
            _layer_formula(w, batch, context, b, repeat, quad),
            "",
            True,
            SOURCE,
        ),
        Term("activations.logits", f"logits ({where})", logits, f"{positions}·{w.logits}", "", True, SOURCE),
    ]
    if masks:
        parts.append(
            Term(
                "activations.masks", "attention masks held all forward", masks, f"{masks:,} B", k.why, True, ATTN_SOURCE
            )
        )
    if storage:
        said = "the cache keeps a view of each sliding layer's whole prefill keys and values"
        parts.append(
            Term(
                "activations.sliding",
                "sliding layers' prefill keys and values past the window",
                storage,
                f"{storage:,} B",
                said,
                True,
                KV_SOURCE,
            )
        )
    total = sum(t.bytes for t in parts)
    formula = " + ".join(f"{t.bytes:,}" for t in parts) + f" = {total:,} B"
    attention = f"{k.why}" if k else "fused attention (no T×T scores)"
    assumption = (
        f"one layer's tensors alive at a time; {attention}; {dtype} activations; "
        f"logits: {where} (V = {w.logits:,}); --context, --batch"
    )
    label = f"activations ({dtype}, {context:,} tokens × {batch})"
    return Term("activations", label, total, formula, assumption, True, SOURCE, tuple(parts))


def _layer_formula(w: Widths, batch: int, context: int, b: int, repeat: int, quad: int) -> str:
    """max(MLP phase, attention phase): B·T·(4h + W_ffn)·b against B·T·(4h + W_attn [+ repeated
    keys and values])·b [+ the kernel's T×T tensors]."""
    attn = f"4·{w.hidden} + {w.attention}" + (f" + {repeat}" if repeat else "")
    return (
        f"max({batch}·{context}·(4·{w.hidden} + {w.ffn})·{b}, {batch}·{context}·({attn})·{b}"
        + (f" + {quad:,}" if quad else "")
        + ")"
    )
