"""Runtime overhead: what a framework holds beyond the tensors a plan counts. A model, not an identity.

The default is ``0.5GiB+10%``:

- 0.5 GiB fixed for the CUDA context and library workspaces (cuBLAS, cuDNN). PyTorch measured
  a bare context at 287,047,680 bytes with lazy module loading and 666,632,192 bytes without
  (pytorch/pytorch#86509, the change that made lazy loading its default).
- 10% of the other terms for the caching allocator's fragmentation and rounding: a little over
  the 8% vLLM leaves beside its claim by default (``gpu_memory_utilization=0.92``), and half of
  the 20% EleutherAI's "Transformer Math 101" adds on top of the weights for all of inference.

``--overhead`` sets both: ``1GiB+5%``, ``800MB``, ``15%``, ``0``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ...errors import ParamcountError, bounded_number
from .gpus import GIB, parse_size
from .terms import Term

SOURCE = (
    "CUDA context: pytorch/pytorch#86509 (287 MB lazy, 667 MB eager); fragmentation margin: vLLM "
    "gpu_memory_utilization=0.92 (8% left), EleutherAI Transformer Math 101 (+20% at inference)"
)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class Overhead:
    """A fixed amount plus a share of the other terms."""

    fixed: int = GIB // 2
    percent: Fraction = Fraction(10)

    @property
    def text(self) -> str:
        parts = [_size_text(self.fixed).replace(" ", "")] if self.fixed else []
        parts += [f"{_num(self.percent)}%"] if self.percent else []
        return "+".join(parts) or "0"

    def of(self, others: int) -> int:
        return self.fixed + self.share(others)

    def share(self, others: int) -> int:
        return int(others * self.percent / 100)

    def term(self, others: int, covered: str = "the other terms") -> Term:
        fixed, share = _size_text(self.fixed), self.share(others)
        formula = f"{fixed} + {_num(self.percent)}% × {others:,} B = {self.fixed + share:,} B"
        assumption = f"CUDA context and workspaces + allocator fragmentation, {self.text} of {covered} (--overhead)"
        context = Term("overhead.context", "CUDA context and workspaces", self.fixed, fixed, "", True, SOURCE)
        frag = f"{_num(self.percent)}% × {others:,} B"
        fragmentation = Term("overhead.fragmentation", "allocator fragmentation", share, frag, "", True, SOURCE)
        label = f"overhead ({self.text})"
        return Term("overhead", label, self.fixed + share, formula, assumption, True, SOURCE, (context, fragmentation))

    def split(self, weights: int, rest: int) -> int:
        """The same as :meth:`of` over weights + rest (the interface :class:`Measured` shares)."""
        return self.of(weights + rest)

    def split_term(self, weights: int, rest: int, covered: str, again: tuple[Term, ...] = ()) -> Term:
        """``again`` (blocks the measured allocator holds beyond allocation) belongs to :class:`Measured`'s
        model; a fixed-and-percent overhead of the user's own covers it or not, as they chose."""
        return self.term(weights + rest, covered)


DEFAULT = Overhead()


def _num(x: Fraction) -> str:
    return str(int(x)) if x.denominator == 1 else f"{float(x):g}"


def _size_text(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("GB", 10**9), ("MB", 10**6)):
        if n and n % (size // 2 if unit == "GiB" else size) == 0 and n >= size // 2:
            return f"{_num(Fraction(n, size))} {unit}"
    return f"{n:,} B"


def parse(text: Any) -> Any:
    """``0.5GiB+10%``, ``1GB``, ``15%`` or ``0``: a fixed size and/or a percentage (an
    :class:`Overhead` or :class:`Measured` is kept)."""
    if isinstance(text, (Overhead, Measured)):
        return text
    fixed, percent = 0, Fraction(0)
    for part in str(text).split("+"):
        m = _PERCENT.match(part)
        if m:
            percent += Fraction(bounded_number(m.group(1), "--overhead", "a percentage"))
        elif part.strip() != "0":
            fixed += parse_size(part, field="--overhead")
    if percent > 100:
        raise ParamcountError(f"a percentage over 100 makes no sense here: {text!r}", field="--overhead")
    return Overhead(fixed, percent)


# ---- transformers on PyTorch, as measured -------------------------------------------------------

MIB = 2**20
# Bytes in use on the card after CUDA's start and one cuBLAS matmul, before any model
# (total − free from cudaMemGetInfo): H100 80GB, driver 580.159.04, PyTorch 2.11.0+cu130.
CUDA_CONTEXT = 751_632_384
# cuBLAS' workspace, allocated through PyTorch's caching allocator at the first matmul: Llama 3.2
# 1B's allocation after it was built (2,507,281,920 B) less its bf16 parameters (2,471,628,800 B)
# and its 1,536 B of rotary buffers is 34 MiB exactly.
CUBLAS_WORKSPACE = 34 * MIB
# The caching allocator's reserve beyond the peak allocation: 64 MiB of small-pool and segment
# rounding, and 30% of what a step allocates beyond the weights (KV cache and working set, or
# the training terms' activations), whose blocks of varying sizes fragment the cached segments.
# Inference on the H100 held 9%–49% of that (tests/fixtures/gpu_h100.json, peak_reserved − peak_alloc).
RESERVE_FIXED = 64 * MIB
RESERVE_SHARE = Fraction(30)
MEASURED_SOURCE = (
    "measured on an H100 80GB (PyTorch 2.11, CUDA 13.0; tests/fixtures/gpu_h100.json): context_used after "
    "CUDA's start and one cuBLAS matmul; cuBLAS workspace from torch.cuda.memory_allocated; reserve from "
    "max_memory_reserved − max_memory_allocated; PyTorch c10/cuda/CUDACachingAllocator.cpp rounds and caches blocks"
)


@dataclass(frozen=True)
class Measured:
    """The transformers runtime's default overhead, from measurement: the CUDA context, cuBLAS'
    workspace, and the caching allocator's reserve beyond allocation (a share of the bytes a
    step allocates beyond the weights)."""

    context: int = CUDA_CONTEXT
    workspace: int = CUBLAS_WORKSPACE
    fixed: int = RESERVE_FIXED
    percent: Fraction = RESERVE_SHARE

    @property
    def text(self) -> str:
        return "measured"

    def reserve(self, rest: int) -> int:
        return self.fixed + int(rest * self.percent / 100)

    def split(self, weights: int, rest: int) -> int:
        """The overhead's bytes, given the weights and the rest a step allocates."""
        return self.context + self.workspace + self.reserve(rest)

    def split_term(self, weights: int, rest: int, covered: str, again: tuple[Term, ...] = ()) -> Term:
        """The overhead's parts; ``again``: cached blocks the allocator holds beyond the peak
        allocation, modelled apart (:func:`loss_blocks_again`, :func:`activations_cached`,
        eager attention's score blocks)."""
        reserve = self.reserve(rest)
        total = self.context + self.workspace + reserve + sum(t.bytes for t in again)
        parts = (
            Term(
                "overhead.context",
                "CUDA context (measured)",
                self.context,
                f"{self.context:,} B",
                "",
                True,
                MEASURED_SOURCE,
            ),
            Term(
                "overhead.workspace",
                "cuBLAS workspace (allocated)",
                self.workspace,
                "34 MiB",
                "",
                True,
                MEASURED_SOURCE,
            ),
            Term(
                "overhead.reserve",
                "caching allocator's reserve beyond allocation",
                reserve,
                f"64 MiB + {_num(self.percent)}% × {rest:,} B = {reserve:,} B",
                f"a share of {covered}",
                True,
                MEASURED_SOURCE,
            ),
            *(t for t in again if t.bytes),
        )
        formula = " + ".join(f"{p.bytes:,}" for p in parts) + f" = {total:,} B"
        said = (
            f"CUDA context and cuBLAS workspace as measured; allocator reserve: 64 MiB + {_num(self.percent)}% "
            f"of {covered} (--overhead to set your own)"
        )
        return Term("overhead", "overhead (measured)", total, formula, said, True, MEASURED_SOURCE, parts)


MEASURED = Measured()
# Training held less beyond its peak allocation than inference's fragmented prefill: 0.6%–15% of
# the terms beyond the weights in the H100 training runs (tests/fixtures/gpu_h100.json), 1%–16%
# in the H200 runs whose peak is the backward (gpu_h200.json). Where more is held, the cause is
# modelled apart: :func:`loss_blocks_again` (checkpointing), :func:`activations_cached` (a peak
# at the optimizer step).
MEASURED_TRAINING = Measured(percent=Fraction(15))
AGAIN_SOURCE = (
    "PyTorch c10/cuda/CUDACachingAllocator.cpp (best-fit reuse of cached blocks, splitting large ones); "
    "transformers loss/loss_utils.py ForCausalLMLoss; torch/optim/adamw.py (states created at the first step); "
    "checked against the training runs in tests/fixtures/gpu_h100.json and gpu_h200.json"
)


def loss_blocks_again(states: int, other: int, logits: int, block: int, largest_grad: int = 0) -> Term:
    """Training with ``gradient_checkpointing_enable()``: the loss's fp32 N×V blocks, allocated again.

    With each layer's input all a checkpointed step keeps, the loss's N×V fp32 buffers (the
    log-softmax, its gradient and the gradient's input: three blocks of 4·N·V bytes) are the
    largest blocks the first step frees. AdamW creates its states at that step's end, and the
    caching allocator serves each from the smallest cached block that fits, splitting it: first
    the blocks the step's ``other`` tensors freed (layer inputs, the recomputed layers), then the
    logits' block (b·N·V, about half of it still free: the backward's gradients split the rest),
    then the loss's blocks. The next step's loss finds no whole block where a state split one,
    and reserves a new one: one per 4·N·V of the states left over, at most the three. Where
    the states fit in the smaller blocks (LoRA's adapters; Qwen2.5 0.5B, whose 2.0 GB of states
    are far under its 5.0 GB logits block) nothing is allocated again. Checked against the
    allocator replayed on the steps' own allocations (tools/alloc_trace.py, tools/alloc_sim.py,
    tests/test_alloc_trace.py), which reserved, in the second step, 0 blocks for Qwen2.5 0.5B
    (bf16, 4,096 × 4) and for four LoRA runs, one for Qwen3 0.6B (4,096 × 2), Gemma 3 1B and
    Llama 3.2 1B, two for Qwen2.5 1.5B (4,096 × 2; planned one), three for SmolLM3 3B, Granite
    3.1 3B-A800M and Phi-3 mini (2,048 × 2); and against the H200 runs (tests/fixtures/gpu_h200.json): Llama 3.2 3B,
    bf16, 4,096 × 2, 13.5 GB beyond the peak allocation (three blocks, 12.6 GB); Qwen3 0.6B
    5.3 GB (one, 5.0 GB); Qwen2.5 0.5B 3.6 GB (none).

    Where the largest parameter's gradient (``largest_grad``, the vocabulary-sized embedding's)
    is at least a loss block, none is allocated again: that gradient, AdamW's ``_foreach_sqrt``
    temporary of its state and the tied output's gradient sum (or an untied head's own two) are
    served from segments of their own, and freed before the next loss (``zero_grad`` sets the
    gradients to None), so they hold its blocks. Replayed at 512 × 1 in bf16: none again for
    Qwen3 0.6B, Llama 3.2 1B, OLMo 1B, pythia-410m, Qwen2.5 1.5B and SmolLM3 3B (gradient
    ≥ block), one for Gemma 3 1B, three for Qwen2.5 0.5B (0.27 GB gradient, 0.31 GB blocks).
    An estimate of the allocator's order."""
    left = max(0, states - other - logits // 2)
    n = min(3, -(-left // block)) if block and largest_grad < block else 0
    formula = (
        f"min(3, ⌈max(0, states {states:,} − other freed {other:,} − ½ logits {logits:,}) / {block:,}⌉) × {block:,} B"
        f" = {n * block:,} B"
        + (f" (none: the largest gradient {largest_grad:,} B ≥ a block)" if largest_grad >= block else "")
    )
    said = "gradient checkpointing: the optimizer's states split the loss's freed blocks; the next step allocates anew"
    return Term(
        "overhead.again", "loss blocks allocated again (checkpointing)", n * block, formula, said, True, AGAIN_SOURCE
    )


def states_in_loss_blocks(states: int, logits: int, block: int) -> Term:
    """Training without checkpointing, where the optimizer's parameter-shaped tensors fit in none
    of the activations' blocks (an fp32 MLP weight's state larger than a bf16 N × I activation:
    training.plan ``_blocks_fit``): AdamW's states, created at the first step (torch/optim/adamw.py
    ``_init_group``), take the largest freed blocks, the logits' (b·N·V) and the loss's (4·N·V,
    three), as :func:`loss_blocks_again` reads it for checkpointing with no other freed block to
    take them first; the next step's loss allocates anew each loss block a state split. Replayed
    (``--replay``): Gemma 3 1B, mixed, 2,048 × 1 reserved three loss blocks (6.44 GB) again in
    its second step (this: three); Qwen2.5 1.5B (mixed, 2,048 × 1) one, 1.25 GB (this: three,
    3.73 GB), where the first optimizer step's cached blocks (:func:`activations_cached`, 5.5 GB)
    are the larger phase and set the plan. An estimate of the allocator's order."""
    left = max(0, states - logits // 2)
    n = min(3, -(-left // block)) if block else 0
    formula = f"min(3, ⌈max(0, states {states:,} − ½ logits {logits:,}) / {block:,}⌉) × {block:,} B = {n * block:,} B"
    said = "the optimizer's first states split the loss's freed blocks; the next step allocates them anew"
    return Term("overhead.again", "loss blocks allocated again", n * block, formula, said, True, AGAIN_SOURCE)


def blocks_split(spill: int, block: int, largest_grad: int = 0) -> int:
    """The loss blocks (``block`` bytes each, three) that ``spill`` bytes of states split, packed
    best fit: none where the largest gradient is at least a block (:func:`first_step_again`)."""
    return min(3, -(-max(0, spill) // block)) if block and largest_grad < block else 0


def first_step_again(backward: int, step: int, peak: int, spill: int, block: int, largest_grad: int = 0) -> Term:
    """Full training with ``gradient_checkpointing_enable()``: what the second step's peak holds
    beyond its allocation (``peak``: weights, states and the activations at the loss's backward).

    The first step reserves for the larger of its two phases: the backward (weights, activations
    and the bf16 logits' block, b·N·V, freed by the loss's upcast and cached) and the optimizer
    step (weights, gradients, AdamW's states and its ``_foreach_sqrt`` temporaries, one moment's
    size: torch/optim/adamw.py ``_init_group``, ``_multi_tensor_adamw``), each with the reserve's
    share. The gradients (allocated in the backward) and then the states take the blocks the
    step freed, best fit (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``: the smallest
    that fits, split when larger): the checkpointed layers' tensors and the logits' block first,
    then the loss's fp32 N×V blocks (4·N·V, three). Every loss block a state split is no longer
    whole when the next step's loss asks for it, and a new segment is reserved: ⌈spill / block⌉,
    at most three, where ``spill`` = gradients + states − the other freed blocks − the logits'
    block; none where the largest gradient is at least a block (its segments of its own, freed
    by ``zero_grad``, hold the loss: :func:`loss_blocks_again`). The states inside the old loss
    blocks are in the peak allocation already, so the peak holds beyond it the larger phase plus
    the new blocks, less the allocation. Replayed (tools/replay_sweep.py's checkpointed cases):
    the end of the first step reserved 1.00–1.06 × the optimizer phase where it is the larger
    (Qwen2.5 0.5B at 2,048 × 1: 5.75 GB for 4.94; Llama 3.2 1B at 2,048 × 2: 12.41 for 12.36),
    and weights + 1.19–1.22 × the activations where the backward is; the second step then
    reserved whole loss blocks (two for Qwen2.5 0.5B at 2,048 × 1, 8.25 GB = 5.75 + 2 × 1.25).
    An estimate of the allocator's order."""
    n = blocks_split(spill, block, largest_grad)
    held = max(0, max(backward, step) + n * block - peak)
    formula = (
        f"max(0, max(backward {backward:,}, optimizer step {step:,}) + {n} × loss block {block:,} − peak {peak:,})"
        f" = {held:,} B; {n} = min(3, ⌈max(0, spill {spill:,}) / {block:,}⌉)"
        + (f" (none: the largest gradient {largest_grad:,} B ≥ a block)" if block and largest_grad >= block else "")
    )
    said = "gradient checkpointing: the first step's larger phase, and the loss blocks its states split, reserved again"
    return Term("overhead.again", "first step's phase and loss blocks again", held, formula, said, True, AGAIN_SOURCE)


def logits_block_held(states: int, other: int, logits: int) -> Term:
    """Training with ``gradient_checkpointing_enable()``: the logits' block, free and held at the peak.

    The loss upcasts the bf16 logits (b·N·V bytes) to fp32 and frees them; every block the
    loss's backward then asks for is a 4·N·V one, too large for it, and a checkpointed layer's
    tensors are far smaller, so at the peak the block sits in the cache, free, less what of the
    optimizer's states the step's other freed tensors could not hold and it took
    (:func:`loss_blocks_again`). The allocator replayed (tests/test_alloc_trace.py) holds it at
    the second step's peak: 2.49 GB free for Qwen2.5 7B's LoRA at 2,048 × 4 and 2.10 GB for
    Llama 3.1 8B's at 4,096 × 2, their whole logits blocks; 3.34 GB of Qwen2.5 0.5B's 4.98 GB
    (bf16, 4,096 × 4; planned 3.82). An estimate of the allocator's order."""
    held = max(0, logits - max(0, states - other))
    formula = f"max(0, logits {logits:,} − max(0, states {states:,} − other freed {other:,})) = {held:,} B"
    said = "gradient checkpointing: the bf16 logits' freed block, too small for the loss's fp32 blocks, stays cached"
    return Term("overhead.logits", "logits block held (checkpointing)", held, formula, said, True, AGAIN_SOURCE)


def activations_cached(activations: int, outgrown: int) -> Term:
    """The optimizer step's phase: half the activations' blocks still cached beside its tensors.

    The backward frees the activations, and the optimizer step then allocates parameter-shaped
    tensors: the gradients filled in during the backward, AdamW's states at the first step
    (torch/optim/adamw.py ``_init_group``: ``torch.zeros_like(p)`` per parameter, created at the
    first ``step()``, after the backward) and its temporaries (``torch._foreach_sqrt`` of
    ``exp_avg_sq`` in ``_multi_tensor_adamw``: one moment's size, a tensor per parameter). Best
    fit (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``) finds few of the activations'
    token-shaped blocks large enough for a weight-shaped tensor, so the step reserves new segments
    while about half the activations' blocks stay cached, free. That phase holds the gradients,
    temporaries and half the activations beyond the states; the next step's forward finds its
    blocks again. What the plan adds here is that phase beyond the larger of the backward's
    activations and the gradients term (gradients + temporaries − activations, ``outgrown``):
    min(½·activations, max(0, outgrown + ½·activations)).

    Measured on an H200 (peak reserved − peak allocated, against the planned activations), where
    the step outgrows the activations: 0.83 of them for Granite 3.1 3B-A800M (bf16, 1,024 × 2),
    0.76 (mixed, 2,048 × 1), 0.60 for Phi-3 mini (mixed, 1,024 × 2), 0.55 for SmolLM3 3B (mixed,
    1,024 × 2), 0.61 for OLMoE (bf16, 1,024 × 1), 0.26 for Llama 3.2 3B (bf16, 1,024 × 2).
    Replayed (``--replay``) where it does not: Qwen2.5 1.5B, mixed, 2,048 × 1 reserved 38.32 GB by
    the first optimizer step's end, 7.4 GB (0.54 of the activations) cached beyond the weights,
    gradients, states and temporaries, and its second step's peak added one loss block to that.
    This project's reading of the allocator, an estimate."""
    half = activations // 2
    held = min(half, max(0, outgrown + half))
    formula = f"min(½ × activations {activations:,}, max(0, outgrown {outgrown:,} + ½ × activations)) = {held:,} B"
    said = "the optimizer step: the backward's freed activation blocks stay cached beside the new parameter-shaped ones"
    return Term(
        "overhead.step", "activations' blocks cached at the optimizer step", held, formula, said, True, AGAIN_SOURCE
    )


TIED_SOURCE = (
    "transformers modeling_utils.py (from_config builds the output layer's own weight, then ties it to the "
    "embedding's); PyTorch c10/cuda/CUDACachingAllocator.cpp (the freed block stays cached); checked against "
    "the H100 runs (tests/fixtures/gpu_h100.json) and the replay (paramcount memory --replay)"
)


def tied_output_cached(tied: int, rest: int) -> Term:
    """A model whose output layer is tied to its embedding, built by ``from_config`` as the
    measured runs built it: the output layer's own weight is allocated, then replaced by the
    embedding's and freed; its block stays cached. The step's own allocations beyond the weights
    (``rest``) are served from it first, so it is held beyond them by what they leave of it.
    Replayed (``--replay``), this is what the H100 held beyond the peak on Qwen2.5 0.5B,
    Llama 3.2 1B and Gemma 3 1B at small contexts (−4% to −6% without it)."""
    held = max(0, tied - rest)
    formula = f"max(0, {tied:,} − {rest:,}) = {held:,} B"
    said = "the tied output layer's first weight, freed when tied, cached less what the step reuses of it"
    return Term("overhead.tied", "tied output layer's freed block, cached", held, formula, said, True, TIED_SOURCE)
