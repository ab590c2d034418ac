"""The allocations a transformers step makes, in order, without a GPU: meta tensors and a dispatch mode.

Imported only inside the replay's child process (:mod:`.worker`), or by tools/ and tests: it
imports torch. For a case (``kind``, a config, T, B, options) this builds the model on the meta
device from the config (no weights read, no code from a repository run) and runs the step
tools/measure_gpu.py measures on a GPU (a ``use_cache=True, logits_to_keep=1`` forward; two
AdamW steps; LoRA's two steps) under a ``TorchDispatchMode`` that writes, for every storage an
aten op creates, ``("A", key, bytes, op)``, and ``("F", key)`` when the storage dies (its Python
object is preserved while the storage lives, so a ``weakref.finalize`` fires exactly then,
whoever held it: autograd's saved tensors included). The weights come first, one allocation per
storage in the order the modules create them. :mod:`.allocator` replays the events through the
CUDA caching allocator's rules.

What differs from a CUDA run, so far as known: the attention kernel is chosen here as
``_fused_sdp_choice`` chooses it on a Hopper card (flash for fp16/bf16 without a mask, the
memory-efficient kernel with one or in fp32, math in fp32 with grouped heads); kernels'
private workspaces (cuBLAS's, reductions' scratch) are not seen; ``torch.autocast("cuda")``
passes meta tensors by, so :class:`Autocast` casts as it would for ``mixed`` training, and
``at::dropout`` would take its unfused path on meta tensors, so :func:`dropout` takes CUDA's.
"""

from __future__ import annotations

import gc
import warnings
import weakref
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# cuBLAS' workspace, which PyTorch allocates through its caching allocator at the first matmul
# and keeps (aten/src/ATen/cuda/CublasHandlePool.cpp ``getCUDABlasLtWorkspace``): 34 MiB on the
# H100 (paramcount.memory.core.overhead.CUBLAS_WORKSPACE). tools/measure_gpu.py makes it before
# any model, so it is the first allocation here too.
CUBLAS_WORKSPACE = ("A", "cublas", 34 << 20, "cuBLAS workspace")
aten = torch.ops.aten


def half_to_float(args: tuple, kwargs: dict) -> bool:
    """softmax(fp16, dtype=float32): on CUDA one kernel writes fp32 (aten SoftMax.cpp ``softmax``)."""
    dtype = kwargs.get("dtype", args[2] if len(args) > 2 else None)
    return args[0].dtype == torch.float16 and dtype == torch.float32


def dropping(x: torch.Tensor, p: float, train: bool | None) -> bool:
    """Whether ``aten.dropout`` drops anything (else ATen hands the input back, uncopied)."""
    return bool(train) and p != 0 and x.numel() != 0


def safe_softmax(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten ``_safe_softmax`` as CUDA runs it: the softmax, then rows all -inf zeroed through a
    bool copy of the scores, B·H·T² bytes beside them (the meta kernel allocates the result
    alone). Zeroed in place: the H200's fp32 runs held the bool copy and no second result."""
    out = torch.softmax(x, dim, dtype=dtype)
    rows = x.eq(float("-inf")).all(dim, keepdim=True)
    return out.masked_fill_(rows, 0.0)


def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``scaled_dot_product_attention`` as PyTorch 2.11 runs it on an H100/H200 (sm90): its
    composite (aten attention.cpp) calls the kernel ``_fused_sdp_choice`` picks there; on meta
    tensors it would always run the math kernel."""
    if attn_mask is None and q.dtype in (torch.float16, torch.bfloat16):
        return aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
    if q.dtype == torch.float32 and enable_gqa:  # the memory-efficient kernel takes no grouped heads
        return aten._scaled_dot_product_attention_math(
            q, k, v, attn_mask, dropout_p, is_causal, None, scale=scale, enable_gqa=True
        )[0]
    if attn_mask is not None and attn_mask.dtype == torch.bool:  # convert_boolean_attn_mask
        attn_mask = torch.where(attn_mask, torch.zeros((), dtype=q.dtype), float("-inf"))  # one bias, q's dtype
    lse = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    return aten._scaled_dot_product_efficient_attention(q, k, v, attn_mask, lse, dropout_p, is_causal, scale=scale)[0]


class Autocast:
    """``torch.autocast("cuda", dtype=torch.bfloat16)`` for meta tensors, which its dispatch key
    passes by: the ops of its lower-precision list that a transformers step calls (``linear``,
    ``matmul``, sdpa) take their fp32 arguments cast to bf16, above autograd as the key does it,
    and a leaf that requires grad (a weight) is cast once and the cast cached until the forward
    ends (aten/src/ATen/autocast_mode.cpp ``cached_cast``). Off unless ``on``; no cache while
    checkpointing recomputes a layer in the backward (each recomputation runs its own autocast
    context, whose cache ends with it)."""

    def __init__(self) -> None:
        self.on, self.caching, self.cache = False, False, {}

    def cast(self, t):
        if not (self.on and isinstance(t, torch.Tensor) and t.dtype == torch.float32):
            return t
        if not (self.caching and t.is_leaf and t.requires_grad):
            return t.to(torch.bfloat16)
        if id(t) not in self.cache:
            self.cache[id(t)] = (t, t.to(torch.bfloat16))  # the weight too: its id stays its own
        return self.cache[id(t)][1]

    def wrap(self, f):
        return lambda *args, **kwargs: f(*(self.cast(a) for a in args), **kwargs)

    @contextmanager
    def forward(self):
        self.caching = True
        try:
            yield
        finally:
            self.caching, self.cache = False, {}


def dropout(x: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
    """``F.dropout`` as CUDA runs it: ``at::dropout`` takes the fused kernel on a CUDA tensor with
    0 < p < 1 (aten/src/ATen/native/Dropout.cpp ``is_fused_kernel_acceptable``), ``native_dropout``,
    whose backward keeps its bool mask (derivatives.yaml ``native_dropout``); on meta tensors it
    would take ``_dropout_impl``, whose product saves a noise tensor in the input's dtype."""
    if not (training and 0 < p < 1 and x.numel()) or inplace:
        return _DROPOUT(x, p, training, inplace)
    return torch.native_dropout(x, p, True)[0]


_DROPOUT = torch.nn.functional.dropout


@contextmanager
def kernels(autocast: Autocast | None = None):
    """``sdpa`` and the fused dropout in place of PyTorch's, above autograd (so that a training
    step saves what the chosen kernel's backward needs) and in checkpointing's recomputation too;
    with ``autocast``, its casts before ``linear``, ``matmul``, ``addmm`` (GPT-2's ``Conv1D``,
    transformers pytorch_utils.py; autocast_mode.cpp lists it lower-precision) and sdpa."""
    F = torch.nn.functional
    saved = F.scaled_dot_product_attention, F.linear, torch.matmul, torch.addmm, F.dropout
    F.scaled_dot_product_attention = autocast.wrap(sdpa) if autocast else sdpa
    F.dropout = dropout
    if autocast:
        F.linear, torch.matmul = autocast.wrap(F.linear), autocast.wrap(torch.matmul)
        torch.addmm = autocast.wrap(torch.addmm)
    try:
        yield
    finally:
        F.scaled_dot_product_attention, F.linear, torch.matmul, torch.addmm, F.dropout = saved


class Recorder(TorchDispatchMode):
    """Writes an event for each storage an op creates and for each storage that dies."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []
        self.live: dict[int, int] = {}

    def allocate(self, t: torch.Tensor, op: str = "weights") -> None:
        s = t.untyped_storage()
        key = s._cdata
        if key in self.live:
            return
        self.live[key] = s.nbytes()
        self.events.append(("A", key, s.nbytes(), op))
        weakref.finalize(s, self.free, key)

    def free(self, key: int) -> None:
        if self.live.pop(key, None) is not None:
            self.events.append(("F", key))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:  # .item() on meta: the common case's answer
            return {torch.bool: True}.get(args[0].dtype, 1)  # e.g. "no packed sequences"
        if func is aten._grouped_mm.default and args[0].dtype == torch.float32:
            # fp32 routed experts (``mixed``: grouped_mm is not autocast-enabled) run on CUDA,
            # while the meta kernel takes bf16 only: its fp32 output, from bf16 stand-ins
            bf16 = [a.to(torch.bfloat16) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
            out = func(*bf16, **kwargs).to(torch.float32)
            self.allocate(out, str(func))
            return out
        if func is aten._safe_softmax.default:  # its CUDA kernel is this composite (SoftMax.cpp)
            with self:
                return safe_softmax(*args, **kwargs)
        if func is aten.native_dropout.default:  # CUDA's fused kernel: the output and a bool mask
            out = func(*args, **kwargs)
            for t in out:
                self.allocate(t, str(func))
            return out
        if func is aten.dropout.default and not dropping(*args, **kwargs):
            # at::dropout returns its input itself when nothing is dropped (aten/src/ATen/native/
            # Dropout.cpp ``_dropout_impl``: ``if (p == 0 || !train || numel == 0) return input;``),
            # where the Python decomposition ``decompose`` would run copies it (torch/_decomp/
            # decompositions.py ``dropout``: ``input.clone()``): eval's dropouts allocate nothing
            return args[0]
        if func is aten.softmax.int and half_to_float(args, kwargs):
            func, args, kwargs = aten._softmax.default, (args[0], args[1], True), {}
        # A composite op seen whole (no autograd to decompose it, as in inference_mode) is
        # decomposed here, so that its inner tensors are seen as the CUDA run allocates them.
        with self:
            out = func.decompose(*args, **kwargs)
        if out is NotImplemented:
            out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "meta":
                self.allocate(t, str(func))
        return out


def build(rec: Recorder, config: Mapping[str, Any], dtype: torch.dtype, attn: str | None = None):
    """The model of ``config`` (its ``model_type`` one transformers knows) on the meta device,
    built under the recorder as tools/measure_gpu.py ``build`` makes it on a GPU: every storage
    the construction allocates is seen, those it frees too (a tied output layer's own weight,
    made and then replaced by the embedding's, leaves its block cached: the H100 held it)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**config)
    kw = {"attn_implementation": attn} if attn else {}
    with torch.device("meta"), rec:
        m = AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kw)
    for t in [*m.parameters(), *m.buffers()]:
        rec.allocate(t)
    return m


def checkpoint(m) -> None:
    """transformers' checkpointing (``gradient_checkpointing_enable`` before 5.23)."""
    (getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable)()


def ids(m, T: int, B: int) -> torch.Tensor:
    return torch.zeros(B, T, dtype=torch.long, device="meta")


def infer(rec: Recorder, config: Mapping[str, Any], T: int, B: int, dtype: str = "bf16", attn: str | None = None, **_):
    m = build(rec, config, DTYPES[dtype], attn).eval()
    x = ids(m, T, B)
    rec.allocate(x, "input_ids")
    mark = len(rec.events)
    with torch.inference_mode(), kernels(), rec:
        out = m(input_ids=x, use_cache=True, logits_to_keep=1)
    del out
    return mark


def two_steps(rec: Recorder, m, opt, T: int, B: int, autocast: bool = False) -> list[int]:
    x = ids(m, T, B)
    rec.allocate(x, "input_ids")
    marks, cast = [], Autocast()
    cast.on = autocast
    with kernels(cast if autocast else None), rec:
        for _ in range(2):
            marks.append(len(rec.events))
            with cast.forward():
                loss = m(input_ids=x, labels=x).loss
            loss.backward()
            del loss
            opt.step()
            opt.zero_grad(set_to_none=True)
    return marks


def train(rec: Recorder, config: Mapping[str, Any], T: int, B: int, precision: str, recompute: str = "none", **_):
    """``mixed`` is fp32 weights under autocast to bf16, as tools/measure_gpu.py runs it."""
    m = build(rec, config, torch.float32 if precision == "mixed" else DTYPES[precision]).train()
    if recompute == "full":
        checkpoint(m)
    m.config.use_cache = False
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, foreach=True)  # foreach: CUDA's default
    return two_steps(rec, m, opt, T, B, autocast=precision == "mixed")


def lora(rec: Recorder, config: Mapping[str, Any], T: int, B: int, r: int, targets=None, recompute: str = "none", **_):
    from peft import LoraConfig, get_peft_model

    m = build(rec, config, torch.bfloat16)
    if recompute == "full":
        checkpoint(m)
        m.enable_input_require_grads()
    with rec:
        m = get_peft_model(m, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets, lora_dropout=0.0))
    m.train()
    m.config.use_cache = False
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4, foreach=True)
    return two_steps(rec, m, opt, T, B)


def trace(kind: str, config: Mapping[str, Any], T: int, B: int, options: dict) -> tuple[list[tuple], object]:
    """The events of one case, and where its steps begin (an index, or a list for training)."""
    rec = Recorder()
    rec.events.append(CUBLAS_WORKSPACE)
    step = {"infer": infer, "train": train, "lora": lora}[kind]
    # No step's tensor sits in a reference cycle (the same events with the collector on and
    # off), so it stays off: its timing cannot move a free, and the events are reproducible.
    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # transformers' deprecations, peft's notices
            marks = step(rec, config, T, B, **options)
    finally:
        gc.enable()
    return rec.events, marks
