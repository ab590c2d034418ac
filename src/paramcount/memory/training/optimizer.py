"""Training memory: weights, master weights, gradients, optimizer states, activations, adapters.

Model states are identities of the tree's tensor shapes (exact bytes); activations are an
estimate of the tensors transformers' modules save for the backward
(:mod:`paramcount.memory.training.saved`, the term :func:`paramcount.memory.train`, ``fit`` and the web
page plan too). Mixed precision is as Rajbhandari et al. 2019 (ZeRO, arXiv:1910.02054, §3.1)
describe it: 16-bit weights and gradients, and an fp32
master copy beside the fp32 optimizer states, so AdamW costs 2 + 2 + (4 + 4 + 4) = 16 bytes
per parameter. ZeRO stage 1 partitions the optimizer states (master weights included) over
the N data-parallel GPUs, stage 2 the gradients too, stage 3 the weights too; every figure
is per GPU, rounded up to whole bytes. Optimizer states, tensor by tensor, as the optimizers
allocate them:

- ``adamw``/``adam`` (torch): ``exp_avg`` and ``exp_avg_sq`` in the master dtype, and a 0-d
  fp32 ``step`` per tensor;
- ``adam8bit``/``adamw8bit`` (bitsandbytes): tensors of ≥ 4,096 values (``min_8bit_size``)
  keep two uint8 states and an fp32 absmax per block of 256 values for each (blockwise
  quantisation); smaller tensors two fp32 states; the two 256-entry fp32 quantisation maps
  are shared by all tensors;
- ``sgd`` (torch, with momentum): one ``momentum_buffer``;
- ``adafactor`` (transformers, ``beta1=None``): for a tensor of ≥ 2 dims the row and column
  second-moment vectors (shape[:-1] and shape[:-2] + shape[-1:]), for a vector a full
  ``exp_avg_sq``, always fp32 (it upcasts 16-bit gradients); and a 0-d fp32 ``RMS`` per
  tensor. No first moment.

LoRA freezes the base (16-bit, or for QLoRA 4-bit NF4 with double quantisation as Dettmers
et al. 2023 train, or 8-bit LLM.int8) and trains the adapters, kept in fp32 (peft's
``autocast_adapter_dtype``), with fp32 gradients and optimizer states.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...errors import ParamcountError
from ...ir import Tie
from ...model import Model
from ..core.terms import Term
from ..tree.modules import Module, walk, walk_block
from .lora import LoRA
from .lora import lora as make_lora

OPTIMIZERS = ("adamw", "adam", "adam8bit", "adamw8bit", "sgd", "adafactor")
PRECISIONS = ("mixed", "fp32", "bf16")
ZERO_STAGES = (0, 1, 2, 3)
QLORA = {4: "nf4", 8: "bnb-int8"}
BNB_BLOCK = 256  # bitsandbytes blockwise 8-bit optimizers: one absmax per 256 values
BNB_MIN_8BIT = 4096  # bitsandbytes ``min_8bit_size``: smaller tensors keep 32-bit states
BNB_MAPS = 2 * 256 * 4  # the two shared fp32 quantisation maps (qmap1, qmap2)
ZERO_SOURCE = "Rajbhandari et al. 2019, ZeRO §3.1 and §5 (arXiv:1910.02054)"
# precision -> bytes of (weights, gradients, optimizer states); mixed adds an fp32 master copy
_BYTES = {"mixed": (2, 2, 4), "fp32": (4, 4, 4), "bf16": (2, 2, 2)}
_DTYPE = {2: "bf16", 4: "fp32"}
_STATE_WORDS = {"adamw": "AdamW: exp_avg + exp_avg_sq", "sgd": "SGD: momentum buffer", "adafactor": "Adafactor"}

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Shapes:
    """The tensors an optimizer updates, as (shape, copies) pairs."""

    items: tuple[tuple[Shape, int], ...]

    @property
    def params(self) -> int:
        return sum(math.prod(shape) * n for shape, n in self.items)

    @property
    def tensors(self) -> int:
        return sum(n for _, n in self.items)


def model_shapes(model: Model) -> Shapes:
    """Every unique parameter tensor of the model (ties counted once), repeats multiplied."""
    return Shapes(tuple(_own(walk(model), ties=False)))


def adapter_shapes(adapters: LoRA) -> Shapes:
    """lora_A and lora_B of every row, the full copies of ``modules_to_save`` (a tied weight
    copied becomes a tensor of its own), and the base biases ``bias`` unfreezes."""
    items = [(shape, r.copies) for r in adapters.rows for shape in (r.a, r.b)]
    model = adapters.model
    for s in adapters.saved:
        found = next(m for m in walk(model) if m.label == s.name)
        items += [(shape, n * s.copies) for shape, n in _own(walk_block(found.block, model.model_type), ties=True)]
    items += [((size,), copies) for size, copies in adapters.biases]
    return Shapes(tuple(items))


def _own(mods: Iterable[Module], ties: bool) -> Iterator[tuple[Shape, int]]:
    for m in mods:
        for t in m.tensors():
            if ties or not isinstance(t, Tie):
                yield tuple(int(d) for d in t.shape), m.copies


# ---- the public call --------------------------------------------------------------------------


# Where LoRA's default checkpointing comes from: TRL's SFTConfig sets gradient_checkpointing=True
# (trl/trainer/sft_config.py, TRL 1.16) and peft's prepare_model_for_kbit_training, which every
# QLoRA recipe calls, enables it (use_gradient_checkpointing=True, peft/utils/other.py, peft 0.21).
RECIPE = "TRL's SFTConfig and peft's prepare_model_for_kbit_training (gradient checkpointing on)"


def default_recompute(adapters: LoRA | None) -> str:
    """Checkpointing on for LoRA and QLoRA, as their recipes set it; off for full fine-tuning, as
    transformers' TrainingArguments(gradient_checkpointing=False) leaves it."""
    return "full" if adapters is not None else "none"


def training(
    model: Model,
    *,
    optimizer: str = "adamw",
    precision: str = "mixed",
    zero: int = 0,
    gpus: int = 1,
    batch: int = 1,
    context: int = 2048,
    recompute: str | None = None,
    flash: bool = True,
    lora: LoRA | int | None = None,
    qlora_bits: int | None = None,
) -> list[Term]:
    """The memory terms of one training step on each GPU: ``weights``, ``master_weights``
    (mixed precision, full fine-tuning), ``gradients``, ``optimizer``, ``adapters`` (LoRA),
    ``activations`` (an estimate, :func:`paramcount.memory.training.saved.activations`; ``batch`` is the
    micro-batch on each GPU).

    ``lora`` is a :func:`~paramcount.memory.training.lora.lora` result, or a rank for the default
    targets; ``qlora_bits`` (4 or 8) quantises the frozen base and implies LoRA.
    """
    from .saved import activations

    terms, adapters = _states(model, optimizer, precision, zero, gpus, lora, qlora_bits)
    recompute = recompute or default_recompute(adapters)
    options = {"precision": precision, "recompute": recompute, "flash": flash, "adapters": adapters}
    return [*terms, activations(model, batch, context, **options)]


def states(
    model: Model,
    *,
    optimizer: str = "adamw",
    precision: str = "mixed",
    zero: int = 0,
    gpus: int = 1,
    lora: LoRA | int | None = None,
    qlora_bits: int | None = None,
    autocast: bool = False,
) -> list[Term]:
    """:func:`training`'s terms but the activations: the model states, exact. ``autocast``: full
    fine-tuning under ``mixed`` as ``torch.autocast`` runs it (:func:`_autocast_states`)."""
    return _states(model, optimizer, precision, zero, gpus, lora, qlora_bits, autocast)[0]


def _states(
    model: Model,
    optimizer: str,
    precision: str,
    zero: int,
    gpus: int,
    lora: LoRA | int | None,
    bits: int | None,
    autocast: bool = False,
) -> tuple[list[Term], LoRA | None]:
    opt, zero, gpus = _check(optimizer, precision, zero, gpus, bits)
    adapters = None
    if lora is not None or bits is not None:
        adapters = lora if isinstance(lora, LoRA) else make_lora(model, rank=8 if lora is None else lora)
        terms = _lora_states(model, adapters, opt, precision, bits)
    elif autocast and precision == "mixed":
        terms = _autocast_states(model, opt)
    else:
        terms = _full_states(model, opt, precision)
    return [_shard(t, zero, gpus) for t in terms], adapters


def _check(optimizer: str, precision: str, zero: int, gpus: int, qlora_bits: int | None) -> tuple[str, int, int]:
    if optimizer not in OPTIMIZERS:
        raise ParamcountError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {optimizer!r}", field="optimizer")
    if precision not in PRECISIONS:
        raise ParamcountError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}", field="precision")
    if isinstance(zero, bool) or not isinstance(zero, int) or zero not in ZERO_STAGES:
        raise ParamcountError(f"zero must be a ZeRO stage 0, 1, 2 or 3, not {zero!r}", field="zero")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ParamcountError(f"gpus must be a whole number ≥ 1, not {gpus!r}", field="gpus")
    if qlora_bits is not None and qlora_bits not in QLORA:
        raise ParamcountError(f"qlora_bits must be 4 or 8, not {qlora_bits!r}", field="qlora_bits")
    return {"adam": "adamw", "adamw8bit": "adam8bit"}.get(optimizer, optimizer), zero, gpus


# ---- full fine-tuning -------------------------------------------------------------------------


def _full_states(model: Model, opt: str, precision: str) -> list[Term]:
    shapes = model_shapes(model)
    n = shapes.params
    w, g, s = _BYTES[precision]
    terms = [_per_param("weights", f"weights ({_DTYPE[w]})", n, w, f"training copy in {_DTYPE[w]} (--precision)")]
    if precision == "mixed":
        terms.append(_per_param("master_weights", "master weights (fp32)", n, 4, "mixed precision keeps fp32 master"))
    terms.append(_per_param("gradients", f"gradients ({_DTYPE[g]})", n, g, f"{_DTYPE[g]} gradients (--precision)"))
    return [*terms, optimizer_states(shapes, opt, s)]


def _autocast_states(model: Model, opt: str) -> list[Term]:
    """``mixed`` as ``torch.autocast`` runs it (transformers' Trainer with ``bf16=True``, one
    GPU): the model stays fp32, so its gradients are fp32 and there is no master copy; each
    matmul casts its weight to bf16 in the forward (the activations count those copies,
    :mod:`paramcount.memory.training.saved`). Still 4 + 4 + 8 = 16 bytes per parameter with
    AdamW at the optimizer step, but the backward's peak holds no 16-bit weights."""
    shapes = model_shapes(model)
    n = shapes.params
    weights = _per_param("weights", "weights (fp32, autocast)", n, 4, "torch.autocast keeps the model in fp32")
    grads = _per_param("gradients", "gradients (fp32)", n, 4, "fp32, the parameters' dtype, under torch.autocast")
    return [weights, grads, optimizer_states(shapes, opt, 4)]


def _per_param(key: str, label: str, n: int, size: int, assumption: str) -> Term:
    return Term(key, label, n * size, f"{n:,} parameters × {size} B = {n * size:,} B", assumption)


# ---- LoRA / QLoRA -----------------------------------------------------------------------------


def _lora_states(model: Model, adapters: LoRA, opt: str, precision: str, bits: int | None) -> list[Term]:
    if adapters.model is not model and adapters.model.tree != model.tree:
        raise ParamcountError("the LoRA adapters were made for another model", field="lora")
    shapes = adapter_shapes(adapters)
    n = shapes.params
    base = _frozen_base(model, precision, bits)
    grads = _per_param("gradients", "adapter gradients (fp32)", n, 4, "trainable parameters only, fp32")
    return [base, adapters.term("fp32"), grads, optimizer_states(shapes, opt, 4)]


def _frozen_base(model: Model, precision: str, bits: int | None) -> Term:
    if bits is None:
        size = 4 if precision == "fp32" else 2
        label = f"frozen base weights ({_DTYPE[size]})"
        return _per_param("weights", label, model.total, size, f"base frozen in {_DTYPE[size]} (--precision)")
    from ..weights.schemes import weights

    return weights(model, QLORA[bits], double_quant=True if bits == 4 else None).term()


# ---- optimizer states -------------------------------------------------------------------------


def optimizer_states(shapes: Shapes, optimizer: str, size: int) -> Term:
    """The optimizer's state for ``shapes``, states (other than bitsandbytes' own) ``size`` bytes each."""
    parts = {"adamw": _adamw, "adam8bit": _adam8bit, "sgd": _sgd, "adafactor": _adafactor}[optimizer](shapes, size)
    parts = tuple(p for p in parts if p.bytes or len(parts) == 1)
    total = sum(p.bytes for p in parts)
    label = f"optimizer states ({_STATE_WORDS.get(optimizer, 'bitsandbytes 8-bit Adam')})"
    formula = " + ".join(f"{p.bytes:,}" for p in parts) + f" = {total:,} B"
    return Term("optimizer", label, total, formula, f"--optimizer {optimizer}", parts=parts if len(parts) > 1 else ())


def _adamw(shapes: Shapes, size: int) -> list[Term]:
    n, t = shapes.params, shapes.tensors
    moments = Term(
        "optimizer.moments",
        f"exp_avg + exp_avg_sq ({_DTYPE[size]})",
        2 * n * size,
        f"2 × {n:,} × {size} B",
        "two moments per parameter",
    )
    step = Term(
        "optimizer.step", "step counters", 4 * t, f"{t:,} tensors × 4 B", "torch keeps a 0-d fp32 step per tensor"
    )
    return [moments, step]


def _sgd(shapes: Shapes, size: int) -> list[Term]:
    n = shapes.params
    return [Term("optimizer.momentum", "momentum buffer", n * size, f"{n:,} × {size} B", "momentum > 0")]


def _adam8bit(shapes: Shapes, size: int) -> list[Term]:
    big = [(math.prod(s), c) for s, c in shapes.items if math.prod(s) >= BNB_MIN_8BIT]
    small = sum(math.prod(s) * c for s, c in shapes.items if math.prod(s) < BNB_MIN_8BIT)
    values = sum(v * c for v, c in big)
    blocks = sum(-(-v // BNB_BLOCK) * c for v, c in big)
    return [
        Term(
            "optimizer.states8", "8-bit states (uint8)", 2 * values, f"2 × {values:,} × 1 B", "tensors ≥ 4,096 values"
        ),
        Term("optimizer.absmax", "block absmax (fp32)", 8 * blocks, f"2 × {blocks:,} blocks of 256 × 4 B", "blockwise"),
        Term(
            "optimizer.states32", "32-bit states of small tensors", 8 * small, f"2 × {small:,} × 4 B", "< 4,096 values"
        ),
        Term("optimizer.qmaps", "quantisation maps", BNB_MAPS if big else 0, "2 × 256 × 4 B", "shared by all tensors"),
    ]


def _adafactor(shapes: Shapes, size: int) -> list[Term]:
    size = 4  # transformers' Adafactor upcasts 16-bit gradients and keeps its moments in fp32
    factored = sum((math.prod(s[:-1]) + math.prod(s[:-2]) * s[-1]) * c for s, c in shapes.items if len(s) >= 2)
    full = sum(math.prod(s) * c for s, c in shapes.items if len(s) < 2)
    t = shapes.tensors
    return [
        Term(
            "optimizer.factored",
            "row and column second moments",
            factored * size,
            f"{factored:,} × {size} B",
            "matrices: shape[:-1] + shape[:-2]·shape[-1] values",
        ),
        Term("optimizer.vectors", "second moments of vectors", full * size, f"{full:,} × {size} B", "1-D tensors"),
        Term("optimizer.rms", "RMS scalars", 4 * t, f"{t:,} tensors × 4 B", "a 0-d fp32 RMS per tensor"),
    ]


# ---- ZeRO -------------------------------------------------------------------------------------

_SHARDED = {"optimizer": 1, "master_weights": 1, "gradients": 2, "weights": 3, "adapters": 3}


def _shard(t: Term, zero: int, gpus: int) -> Term:
    """Stage ≥ 1 partitions optimizer states (with the master weights), ≥ 2 gradients, 3 weights."""
    if zero < _SHARDED.get(t.key.partition(".")[0], 4) or gpus == 1:
        return t
    parts = tuple(_shard(p, zero, gpus) for p in t.parts)
    each = sum(p.bytes for p in parts) if parts else -(-t.bytes // gpus)
    formula = f"{t.formula}; ZeRO-{zero}: ⌈{t.bytes:,} / {gpus}⌉ = {each:,} B per GPU"
    assumption = f"{t.assumption}; partitioned over {gpus} GPUs (--zero {zero}, --gpus)"
    return Term(t.key, f"{t.label}, 1/{gpus} per GPU", each, formula, assumption, t.estimate, ZERO_SOURCE, parts)


__all__ = [
    "OPTIMIZERS",
    "PRECISIONS",
    "QLORA",
    "ZERO_STAGES",
    "Shapes",
    "adapter_shapes",
    "model_shapes",
    "optimizer_states",
    "states",
    "training",
]
