"""A training plan per GPU: model states, saved activations, adapters and overhead."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...model import Model
from ..core import overhead as _overhead
from ..core.plan import Plan, as_model, context_for, positive
from ..core.terms import Term
from ..tree.widths import shape_model
from .optimizer import RECIPE, default_recompute

# The rows of a training fit: full fine-tuning at each precision, and QLoRA (NF4 base + LoRA).
TRAINING_PRECISIONS = ("fp32", "mixed", "bf16", "qlora")


class TrainingPlanner:
    """One training setup; plans for any context, batch, GPU count and ZeRO stage.

    The model states (weights, master weights, gradients, optimizer states, adapters) come from
    :func:`paramcount.memory.training.optimizer.training` once per (ZeRO stage, GPUs); the activations, the
    same as ``training``'s, from :mod:`paramcount.memory.training.saved` per (context, batch).
    """

    def __init__(
        self,
        model: Model,
        precision: str = "mixed",
        *,
        optimizer: str = "adamw",
        zero: int = 0,
        gpus: int = 1,
        recompute: str | None = None,
        flash: bool = True,
        lora: Any = None,
        lora_targets: Any = None,
        qlora: bool | int = False,
        overhead: Any = None,
    ):
        self.model = model
        self.qlora_bits = (4 if qlora is True else qlora or None) if precision != "qlora" else 4
        self.precision = "mixed" if precision == "qlora" else precision
        self.optimizer, self.zero, self.gpus = optimizer, zero, gpus
        self.adapters = _adapters(model, lora, lora_targets, self.qlora_bits)
        self.recompute, self.flash = recompute or default_recompute(self.adapters), flash
        self.recompute_from = "--recompute" if recompute else RECIPE if self.adapters else "Trainer's default"
        self._states: dict[tuple[int, int], list[Term]] = {}
        self.shapes = shape_model(model)  # what the activation estimate reads widths from
        self.overhead = _overhead.parse(overhead) if overhead is not None else _overhead.MEASURED_TRAINING

    def states(self, zero: int, gpus: int) -> list[Term]:
        if (zero, gpus) not in self._states:
            from ..training.optimizer import states

            terms = states(
                self.model,
                optimizer=self.optimizer,
                precision=self.precision,
                zero=zero,
                gpus=gpus,
                lora=self.adapters,
                qlora_bits=self.qlora_bits,
                autocast=zero == 0,  # no ZeRO: torch.autocast, as transformers' Trainer runs bf16=True
            )
            self._states[zero, gpus] = terms
        return self._states[zero, gpus]

    def plan(
        self, context: int, batch: int = 1, gpus: int | None = None, zero: int | None = None, why: str = ""
    ) -> Plan:
        from ..training.saved import of_step

        context, batch = positive(context, "--context"), positive(batch, "--batch")
        gpus, zero = gpus or self.gpus, self.zero if zero is None else zero
        step = self._step(context, batch)
        act = of_step(self.shapes, step)
        square = 4 * step.batch * step.heads * step.context**2 if step.eager else 0  # eager's fp32 softmax
        raw = self.states(zero, gpus)
        states = _at_peak(raw, act)
        base = (*states, act)
        weights = sum(t.bytes for t in base if t.key in ("weights", "master_weights"))
        rest = sum(t.bytes for t in base) - weights
        tokens = context * batch
        covered = "the training terms beyond the weights"
        steps = self._first_step(raw, act, tokens, weights, weights + rest) if not zero else None
        if steps:  # checkpointed full training: the first step's larger phase, then the loss's blocks
            rest, covered, again = steps
        else:
            again = self._again(states, act, tokens, self._outgrown(raw, act, tokens, zero, square), square)
        again += self._eager_blocks(step)
        extra = self.overhead.split_term(weights, rest, covered, again)
        settings = self._settings(context, batch, gpus, zero, why)
        return Plan(self.model, "training", (*base, extra), settings, planner=self)

    def _again(
        self, states: list[Term], act: Term, tokens: int, outgrown: int | None, square: int = 0
    ) -> tuple[Term, ...]:
        """What the caching allocator holds beyond the peak allocation, modelled apart from the
        reserve's share: the loss's blocks under checkpointing, the activations' blocks still
        cached at the optimizer step where that phase then outgrows the backward's (``outgrown``:
        the gradients and AdamW's temporaries less the activations; None without gradients)."""
        from ..training.saved import vocab

        out = []
        if self.recompute == "full":
            rows, moments = tokens * vocab(self.shapes), _moments(states)
            other = act.bytes - sum(p.bytes for p in act.parts if p.key == "activations.loss")
            logits = (4 if self.precision == "fp32" else 2) * rows
            out.append(_overhead.loss_blocks_again(moments, other, logits, 4 * rows, self._largest_gradient()))
            out.append(_overhead.logits_block_held(moments, other, logits))
        if outgrown is not None:
            out.append(self._step_phase(states, act, tokens, outgrown, square))
        return tuple(out)

    def _first_step(
        self, raw: list[Term], act: Term, tokens: int, weights: int, peak: int
    ) -> tuple[int, str, tuple[Term, ...]] | None:
        """Full training with ``gradient_checkpointing_enable()`` under the measured overhead: the
        share of the first step's larger phase beyond the weights, and what the second step's peak
        holds beyond its allocation (:func:`~paramcount.memory.core.overhead.first_step_again`);
        None for any other setup (LoRA's frozen weights, no checkpointing, ``--overhead``)."""
        from ..training.saved import vocab

        grads = next((t.bytes for t in raw if t.key == "gradients"), 0)
        if self.recompute != "full" or not grads or self.adapters is not None:
            return None
        if not isinstance(self.overhead, _overhead.Measured):
            return None
        rows, moments = tokens * vocab(self.shapes), _moments(raw)
        logits = (4 if self.precision == "fp32" else 2) * rows
        other = act.bytes - sum(p.bytes for p in act.parts if p.key == "activations.loss")
        backward = weights + act.bytes + logits
        step = weights + grads + moments + moments // 2
        spill = grads + moments - other - logits
        term = _overhead.first_step_again(backward, step, peak, spill, 4 * rows, self._largest_gradient())
        phase = "backward" if backward >= step else "optimizer step"
        covered = f"the first step's larger phase beyond the weights (its {phase})"
        return max(backward, step) - weights, covered, (term,)

    def _eager_blocks(self, step: Any) -> tuple[Term, ...]:
        """Eager attention under ``gradient_checkpointing_enable()``: the T×T blocks of one
        attention call, freed when the checkpointed forward's layer returns, cached at the loss's
        peak where each (an fp32 softmax, 4·B·H·T²) is smaller than the loss's fp32 N×V blocks,
        which best fit (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``) cannot serve from
        them. One call's working set as inference plans it
        (:func:`~paramcount.memory.runtimes.transformers.attention.per_call`: in bf16 the scores,
        an fp32 copy and the fp32 softmax, 10·B·H·T²). Replayed (tools/replay_sweep.py): GPT-Neo
        1.3B's LoRA at 2,048 × 1 held four 268 MB fp32 blocks free at its peak (1.07 GB; this:
        0.67 GB). An estimate of the allocator's order."""
        from ..runtimes.transformers.attention import Kernel, per_call
        from ..training.saved import vocab

        square = step.batch * step.heads * step.context**2
        if self.recompute != "full" or not step.eager or 4 * square >= 4 * step.tokens * vocab(self.shapes):
            return ()
        eager = Kernel("eager", "eager", True, False, "")
        dtype = {"fp32": "fp32", "fp16": "fp16"}.get(self.precision, "bf16")
        held = per_call(eager, step.batch, step.context, step.heads, 4 if dtype == "fp32" else 2, dtype=dtype)
        formula = f"one eager call's T×T blocks, {held // square}·B·H·T² = {held:,} B"
        said = "eager attention's freed T×T blocks, smaller than the loss's, cached at its peak (checkpointing)"
        source = _overhead.AGAIN_SOURCE
        return (
            Term(
                "overhead.scores", "eager attention's blocks cached (checkpointing)", held, formula, said, True, source
            ),
        )

    def _largest_gradient(self) -> int:
        """The largest gradient a step allocates: the biggest trainable tensor's, in the
        parameters' dtype (fp32 under autocast); 0 for LoRA, whose adapters are small."""
        if self.adapters is not None:
            return 0
        from .optimizer import model_shapes

        biggest = max((math.prod(shape) for shape, _ in model_shapes(self.model).items), default=0)
        return biggest * (2 if self.precision == "bf16" else 4)

    def _step_phase(self, states: list[Term], act: Term, tokens: int, outgrown: int, square: int = 0) -> Term:
        """The larger of the two phases after the first optimizer step, beyond the activations: that
        step's own (the activations' blocks cached beside its tensors), or, where its states fit no
        activation block and took the loss's freed blocks instead, the next step's loss allocating
        them again (:func:`~paramcount.memory.core.overhead.states_in_loss_blocks`)."""
        from ..training.saved import vocab

        fit = _blocks_fit(self.shapes, tokens, self.precision, square)
        # where the step's tensors fit the activations' blocks, best fit reuses them: none cached beside
        cached = _overhead.activations_cached(0 if fit and square else act.bytes, outgrown)
        if self.recompute == "full" or outgrown >= 0 or fit:
            return cached
        rows = tokens * vocab(self.shapes)
        logits = (4 if self.precision == "fp32" else 2) * rows
        again = _overhead.states_in_loss_blocks(_moments(states), logits, 4 * rows)
        return again if again.bytes > cached.bytes else cached

    def _outgrown(self, states: list[Term], act: Term, tokens: int, zero: int, square: int = 0) -> int | None:
        """The optimizer step's gradients and AdamW temporaries less the activations the backward
        freed (negative where the activations are larger), where the step holds the activations'
        blocks cached beside its own; None where it does not: without a gradients term (LoRA's
        frozen weights), or where best fit reuses the activations' blocks for the step's
        parameter-shaped tensors (:func:`_blocks_fit`), and under ZeRO (DeepSpeed's optimizer and
        buffers, not torch's AdamW: not read), where only a step that outgrows them still holds them
        (a gradients term beyond the activations)."""
        grads = next((t for t in states if t.key == "gradients"), None)
        if grads is None or not grads.bytes:
            return None
        outgrown = grads.bytes + _moments(states) // 2 - act.bytes
        if zero or _blocks_fit(self.shapes, tokens, self.precision, square):
            return outgrown if outgrown > 0 else None
        return outgrown

    def _step(self, context: int, batch: int) -> Any:
        from ..training.saved import step

        options = {"recompute": self.recompute, "flash": self.flash, "adapters": self.adapters}
        return step(self.model, context, batch, self.precision, **options)

    def _settings(self, context: int, batch: int, gpus: int, zero: int, why: str) -> dict[str, Any]:
        a = self.adapters
        return {
            "precision": "qlora" if self.qlora_bits else self.precision,
            "optimizer": self.optimizer,
            "zero": zero,
            "gpus": gpus,
            "context": context,
            "context_from": why or "--context",
            "batch": batch,
            "recompute": self.recompute,
            "recompute_from": self.recompute_from,
            "flash": self.flash,
            "lora": None if a is None else f"rank {a.rank} on {_targets_text(a.targets)}",
            "qlora": {4: "nf4", 8: "int8"}.get(self.qlora_bits),
            "overhead": self.overhead.text,
        }

    def total(self, context: int, batch: int = 1) -> int:
        return self.plan(context, batch).total


def _at_peak(states: list[Term], act: Term) -> list[Term]:
    """The gradients as the peak holds them. The step peaks at the start of the loss's backward,
    with the activations saved and no gradients yet; the backward frees the activations as the
    gradients fill in, and the optimizer step holds the gradients and AdamW's temporaries
    (``torch._foreach_sqrt`` of exp_avg_sq: one moment's size). The gradients term is what
    that second phase needs beyond the first: none when the activations are larger."""
    grads = next((t for t in states if t.key == "gradients"), None)
    if grads is None:
        return states
    temp = _moments(states) // 2
    need = max(0, grads.bytes + temp - act.bytes)
    formula = f"max(0, gradients {grads.bytes:,} + AdamW temporaries {temp:,} − activations {act.bytes:,}) = {need:,} B"
    said = (
        f"{grads.label}: {grads.bytes:,} B at the optimizer step, when the activations are freed; the total "
        "counts the larger phase once"
    )
    held = Term("gradients", f"{grads.label}, beyond the activations", need, formula, said, True, grads.source)
    return [held if t is grads else t for t in states]


def _blocks_fit(shapes: Model, tokens: int, precision: str, square: int = 0) -> bool:
    """Whether the optimizer step's parameter-shaped tensors fit in the activations' freed blocks.

    The bulk of both is the feed-forward's: an N × I activation of p bytes (gate, up, their
    product: training.saved ``_inner``) against an I × h weight's gradient, AdamW state
    (``torch.zeros_like(p)`` in torch/optim/adamw.py ``_init_group``, the parameter's dtype) and
    ``_foreach_sqrt`` temporary, of s bytes (4 for fp32 weights, also under autocast; 2 in bf16).
    The caching allocator serves each from the smallest cached block at least its size
    (c10/cuda/CUDACachingAllocator.cpp ``get_free_block``), so they fit when N·p ≥ h·s, and never
    for routed experts, whose weights are one (E, out, in) tensor each."""
    from ..tree.layers import layers

    p, s = (4, 4) if precision == "fp32" else (2, 4) if precision == "mixed" else (2, 2)
    ffns = [(g.hidden, f) for g in layers(shapes) for f in g.ffn]
    # eager attention's fp32 softmax, saved a layer (``square`` = 4·B·H·T² bytes), holds the
    # weight instead where it is the larger block (GPT-J at 2,048 tokens: 268 MB, a 134 MB state)
    return bool(ffns) and all(not f.experts and max(tokens * p, square // f.inner) >= h * s for h, f in ffns)


def _moments(states: list[Term]) -> int:
    """The optimizer's moment tensors' bytes (AdamW: exp_avg and exp_avg_sq), 0 without any."""
    opt = next((t for t in states if t.key == "optimizer"), None)
    return sum(p.bytes for p in opt.parts if p.key == "optimizer.moments") if opt else 0


def _targets_text(targets: Any) -> str:
    return targets if isinstance(targets, str) else ",".join(targets)


def _adapters(model: Model, lora: Any, targets: Any, qlora_bits: int | None) -> Any:
    """A LoRA result from a rank (and targets), or the one given; QLoRA implies rank 8."""
    from ..training.lora import LoRA
    from ..training.lora import lora as make_lora

    if isinstance(lora, LoRA):
        return lora
    if lora is None and targets is None and qlora_bits is None:
        return None
    if isinstance(targets, str) and "," in targets:
        targets = tuple(t.strip() for t in targets.split(",") if t.strip())
    kwargs = {} if targets is None else {"targets": targets}
    return make_lora(model, rank=8 if lora is None else lora, **kwargs)


def train(
    model: Model | str | Mapping[str, Any],
    *,
    optimizer: str = "adamw",
    precision: str = "mixed",
    zero: int = 0,
    gpus: int = 1,
    batch: int = 1,
    context: int | None = None,
    recompute: str | None = None,
    flash: bool = True,
    lora: Any = None,
    lora_targets: Any = None,
    qlora: bool | int = False,
    overhead: Any = None,
) -> Plan:
    """Training memory per GPU: the terms of :func:`paramcount.memory.training.optimizer.training` + overhead.

    ``precision`` is ``mixed`` (bf16 with fp32 master weights), ``fp32``, ``bf16`` or ``qlora``
    (an NF4 base with LoRA adapters); ``lora`` a rank (default targets peft's for the model type, or
    ``lora_targets``) or a :class:`~paramcount.memory.training.lora.LoRA`; ``qlora`` True (4-bit) or 8;
    ``batch`` the micro-batch per GPU; ``context`` as for :func:`inference`.
    """
    model = as_model(model)
    context, why = context_for(model, context)
    planner = TrainingPlanner(
        model,
        precision,
        optimizer=optimizer,
        zero=zero,
        gpus=gpus,
        recompute=recompute,
        flash=flash,
        lora=lora,
        lora_targets=lora_targets,
        qlora=qlora,
        overhead=overhead,
    )
    return planner.plan(context, batch, why=why)
