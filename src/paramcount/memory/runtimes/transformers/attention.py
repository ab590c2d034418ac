"""Which attention transformers runs, which kernel PyTorch picks for it, and what that allocates.

transformers 5.23 (``PreTrainedModel._check_and_adjust_attn_implementation``) runs ``sdpa``
unless the model class sets ``_supports_sdpa = False`` (then ``eager``: :data:`EAGER_DEFAULT`),
or the caller asks (``--attn``). What each costs beyond a layer's per-token tensors, for batch
B, context T, H query heads and activations of b bytes:

- ``sdpa`` without a mask (``masking_utils._ignore_causal_mask_sdpa``: no padding and no
  sliding window the context reaches) calls ``scaled_dot_product_attention(is_causal=True)``,
  and PyTorch runs its flash kernel in fp16/bf16, with ``enable_gqa`` for grouped heads
  (``integrations/sdpa_attention.use_gqa_in_sdpa``): nothing T×T. In fp32 there is no flash
  kernel: without grouped heads the memory-efficient kernel (nothing T×T); with them the math
  kernel (``_scaled_dot_product_attention_math``), which builds the causal mask (two T×T bool
  tensors, then a T×T float one), repeats the keys and values and holds the fp32 scores, their
  softmax and ``_safe_softmax``'s bool copy of the scores (``eq(-inf)``, to zero rows wholly
  masked): 9·B·H·T² bytes at once. Measured on an H200: Qwen2.5 0.5B at 4,096 × 2, Qwen2.5
  1.5B at 16,384 and Qwen2.5 7B at 8,192 × 2 held that bool copy at the peak; the allocator
  replayed with it (tools/alloc_trace.py) comes within 0.5% of their peak allocations.
- ``sdpa`` with a mask (a sliding window the context reaches): ``sdpa_mask`` builds one
  T×T bool mask per forward, held by every layer (its batch is a broadcast view); keys and
  values are repeated to every head (``repeat_kv``: no ``enable_gqa`` with a mask), and each
  call converts the mask to an additive bias in the compute dtype for the memory-efficient
  kernel: ``convert_boolean_attn_mask``, one ``at::where(mask, 0, -inf)`` since PyTorch 2.5
  (before it a ``logical_not`` copy as well), B·T²·b. Measured on an H200 (PyTorch 2.11):
  Gemma 3 1B at 32,768 tokens allocated 6.61 GB at the peak, which the mask held and one bias
  (3·T² bytes) account for, with no room for a T² ``logical_not``.
- ``eager`` (``eager_attention_forward``): a float mask B·T²·b per mask kind (full, sliding),
  held all forward (``masking_utils.eager_mask``); per layer the scores in the compute dtype
  and ``softmax(scores, dtype=float32).to(dtype)``. PyTorch's ``softmax`` (aten
  ``native/SoftMax.cpp``) computes fp16 input straight into an fp32 result on CUDA
  (``half_to_float``) but first converts any other dtype with ``toType``: in bf16 the scores,
  their fp32 copy and the fp32 softmax are alive at once, (b + 8)·B·H·T² bytes, more than the
  cast back afterwards ((2b + 4)·B·H·T²: scores, softmax, bf16 copy); in fp16 that cast is the
  peak, 8·B·H·T²; in fp32 the scores and the softmax, 8·B·H·T² (the cast is no copy). Measured
  on an H200: Llama 3.2 1B at 8,192 tokens, 24.62 GB at the peak, 21.47 GB of it the bf16
  scores' 10 bytes. gpt-oss adds its sinks as a column and
  runs the softmax in the compute dtype: the scores, the concatenation and the softmax,
  3b·B·H·T·(T + 1) (``models/gpt_oss/modeling_gpt_oss.eager_attention_forward``). BLOOM, MPT,
  DeBERTa-v2 and MPNet have eager paths of their own (:data:`PATHS`).
- ``flash_attention_2``: fp16/bf16 only, windows in the kernel, nothing T×T.

Checked against the H100 measurements in tests/fixtures/gpu_h100.json: gpt-oss-20b's eager
prefill at 8,192 tokens (26.4 GB beyond the weights and cache at the peak; 3b·B·H·T·(T+1)
is 25.8 GB of it), Gemma 3 1B's sliding-window sdpa, Qwen2.5 0.5B in fp32 (math kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....errors import ParamcountError
from ....model import Model
from ...core.terms import Term

IMPLEMENTATIONS = ("sdpa", "eager", "flash_attention_2")
SOURCE = (
    "transformers 5.23 integrations/sdpa_attention.py sdpa_attention_forward, masking_utils.py sdpa_mask / "
    "eager_mask, models/*/modeling_*.py eager_attention_forward; PyTorch "
    "aten/src/ATen/native/transformers/attention.cpp (_fused_sdp_choice, _scaled_dot_product_attention_math, "
    "convert_boolean_attn_mask); checked against tests/fixtures/gpu_h100.json (H100)"
)
# Model types whose transformers 5.23 class sets ``_supports_sdpa = False``, or leaves it at
# PreTrainedModel's default False (GPT-J's and GPT-Neo's: their attention classes have no sdpa
# path, models/gptj/modeling_gptj.py GPTJ_ATTENTION_CLASSES): they run eager by default
# (tests/oracle checks this table against the classes).
EAGER_DEFAULT = frozenset(
    {
        "bloom",
        "deberta-v2",
        "deepseek_v4",
        "gemma2",
        "gemma4_audio",
        "gpt_neo",
        "gpt_oss",
        "gptj",
        "granite_swa",
        "granitemoe_swa",
        "mimo_v2_flash",
        "mpnet",
        "mpt",
        "pegasus_x",
        "speech_to_text",
        "t5gemma",
        "vaultgemma",
        "wavlm",
    }
)
AGAIN_SOURCE = (
    "PyTorch c10/cuda/CUDACachingAllocator.cpp (best-fit reuse of cached blocks, splitting large ones), "
    "aten/src/ATen/native/SoftMax.cpp softmax; transformers eager_attention_forward; checked against "
    "tests/fixtures/gpu_h200.json (H200 eager runs)"
)
SINKS = frozenset({"gpt_oss"})  # eager attention with a sink column, softmax in the compute dtype
# Eager paths of their own (the others: transformers' eager_attention_forward), each as its
# modeling file runs it. "alibi-held" (models/bloom/modeling_bloom.py BloomAttention.forward):
# ``alibi.baddbmm`` gives the scores, ``+ attention_mask`` a second tensor while the first stays
# bound (``attention_scores``), then the fp32 softmax as above; and BloomBlock returns its
# probabilities, which BloomModel's loop keeps (``outputs``) through the next layer's attention:
# two b·B·H·T² more than the generic path. "alibi-fp32" (models/mpt/modeling_mpt.py
# MptAttention.forward): the bf16/fp16 scores plus the fp32 ALiBi bias (``build_mpt_alibi_tensor``,
# never cast) promote to fp32, so ``masked_fill`` and ``softmax(scores.float())`` run in fp32 in
# every dtype: 5 · 2 B · B·H·T² at ``.to(dtype)`` in fp16 too (no half_to_float path); its
# causal mask is held as bool (``create_causal_mask(...).to(torch.bool)``), B·T² bytes.
# Softmax in the compute dtype (no fp32 copy): "disentangled" (models/deberta_v2/modeling_deberta_v2.py
# DisentangledSelfAttention): the content scores stay bound while ``disentangled_attention_bias``
# holds the gathered c2p scores, the running ``score``, the gathered p2c scores and their scaled
# copy, 5b·B·H·T²; "relative-bias" (models/mpnet/modeling_mpnet.py MPNetSelfAttention): the scores
# and their masked copy, then it and the softmax, 2b·B·H·T², beside the relative position bias
# ``MPNetEncoder.compute_position_bias`` expands and holds all forward, B·H·T² in the compute dtype.
PATHS = {"bloom": "alibi-held", "mpt": "alibi-fp32", "deberta-v2": "disentangled", "mpnet": "relative-bias"}
NATIVE_SOFTMAX = {"disentangled": 5, "relative-bias": 2}  # score-sized tensors alive at once


@dataclass(frozen=True)
class Kernel:
    """What one attention call runs as: ``impl`` transformers' choice, ``kernel`` PyTorch's
    (``flash``, ``efficient``, ``math``, ``eager``), ``masked`` whether a T×T mask exists,
    ``repeats`` whether keys and values are copied to every query head."""

    impl: str
    kernel: str
    masked: bool
    repeats: bool
    why: str


def implementation(model: Model, attn: str | None) -> tuple[str, str]:
    """The attention implementation and why: ``--attn``, else transformers' default."""
    if attn is not None:
        if attn not in IMPLEMENTATIONS:
            raise ParamcountError(f"--attn must be one of {', '.join(IMPLEMENTATIONS)}, not {attn!r}", field="--attn")
        if attn == "sdpa" and model.model_type in EAGER_DEFAULT:
            raise ParamcountError(f"transformers has no sdpa attention for {model.model_type}", field="--attn")
        return attn, "--attn"
    if model.model_type in EAGER_DEFAULT:
        return "eager", f"transformers' default for {model.model_type} (its class does not support sdpa)"
    return "sdpa", "transformers' default"


def kernel(impl: str, dtype: str, windowed: bool, grouped: bool) -> Kernel:
    """PyTorch's kernel for ``impl`` at ``dtype``; ``windowed``: a sliding window the context
    reaches (sdpa then gets a mask); ``grouped``: fewer key/value heads than query heads."""
    if impl == "flash_attention_2":
        if dtype == "fp32":
            raise ParamcountError("flash_attention_2 runs in fp16 or bf16 only, not fp32", field="--attn")
        return Kernel(impl, "flash", False, False, "FlashAttention-2: no T×T tensor, windows in the kernel")
    if impl == "eager":
        return Kernel(impl, "eager", True, grouped, "eager: every layer's scores and softmax")
    if windowed:
        why = "sdpa with a sliding-window mask: the memory-efficient kernel with an additive bias"
        return Kernel(impl, "efficient", True, grouped, why)
    if dtype != "fp32":
        return Kernel(impl, "flash", False, False, "sdpa, no mask: PyTorch's flash kernel (no T×T)")
    if grouped:
        return Kernel(impl, "math", False, True, "sdpa in fp32 with grouped heads: PyTorch's math kernel")
    return Kernel(impl, "efficient", False, False, "sdpa in fp32: the memory-efficient kernel (no T×T)")


def per_call(
    k: Kernel, batch: int, context: int, heads: int, b: int, sinks: bool = False, dtype: str = "", path: str = ""
) -> int:
    """Bytes one attention call allocates beyond its per-token tensors (T×T and B·T² terms);
    ``dtype`` tells fp16 (softmax straight to fp32) from bf16 (converted first) at b = 2;
    ``path`` a model's own eager path (:data:`PATHS`)."""
    square = batch * context * context
    if k.kernel == "efficient" and k.masked:
        return square * b  # the additive bias (at::where of the bool mask)
    if k.kernel == "math":
        return 9 * heads * square + 6 * context * context  # fp32 scores, softmax, bool eq; ones, tril, mask
    if k.kernel == "eager":
        if sinks:
            return 3 * b * heads * batch * context * (context + 1)
        if path == "alibi-held":  # + the scores kept bound and the previous layer's probabilities
            return 2 * b * heads * square + per_call(k, batch, context, heads, b, dtype=dtype)
        if path == "alibi-fp32" and b < 4:  # scores promoted to fp32 by the bias, in fp16 too
            return (b + 8) * heads * square
        if path in NATIVE_SOFTMAX:
            return NATIVE_SOFTMAX[path] * b * heads * square
        if b >= 4 or dtype == "fp16":  # fp32: scores + softmax; fp16: scores + softmax + cast back
            return 8 * heads * square
        return (b + 8) * heads * square  # bf16: scores, their fp32 copy, the fp32 softmax
    return 0


def cached_again(
    k: Kernel, batch: int, context: int, heads: int, b: int, sinks: bool, dtype: str, path: str = ""
) -> Term | None:
    """Eager attention in bf16: the score blocks the caching allocator holds beyond the peak.

    Each layer allocates its scores, their scaled and masked copies and the bf16 cast (blocks
    of U = 2·B·H·T² bytes) and the fp32 copy and softmax (2U each). Best-fit reuse of those
    cached blocks, split by the layer's smaller tensors between calls, leaves the allocator
    holding about 8U for the 5U alive at once: 3U beyond the peak allocation. Measured on an
    H200 (peak reserved − peak allocated): 3.0U for Llama 3.2 1B at 8,192 tokens, Gemma 2 2B
    at 8,192 and Qwen2.5 0.5B at 8,192 × 2; 2.8U for Llama 3.2 3B at 8,192; 2.7U for it at
    4,096 × 2; 2.6U for Gemma 2 9B at 4,096 × 2; 2.55U for Qwen3 8B at 4,096 × 2; 1.6U for
    Phi-3 mini at 4,096; 0.9U for Qwen2.5 1.5B at 4,096 × 4 (planned 3U: over). The allocator
    replayed on these forwards' own allocations (tools/alloc_sim.py, tests/test_alloc_trace.py)
    gives the same run either end: under 1U or 2–3U beyond the peak, by where the driver places
    the segments (best fit splits the lowest address among equal blocks), which no plan can
    know; the larger is planned. fp16 (no fp32 copy: 0.3U measured) and fp32 add nothing here,
    nor do paths whose softmax runs in the compute dtype (:data:`NATIVE_SOFTMAX`: no fp32
    blocks); MPT's fp16 scores are promoted to fp32 (:data:`PATHS`), its blocks as bf16's.
    Replayed: MPT 7B in bf16 at 2,048 × 1 within +5.7% with them, BLOOM 560M within +2.6%
    (tests/test_replay_sweep.py). An estimate."""
    if k.kernel != "eager" or sinks or path in NATIVE_SOFTMAX or b >= 4 or (dtype == "fp16" and path != "alibi-fp32"):
        return None
    unit = 2 * heads * batch * context * context
    formula = f"3 × 2 B · B·H·T² = 3 × 2 · {batch} · {heads} · {context:,}² = {3 * unit:,} B"
    said = "eager attention's score blocks, cached and split between layers (bf16 softmax path)"
    return Term("overhead.again", "eager score blocks cached again", 3 * unit, formula, said, True, AGAIN_SOURCE)


def exact_blocks(k: Kernel) -> bool:
    """Whether one call's T×T tensors are served from blocks of their own size, reused whole by
    every layer, so that the caching allocator holds nothing beyond them: the math kernel's.

    Its fp32 scores, their softmax and ``_safe_softmax``'s bool copy are three sizes, the same
    in every layer, each past 10 MiB at any context that matters, so each reserves a segment of
    its size rounded to 2 MiB (c10/cuda/CUDACachingAllocator.cpp ``get_allocation_size``); all
    are freed when the call returns, and best fit (``get_free_block``: smallest block that fits)
    gives the next layer's requests those very blocks, unsplit (``should_split``: no remainder).
    The layer's per-token tensors are smaller than the smallest of them but ask first for the
    cached blocks of their own sizes. Replayed (``--replay``, tests/fixtures/replay_sweep.jsonl):
    Qwen2.5 0.5B and Qwen3 0.6B in fp32 at 8,192 × 1 held 0.26 GB and 1.3 GB beyond peak
    allocations of 11.1 GB and 14.6 GB, 8.9 GB and 12.1 GB of them the math kernel's. Eager
    bf16's blocks, split between calls, are :func:`cached_again`'s."""
    return k.kernel == "math"


def exact_again(k: Kernel, batch: int, context: int, heads: int) -> Term | None:
    """The math kernel: one bool block (B·H·T² bytes) held beyond the peak allocation.

    Of its three blocks (:func:`exact_blocks`) the bool copy is the smallest, so between calls
    best fit serves the layer's per-token tensors too large for any other cached block from it
    (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``), splitting it, and the next call's
    bool copy reserves a segment of its own; the split one stays cached, most of it free.
    Replayed (``--replay``): Llama 3.2 1B in fp32 at 8,192 × 1 held a second 2.15 GB bool
    segment, 1.88 GB of it free, at its peak. An estimate of the allocator's order."""
    if not exact_blocks(k):
        return None
    unit = heads * batch * context * context
    formula = f"1 B · B·H·T² = {batch} · {heads} · {context:,}² = {unit:,} B"
    said = "the math kernel's bool block, split between calls by the layer's tensors and reserved again"
    return Term("overhead.again", "math kernel's bool block reserved again", unit, formula, said, True, AGAIN_SOURCE)


def held(k: Kernel, batch: int, context: int, b: int, kinds: int, path: str = "", heads: int = 0) -> int:
    """Masks held through the whole forward: sdpa's T×T bool mask (batch broadcast), eager's
    float mask B·T²·b per mask kind (``kinds``: full and/or sliding layers), MPT's as bool;
    MPNet's relative position bias, B·H·T²·b (``heads``)."""
    if k.kernel == "eager":
        bias = heads * batch * context * context * b if path == "relative-bias" else 0
        return bias + kinds * batch * context * context * (1 if path == "alibi-fp32" else b)
    if k.kernel == "efficient" and k.masked:
        return context * context
    return 0


@dataclass(frozen=True)
class Attending:
    """A model's attention as transformers runs it: ``impl`` (and ``why``), query ``heads``,
    whether key/value heads are ``grouped``, the sliding ``windows`` of its layers, whether it
    has full-attention layers (``full``) and attention ``sinks``."""

    impl: str
    why: str
    heads: int
    grouped: bool
    windows: tuple[int, ...]
    full: bool
    sinks: bool
    path: str = ""

    def kernel(self, context: int, dtype: str) -> Kernel:
        """The masked kernel where a sliding window is reached, else the unmasked one."""
        # masking_utils._ignore_causal_mask_sdpa: a mask once kv_length >= the window
        return kernel(self.impl, dtype, any(w <= context for w in self.windows), self.grouped)

    def kernels(self, context: int, dtype: str) -> tuple[Kernel, ...]:
        """One kernel per kind of layer: sliding layers whose window the context reaches run
        with a mask; full-attention layers, and sliding ones it does not reach, without (in fp32
        with grouped heads that is the math kernel: Gemma 3 1B's full layers at 8,192 tokens
        allocated its 8·H·T² fp32 scores on an H200, tests/fixtures/gpu_h200.json)."""
        masked = any(w <= context for w in self.windows)
        unmasked = self.full or any(w > context for w in self.windows) or not masked
        kinds = [kernel(self.impl, dtype, True, self.grouped)] if masked else []
        kinds += [kernel(self.impl, dtype, False, self.grouped)] if unmasked else []
        return tuple(dict.fromkeys(kinds))

    @property
    def kinds(self) -> int:
        return int(self.full) + int(bool(self.windows))


def attending(model: Model, layout: object, attn: str | None, heads_width: int = 0) -> Attending:
    """The model's attention from its KV-cache layout (windows, heads) and its config's query
    heads, else the attention output's width (``heads_width``) over the key head dim."""
    impl, why = implementation(model, attn)
    kinds = [k for k in getattr(layout, "kinds", ()) if k.attention in ("full", "sliding")]
    windows = tuple(sorted({k.window for k in kinds if k.window}))
    kv_heads = max((k.kv_heads for k in kinds), default=0)
    key_dim = max((k.key_dim for k in kinds), default=0)
    heads = query_heads(model) or (heads_width // key_dim if key_dim else 0) or kv_heads or 1
    full = any(k.window is None for k in kinds)
    sinks, path = model.model_type in SINKS, PATHS.get(model.model_type, "")
    return Attending(impl, why, heads, 0 < kv_heads < heads, windows, full, sinks, path)


_HEAD_FIELDS = ("num_attention_heads", "num_heads", "encoder_attention_heads")


def query_heads(model: Model) -> int | None:
    """Query heads, from the config (the T×T tensors are one per head), or None."""
    from ....arch import family

    try:
        c = family(model.model_type).cfg(model.config, model.source)
    except ParamcountError:
        return None
    for name in _HEAD_FIELDS:
        value = c.get(name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
