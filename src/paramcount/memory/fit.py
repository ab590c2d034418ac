"""Does a model fit on a GPU: per precision, yes or no with headroom, the largest context and
batch that fit, and for training the fewest GPUs.

Every "largest" is found by bisection over the plan's exact figures (the total grows with the
context, the batch and the per-GPU share of sharded states), so the answer is a boundary: one
more token, sequence or one GPU fewer does not fit.

A checkpoint (GGUF, safetensors) gets a first row ``stored``: its weights as the files hold
them. A model planned from its weights alone (``Plan.partial``: no KV-cache layout) has no
largest context or batch: those are None, and the row says ``partial``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadSource, ParamcountError
from ..model import Model
from .core.gpus import GPU, GPUS
from .core.gpus import gpu as find_gpu
from .core.limits import max_positions
from .core.plan import Plan, as_model, context_for, model_dict, positive, size_dict
from .runtimes import LLAMA_OPTIONS, MLX_OPTIONS, VLLM_OPTIONS, runtime
from .weights.stored import is_checkpoint

SCHEMA = "paramcount.fit/1"
# What transformers loads: 16/32-bit and bitsandbytes' LLM.int8 and NF4 (embeddings and head kept
# 16-bit, absmax scales nested); the idealised int8/int4 casts and GGUF types only when named.
INFERENCE = ("fp32", "bf16", "bnb-int8", "nf4")
LLAMA_INFERENCE = ("fp16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k")  # llama.cpp file types
VLLM_INFERENCE = ("bf16", "fp8", "awq-int4")  # what vLLM serves most: checkpoints or --quantization fp8
MLX_INFERENCE = ("bf16", "mlx-8bit", "mlx-6bit", "mlx-4bit", "mlx-3bit")  # mlx_lm.convert -q --q-bits N
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)  # the tensor-parallel sizes a vLLM fit tries, smallest first
MAX_BATCH = 1 << 20
MAX_GPUS = 1 << 16
NO_LIMIT_CONTEXT = 1 << 30  # the search bound when the config states no context limit


@dataclass(frozen=True)
class Row:
    """One precision on one GPU."""

    precision: str
    plan: Plan = field(repr=False)
    capacity: int
    max_context: int | None  # None: not even one token fits
    max_batch: int | None  # None: not even one sequence fits
    context_limit: int | None  # the model's own limit, which caps max_context
    gpus: int | None = None  # training: fewest GPUs (ZeRO-3 data parallel); vLLM: TP × PP; None: no count fits
    serving: Mapping[str, Any] | None = None  # vLLM: the KV capacity and speed bounds at the chosen split
    fit_params: Any = None  # llama.cpp: what llama-fit-params would choose (runtimes/llamacpp/fit.py)
    ram: int | None = None  # --ram: host memory the host part must fit in (None: not checked)

    @property
    def fits(self) -> bool:
        """On the GPU, and (with ``ram``) the host part in RAM too."""
        return self.plan.total <= self.capacity and self.host_fits is not False

    @property
    def host_fits(self) -> bool | None:
        """Whether the host part fits in ``ram``; None when no RAM was given."""
        return None if self.ram is None else host_bytes(self.plan) <= self.ram

    @property
    def headroom(self) -> int:
        """Bytes left (negative: short by that much)."""
        return self.capacity - self.plan.total

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "fits": self.fits,
            "total": size_dict(self.plan.total),
            "headroom": size_dict(self.headroom),
            "max_context": self.max_context,
            "context_limit": self.context_limit,
            "max_batch": self.max_batch,
            "gpus": self.gpus,
            "settings": dict(self.plan.settings),
            "terms": {t.key: t.bytes for t in self.plan.device_terms},  # they sum to total
            **_host_dict(self.plan),
            **(_ram_dict(self.plan, self.ram) if self.ram is not None else {}),
            **({"partial": self.plan.partial} if self.plan.partial else {}),
            **({"serving": dict(self.serving)} if self.serving is not None else {}),
            **({"fit_params": self.fit_params.to_dict()} if self.fit_params is not None else {}),
        }


def host_bytes(plan: Plan) -> int:
    """What a plan holds in host RAM: its host terms (llama.cpp's input layer, experts kept on
    the CPU by -ot/--n-cpu-moe, -nkvo's cache), and all of it on llama.cpp's ``--device cpu``."""
    return plan.host + (plan.total if plan.settings.get("device") == "cpu" else 0)


def _ram_dict(plan: Plan, ram: int) -> dict[str, Any]:
    return {"ram": {**size_dict(ram), "host": size_dict(host_bytes(plan)), "fits": host_bytes(plan) <= ram}}


def _host_dict(plan: Plan) -> dict[str, Any]:
    """What the runtime holds in host memory beside the GPU (llama.cpp's input layer), not in total."""
    held = {t.key: t.bytes for t in plan.host_terms}
    return {"host": size_dict(plan.host), "host_terms": held} if held else {}


@dataclass(frozen=True)
class Fit:
    model: Model = field(repr=False)
    gpu: GPU
    mode: str
    context: int
    batch: int
    rows: tuple[Row, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # default precisions the model cannot take, with the reason
    cards: tuple[GPU, ...] = ()  # llama.cpp over several GPUs: each card (``gpu`` is their sum)

    def row(self, precision: str) -> Row:
        for r in self.rows:
            if r.precision == precision:
                return r
        raise KeyError(precision)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, schema ``paramcount.fit/1``."""
        return {
            "schema": SCHEMA,
            "model": model_dict(self.model),
            "gpu": gpu_dict(self.gpu),
            "mode": self.mode,
            "context": self.context,
            "batch": self.batch,
            "settings": dict(self.settings),
            "rows": [r.to_dict() for r in self.rows],
            "skipped": list(self.skipped),
            **({"gpus": [gpu_dict(c) for c in self.cards]} if self.cards else {}),
        }


def gpu_dict(g: GPU) -> dict[str, Any]:
    return {
        "key": g.key,
        "name": g.name,
        "stated": g.stated,
        "unit": g.unit,
        "memory": g.memory,
        "usable": g.usable,
        "tflops": g.tflops,
        "bandwidth_gb_s": g.bandwidth,
        "note": g.note,
    }


def largest(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest n in [low, high] with fits(n), for a fits that is true up to a point then false."""
    if not fits(low):
        return None
    if fits(high):
        return high
    while high - low > 1:  # fits(low) and not fits(high)
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def largest_under(cost: Callable[[int], int], cap: int, low: int, high: int) -> int | None:
    """``largest(lambda n: cost(n) <= cap, low, high)`` for a cost that never falls as n grows,
    in fewer evaluations: a plan's total is close to linear in context and batch, so each step
    guesses where the line through the interval's ends meets ``cap`` (and checks the guess's
    successor), with a bisection step after any guess that did not halve the interval. The
    interval keeps cost(low) <= cap < cost(high), so the answer is bisection's."""
    c_low = cost(low)
    if c_low > cap:
        return None
    c_high = cost(high)
    if c_high <= cap:
        return high
    bisect = False
    while high - low > 1:
        width = high - low
        line = not bisect and c_high > c_low
        guess = low + (cap - c_low) * width // (c_high - c_low) if line else (low + high) // 2
        guess = min(max(guess, low + 1), high - 1)
        c = cost(guess)
        if c > cap:
            high, c_high = guess, c
        else:
            low, c_low = guess, c
            if not bisect and low + 1 < high:  # the guess is often the answer: its successor says
                c = cost(low + 1)
                if c > cap:
                    return low
                low, c_low = low + 1, c
        bisect = not bisect and 2 * (high - low) > width
    return low


def smallest(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """The smallest n in [low, high] with fits(n), for a fits that is false up to a point then true."""
    if not fits(high):
        return None
    if fits(low):
        return low
    while high - low > 1:  # not fits(low) and fits(high)
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


def precisions(mode: str) -> tuple[str, ...]:
    """The precisions a fit table shows: those the weights module knows, in a fixed order."""
    if mode == "training":
        from .training.plan import TRAINING_PRECISIONS

        return TRAINING_PRECISIONS
    from .weights.base import SCHEMES

    return tuple(p for p in INFERENCE if p in SCHEMES)


def _default_rows(mode: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """Every precision, but QLoRA alone when it is asked for (it fixes the base's precision)."""
    return ("qlora",) if mode == "training" and options.get("qlora") else precisions(mode)


_OPTIONS = {
    "inference": (
        *(
            "kv_dtype",
            "overhead",
            "keep",
            "cache",
            "encoder_length",
            "mla",
            "attn",
            "runtime",
            "pure",
            *LLAMA_OPTIONS,
            *VLLM_OPTIONS,
            *MLX_OPTIONS,
        ),
        *("images", "image_size", "audio"),
    ),
    "training": ("optimizer", "zero", "gpus", "recompute", "flash", "lora", "lora_targets", "qlora", "overhead"),
}


def _mode(mode: str, options: Mapping[str, Any]) -> str:
    if mode not in _OPTIONS:
        raise ParamcountError(f"mode is inference or training, not {mode!r}", field="mode")
    unknown = sorted(set(options) - set(_OPTIONS[mode]))
    if unknown:
        raise ParamcountError(f"unknown {mode} option {unknown[0]!r}; known: {', '.join(_OPTIONS[mode])}", field="mode")
    return mode


def fit(
    model: Model | str | Mapping[str, Any],
    gpu: str | GPU | Sequence[str | GPU],
    context: int | None = None,
    batch: int = 1,
    mode: str = "inference",
    *,
    only: tuple[str, ...] | None = None,
    margins: tuple[int, ...] | None = None,
    min_ctx: int | None = None,
    ram: int | None = None,
    **options: Any,
) -> Fit:
    """Whether ``model`` fits on ``gpu`` at each precision, at ``context`` tokens × ``batch``,
    with the largest context and batch that fit and, for training, the fewest GPUs.

    ``mode`` is ``"inference"`` (options: ``kv_dtype``, ``overhead``) or ``"training"``
    (options as :func:`paramcount.memory.train` takes them: ``optimizer``, ``zero``, ``gpus``,
    ``recompute``, ``lora_rank``, ``overhead``, ...).

    Several GPUs (a sequence, or names joined by commas: ``rtx3090,rtx3090``) are llama.cpp's
    alone: the rows compare the plan with their summed memory (flagged in the card's note), and
    llama-fit-params' answer splits the model over them (``runtimes/llamacpp/fit_multi.py``).
    ``margins`` (bytes; -fitt: one for all, or per GPU) and ``min_ctx`` (-fitc) are its settings.
    ``ram`` (bytes): a row fits only if its host part (:func:`host_bytes`) fits in it too.
    """
    found = _fit(model, gpu, context, batch, mode, only, margins, min_ctx, options)
    if ram is None:
        return found
    from dataclasses import replace as swap

    ram = positive(ram, "--ram")
    return swap(found, rows=tuple(swap(r, ram=ram) for r in found.rows))


def _fit(model: Any, gpu: Any, context: Any, batch: int, mode: str, only: Any, margins: Any, min_ctx: Any,
         options: Mapping[str, Any]) -> Fit:  # fmt: skip
    model, mode = as_model(model), _mode(mode, options)
    cards = _cards(gpu)
    card = cards[0] if len(cards) == 1 else _several(cards, model, mode, options)
    asked = context
    context, _ = context_for(model, context)
    batch = positive(batch, "--batch")
    if mode == "inference" and runtime(options.get("runtime"), model) == "vllm":
        rows, skipped = _served(model, card, context, batch, only, options)
        return Fit(model, card, "serving", context, batch, rows, _shown(options), skipped)
    loaded = mode == "inference" and runtime(options.get("runtime"), model) == "transformers"
    planners, skipped = _planners(model, mode, only, {**options, "gpu": card} if loaded else options)
    rows = tuple(_row(planner, p, card, model, context, batch, mode) for p, planner in planners.items())
    if mode == "inference" and runtime(options.get("runtime"), model) == "llama.cpp":
        fitting = (margins, min_ctx)
        rows = tuple(_fitted(r, planners[r.precision], cards, asked, batch, fitting) for r in rows)
    elif margins is not None or min_ctx is not None:
        field = "--fit-target" if margins is not None else "--fit-ctx"
        raise ParamcountError("llama-fit-params' settings are for --runtime llama.cpp", field=field)
    return Fit(model, card, mode, context, batch, rows, _shown(options), skipped, cards if len(cards) > 1 else ())


def _fitted(row: Row, planner: Any, cards: tuple[GPU, ...], context: int | None, batch: int, fitting: Any) -> Row:
    """The row with llama-fit-params' answer on ``cards`` (free: each card less the CUDA
    context); ``context``: per sequence as asked (None: llama.cpp's -c 0, the trained context)."""
    from dataclasses import replace as swap

    from .runtimes.llamacpp.fit import MIN_CTX, fit_params, margins_for
    from .runtimes.llamacpp.fit_multi import fit_params_multi

    if planner.partial or planner.options.device == "cpu":
        return row
    frees = [c.usable - planner.overhead.fixed for c in cards]
    n_ctx, trained = None if context is None else context * batch, max_positions(planner.model)
    margins, min_ctx = margins_for(fitting[0], len(cards)), fitting[1] or MIN_CTX
    if len(cards) > 1:
        found = fit_params_multi(planner, frees, n_ctx, batch, trained, margins=margins, min_ctx=min_ctx)
        return swap(row, fit_params=found)
    return swap(
        row, fit_params=fit_params(planner, frees[0], n_ctx, batch, trained, margin=margins[0], min_ctx=min_ctx)
    )


def _cards(gpu: Any) -> tuple[GPU, ...]:
    """One card, or several: a sequence or names joined by commas (at most llama.cpp's 16)."""
    from .runtimes.llamacpp.placement import MAX_DEVICES

    items = gpu.split(",") if isinstance(gpu, str) and "," in gpu else gpu if isinstance(gpu, (list, tuple)) else [gpu]
    if not items or len(items) > MAX_DEVICES:
        raise ParamcountError(f"1 to {MAX_DEVICES} GPUs (llama_max_devices), got {len(items)}", field="--gpu")
    return tuple(find_gpu(g.strip() if isinstance(g, str) else g) for g in items)


def _several(cards: tuple[GPU, ...], model: Model, mode: str, options: Mapping[str, Any]) -> GPU:
    """Several cards as one row capacity (their sum), where they mean something: llama.cpp's
    split of a model over them; -sm none and a -ts of another length are refused."""
    if mode != "inference" or runtime(options.get("runtime"), model) != "llama.cpp":
        raise ParamcountError(
            "several GPUs are llama.cpp's split (llama-fit-params' -ts): add --runtime llama.cpp;"
            " training takes one --gpu and --gpus N",
            field="--gpu",
        )
    if options.get("split_mode") == "none":
        raise ParamcountError(
            f"-sm none uses one GPU, not the {len(cards)} given: give one --gpu", field="--split-mode"
        )
    split = options.get("tensor_split") or ()
    if split and len(split) != len(cards):
        raise ParamcountError(f"{len(split)} values for {len(cards)} GPUs", field="--tensor-split")
    note = (
        f"{len(cards)} GPUs: the table compares each plan (as one GPU would hold it) with their summed memory;"
        " llama-fit-params below splits the model and holds each GPU to its own margin"
    )
    return GPU("+".join(c.key for c in cards), " + ".join(c.name for c in cards), sum(c.memory for c in cards),
               " + ".join(c.stated for c in cards), sum(c.usable for c in cards), None, "custom", note)  # fmt: skip


def _served(
    model: Model, card: GPU, context: int, batch: int, only: Any, options: Mapping[str, Any]
) -> tuple[tuple[Row, ...], tuple[str, ...]]:
    """Per precision, the fewest tensor-parallel GPUs vLLM serves ``batch`` sequences of
    ``context`` tokens on (--tp fixes it), with the KV capacity and the speed bounds there."""
    rows, errors, first = [], [], None
    for p in only or VLLM_INFERENCE:
        try:
            rows.append(_served_row(model, p, card, context, batch, options))
        except ParamcountError as e:
            if only or isinstance(e, BadSource):  # a malformed file fails every precision alike
                raise
            errors.append(f"{p}: {e}")
            first = first or e
    if not rows:
        raise first  # the error itself: its own field, said once
    return tuple(rows), tuple(errors)


def _served_row(model: Model, precision: str, card: GPU, context: int, batch: int, options: Mapping[str, Any]) -> Row:
    from . import speed
    from .runtimes import planner as make

    given = {k: v for k, v in options.items() if k != "runtime"}
    sizes = (given["tp"],) if given.get("tp") else TP_SIZES
    expert = (given.get("ep") or 1) > 1 and not given.get("tp")  # EP over every TP rank of each size tried
    chosen, error = None, None
    for tp in sizes:
        try:
            p = make(model, precision, "vllm", **{**given, "tp": tp, "gpu": card, **({"ep": tp} if expert else {})})
        except ParamcountError as e:  # a size vLLM refuses for this model (heads that do not divide)
            error = error or e
            continue
        chosen = p
        if p.total(context, batch) <= card.usable:
            break
    if chosen is None:
        raise error
    cap, limit = card.usable, max_positions(model)
    plan = chosen.plan(context, batch)
    serving = chosen.serving(card.memory, context)
    decode, prefill = speed.decode(chosen, card, context, batch), speed.prefill(chosen, card, context)
    fits = plan.total <= cap
    serving = {
        "tp": chosen.o.tp if fits else None,
        "pp": chosen.o.pp,
        "tried_tp": chosen.o.tp,
        **serving,
        "decode": decode.to_dict() if decode and fits else None,
        "prefill": prefill.to_dict() if prefill and fits else None,
    }
    max_context = largest_under(lambda t: chosen.total(t, 1), cap, 1, limit or NO_LIMIT_CONTEXT)
    max_batch = serving["max_sequences"] or None
    gpus = chosen.o.tp * chosen.o.pp if fits else None
    return Row(precision, plan, cap, max_context, max_batch, limit, gpus, serving)


def _shown(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None and v is not False}


def _row(planner: Any, precision: str, card: GPU, model: Model, context: int, batch: int, mode: str) -> Row:
    cap, limit = card.usable, max_positions(model)
    if getattr(planner, "partial", None):  # weights only: no context or batch to search over
        return Row(precision, planner.plan(context=context, batch=batch), cap, None, None, limit)

    def total(**kw: int) -> int:
        settings = {"context": context, "batch": batch, **kw}
        if set(kw) <= {"context", "batch"}:  # a planner's total skips the formulas a search never shows
            return planner.total(**settings)
        return planner.plan(**settings).total

    max_context = largest_under(lambda t: total(context=t), cap, 1, limit or NO_LIMIT_CONTEXT)
    max_batch = _max_batch(planner, lambda b: total(batch=b), cap)
    gpus = None
    if mode == "training":
        gpus = smallest(lambda g: total(gpus=g, zero=3) <= cap, 1, MAX_GPUS)
    return Row(precision, planner.plan(context=context, batch=batch), cap, max_context, max_batch, limit, gpus)


def _max_batch(planner: Any, total: Any, cap: int) -> int | None:
    """The most sequences that fit; a runtime that runs one (mlx_lm.generate) has no batch to search."""
    if getattr(planner, "one_sequence", False):
        return 1 if total(1) <= cap else None
    return largest_under(total, cap, 1, MAX_BATCH)


def _planners(model: Model, mode: str, only: Any, options: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A planner per precision; of the default precisions, one the model cannot take (a GGUF mix
    not stated for its family) is left out with the reason, while one asked for raises."""
    planners, errors = {}, []
    rows = _default_rows(mode, options)
    if mode == "inference" and runtime(options.get("runtime"), model) == "llama.cpp":
        rows = LLAMA_INFERENCE  # what llama.cpp runs: GGUF types
    if mode == "inference" and runtime(options.get("runtime"), model) == "mlx":
        rows = MLX_INFERENCE
    if mode == "inference" and is_checkpoint(model):
        rows = ("stored", *rows)
    for p in only or rows:
        try:
            planners[p] = _planner(model, p, mode, options)
        except ParamcountError as e:
            if only or isinstance(e, BadSource):  # a malformed file fails every precision alike
                raise
            errors.append((p, e))
    if not planners:  # nothing to show: the reason once, as an error, never an empty table
        raise errors[0][1]
    return planners, tuple(f"{p}: {e}" for p, e in errors)


def _planner(model: Model, precision: str, mode: str, options: Mapping[str, Any]) -> Any:
    if mode == "training":
        from .training.plan import TrainingPlanner

        return TrainingPlanner(model, precision, **options)
    from .runtimes import planner

    given = dict(options)
    return planner(model, precision, given.pop("runtime", None), **given)


@dataclass(frozen=True)
class Overview:
    """Every GPU in the table against each precision's plan at one context and batch."""

    model: Model = field(repr=False)
    mode: str
    context: int
    batch: int
    plans: Mapping[str, Plan]
    gpus: tuple[GPU, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    def headroom(self, gpu: GPU, precision: str) -> int:
        return gpu.usable - self.plans[precision].total

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, schema ``paramcount.fit/1`` with ``gpu`` null and a ``table``."""
        return {
            "schema": SCHEMA,
            "model": model_dict(self.model),
            "gpu": None,
            "mode": self.mode,
            "context": self.context,
            "batch": self.batch,
            "settings": dict(self.settings),
            "needs": {p: size_dict(plan.total) for p, plan in self.plans.items()},
            "table": [
                {"gpu": gpu_dict(g), "headroom": {p: self.headroom(g, p) for p in self.plans}} for g in self.gpus
            ],
            "skipped": list(self.skipped),
        }


def overview(
    model: Model | str | Mapping[str, Any],
    context: int | None = None,
    batch: int = 1,
    mode: str = "inference",
    *,
    gpus: tuple[str | GPU, ...] | None = None,
    only: tuple[str, ...] | None = None,
    **options: Any,
) -> Overview:
    """Each precision's total at ``context`` × ``batch`` against every GPU in the table."""
    model, mode = as_model(model), _mode(mode, options)
    context, _ = context_for(model, context)
    batch = positive(batch, "--batch")
    cards = tuple(find_gpu(g) for g in gpus) if gpus else tuple(GPUS.values())
    if not gpus and mode == "inference" and runtime(options.get("runtime"), model) == "mlx":
        cards = tuple(c for c in cards if c.kind == "apple") or cards  # MLX runs on Apple silicon
    planners, skipped = _planners(model, mode, only, options)
    plans = {p: planner.plan(context=context, batch=batch) for p, planner in planners.items()}
    return Overview(model, mode, context, batch, plans, cards, _shown(options), skipped)
