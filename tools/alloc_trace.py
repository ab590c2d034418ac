"""The allocations a transformers step makes, in order, without a GPU: meta tensors and a dispatch mode.

Not part of the package. For the cases of tools/measure_gpu.py (``[kind, model id, T, B,
options]``), this builds the model on the meta device from the catalog's config and runs the
same step (a ``use_cache=True, logits_to_keep=1`` forward; two AdamW steps; LoRA's two steps)
under a ``TorchDispatchMode`` that writes, for every storage an aten op creates, ``("A", key,
bytes)``, and ``("F", key)`` when the storage dies (its Python object is preserved while the
storage lives, so a ``weakref.finalize`` fires exactly then, whoever held it: autograd's saved
tensors included). The weights come first, one allocation per storage in the order the modules
create them. tools/alloc_sim.py replays the events through the CUDA caching allocator's rules.

What differs from a CUDA run, so far as known: the attention kernel is chosen here as
``_fused_sdp_choice`` chooses it on a Hopper card (flash for fp16/bf16 without a mask, the
memory-efficient kernel with one or in fp32, math in fp32 with grouped heads); kernels'
private workspaces (cuBLAS's, reductions' scratch) are not seen; ``torch.autocast("cuda")``
passes meta tensors by, so :class:`Autocast` casts as it would for ``mixed`` training.

    python tools/alloc_trace.py CASES.json    # prints each case's events count and peak
"""

from __future__ import annotations

import gc
import json
import sys
import warnings
import weakref
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: tools.NAME, as the others import each other

from tools.measure_gpu import DTYPES  # noqa: E402
from tools.measure_gpu import build as build_model  # noqa: E402

aten = torch.ops.aten


def half_to_float(args: tuple, kwargs: dict) -> bool:
    """softmax(fp16, dtype=float32): on CUDA one kernel writes fp32 (aten SoftMax.cpp ``softmax``)."""
    dtype = kwargs.get("dtype", args[2] if len(args) > 2 else None)
    return args[0].dtype == torch.float16 and dtype == torch.float32


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


@contextmanager
def kernels(autocast: Autocast | None = None):
    """``sdpa`` in place of PyTorch's, above autograd (so that a training step saves what the
    chosen kernel's backward needs) and in checkpointing's recomputation too; with ``autocast``,
    its casts before ``linear``, ``matmul`` and sdpa."""
    F = torch.nn.functional
    saved = F.scaled_dot_product_attention, F.linear, torch.matmul
    F.scaled_dot_product_attention = autocast.wrap(sdpa) if autocast else sdpa
    if autocast:
        F.linear, torch.matmul = autocast.wrap(F.linear), autocast.wrap(torch.matmul)
    try:
        yield
    finally:
        F.scaled_dot_product_attention, F.linear, torch.matmul = saved


class Recorder(TorchDispatchMode):
    """Writes an event for each storage an op creates and for each storage that dies."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []
        self.live: dict[int, int] = {}

    def allocate(self, t: torch.Tensor) -> None:
        s = t.untyped_storage()
        key = s._cdata
        if key in self.live:
            return
        self.live[key] = s.nbytes()
        self.events.append(("A", key, s.nbytes()))
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
            self.allocate(out)
            return out
        if func is aten._safe_softmax.default:  # its CUDA kernel is this composite (SoftMax.cpp)
            with self:
                return safe_softmax(*args, **kwargs)
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
                self.allocate(t)
        return out


def build(rec: Recorder, model_id: str, dtype: torch.dtype, attn: str | None = None):
    """tools/measure_gpu.py's model, on the meta device, its weights recorded first."""
    m = build_model(model_id, dtype, attn, device="meta")
    for t in [*m.parameters(), *m.buffers()]:
        rec.allocate(t)
    return m


def checkpoint(m) -> None:
    """transformers' checkpointing (``gradient_checkpointing_enable`` before 5.23)."""
    (getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable)()


def ids(m, T: int, B: int) -> torch.Tensor:
    return torch.zeros(B, T, dtype=torch.long, device="meta")


def infer(rec: Recorder, model_id: str, T: int, B: int, dtype: str = "bf16", attn: str | None = None, **_):
    m = build(rec, model_id, DTYPES[dtype], attn).eval()
    x = ids(m, T, B)
    rec.allocate(x)
    mark = len(rec.events)
    with torch.inference_mode(), kernels(), rec:
        out = m(input_ids=x, use_cache=True, logits_to_keep=1)
    del out
    return mark


def two_steps(rec: Recorder, m, opt, T: int, B: int, autocast: bool = False) -> list[int]:
    x = ids(m, T, B)
    rec.allocate(x)
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


def train(rec: Recorder, model_id: str, T: int, B: int, precision: str, recompute: str = "none", **_):
    """``mixed`` is fp32 weights under autocast to bf16, as tools/measure_gpu.py runs it."""
    m = build(rec, model_id, torch.float32 if precision == "mixed" else DTYPES[precision]).train()
    if recompute == "full":
        checkpoint(m)
    m.config.use_cache = False
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, foreach=True)  # foreach: CUDA's default
    return two_steps(rec, m, opt, T, B, autocast=precision == "mixed")


def lora(rec: Recorder, model_id: str, T: int, B: int, r: int, targets=None, recompute: str = "none", **_):
    from peft import LoraConfig, get_peft_model

    m = build(rec, model_id, torch.bfloat16)
    if recompute == "full":
        checkpoint(m)
        m.enable_input_require_grads()
    with rec:
        m = get_peft_model(m, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets, lora_dropout=0.0))
    m.train()
    m.config.use_cache = False
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4, foreach=True)
    return two_steps(rec, m, opt, T, B)


def trace(kind: str, model_id: str, T: int, B: int, options: dict) -> tuple[list[tuple], object]:
    """The events of one case, and where its steps begin (an index, or a list for training)."""
    rec = Recorder()
    step = {"infer": infer, "train": train, "lora": lora}[kind]
    # No step's tensor sits in a reference cycle (the same events with the collector on and
    # off), so it stays off: its timing cannot move a free, and the events are reproducible.
    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # transformers' deprecations, peft's notices
            marks = step(rec, model_id, T, B, **options)
    finally:
        gc.enable()
    return rec.events, marks


def main() -> None:
    from tools.alloc_sim import replay

    for case in json.loads(Path(sys.argv[1]).read_text()):
        events, marks = trace(*case)
        peaks = replay(events, marks)
        print(case, len(events), "events", peaks, flush=True)


if __name__ == "__main__":
    main()
