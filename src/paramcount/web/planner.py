"""The memory planner behind the page: one plan, its curve over context, and a fit per precision.

Every figure is the memory package's (plan.py, fit.py, gpus.py); this module only picks the
points the page draws and puts the answers in one document. Modes: ``inference``; ``training``
(full fine-tuning); ``lora`` (adapters on a frozen base, QLoRA with the ``qlora`` precision).
"""

from __future__ import annotations

from typing import Any

from ..errors import ParamcountError
from ..memory.fit import gpu_dict
from ..memory.plan import term_dict
from ..model import Model

DEFAULT_GPU = "rtx4090"  # the 24 GB card people most often ask about
DEFAULT_LORA_RANK = 8  # peft's LoraConfig default
MIN_CONTEXT_EXP, MAX_CONTEXT_EXP = 7, 20  # the curve and the slider: 128 to 1,048,576 tokens
GROUPS = {"consumer": "GeForce", "data-centre": "Data centre", "apple": "Apple silicon", "custom": "Custom"}
TRAINING_LABELS = {"mixed": "mixed (bf16 + fp32 master)", "qlora": "qlora (NF4 base)"}


def options() -> dict[str, Any]:
    """What the planner's controls offer: schemes, training precisions, cache dtypes, GPUs."""
    from ..memory.activations import RECOMPUTE
    from ..memory.gpus import GPUS
    from ..memory.kv_cache import CACHE_DTYPES
    from ..memory.plan import TRAINING_PRECISIONS
    from ..memory.training import OPTIMIZERS
    from ..memory.weights import SCHEMES

    return {
        "schemes": [{"value": s, "label": s} for s in SCHEMES],
        "training_precisions": [{"value": p, "label": TRAINING_LABELS.get(p, p)} for p in TRAINING_PRECISIONS],
        "kv_dtypes": list(CACHE_DTYPES),
        "optimizers": list(OPTIMIZERS),
        "recompute": list(RECOMPUTE),
        "gpus": [_gpu_option(g) for g in GPUS.values()],
        "default_gpu": DEFAULT_GPU,
        "default_lora_rank": DEFAULT_LORA_RANK,
        "context_range": [2**MIN_CONTEXT_EXP, 2**MAX_CONTEXT_EXP],
    }


def _gpu_option(g: Any) -> dict[str, Any]:
    group = GROUPS.get(g.kind, g.kind)
    return {"key": g.key, "name": g.name, "stated": g.stated, "memory": g.memory, "usable": g.usable, "group": group}


def plan(model: Model, q: Any) -> dict[str, Any]:
    """The plan at the request's settings, the curve over context, and the fit per precision.

    At inference, a model read without a transformers config (a printout, a bare checkpoint)
    has no KV cache layout: it gets its weights alone, with the library's reason as a note."""
    from ..memory.gpus import gpu
    from ..memory.kv_layout import attention_layout

    card = gpu(q.gpu)
    if q.mode == "inference":
        try:
            attention_layout(model)  # the library's own test of whether this model has a KV cache layout
        except ParamcountError as e:
            return _weights_only(model, q, card, str(e))
    return _full(model, q, card)


def _full(model: Model, q: Any, card: Any) -> dict[str, Any]:
    from ..memory.plan import context_for, max_positions

    context, why = context_for(model, q.context)
    planner = _planner(model, q)
    p = planner.plan(context=context, batch=q.batch)
    limit = max_positions(model)
    return {
        "mode": q.mode,
        "partial": False,
        "total": p.total,
        "terms": [term_dict(t) for t in p.terms],
        "settings": {**{k: _plain(v) for k, v in p.settings.items()}, "context": context, "context_from": why},
        "notes": list(p.notes),
        "gpu": gpu_dict(card),
        "fits": p.total <= card.usable,
        "context_limit": limit,
        "curve": _curve(planner, q.batch, context, limit),
        "precisions": _precisions(model, card, context, q),
    }


def _planner(model: Model, q: Any) -> Any:
    from ..memory.plan import InferencePlanner, TrainingPlanner

    if q.mode == "inference":
        return InferencePlanner(model, q.scheme, q.kv_dtype)
    return TrainingPlanner(model, q.scheme, **_training(q))


def _training(q: Any) -> dict[str, Any]:
    """Training options as the memory package takes them; LoRA mode adds the adapters' rank."""
    opts: dict[str, Any] = {"optimizer": q.optimizer or "adamw", "recompute": q.recompute or "none"}
    if q.mode == "lora":
        opts["lora"] = q.lora_rank or DEFAULT_LORA_RANK
        opts["lora_targets"] = q.lora_targets or None
    elif q.scheme == "qlora":
        raise ParamcountError("qlora trains LoRA adapters on a 4-bit base: choose the LoRA mode", field="scheme")
    return opts


def _weights_only(model: Model, q: Any, card: Any, why: str) -> dict[str, Any]:
    from ..memory.fit import precisions
    from ..memory.weights import weights

    term = weights(model, q.scheme).term()
    chosen = list(dict.fromkeys([*precisions("inference"), q.scheme]))
    return {
        "mode": q.mode,
        "partial": True,
        "total": term.bytes,
        "terms": [term_dict(term)],
        "settings": {"scheme": q.scheme, "context": None, "batch": q.batch},
        "notes": [f"weights only: {why}"],
        "gpu": gpu_dict(card),
        "fits": term.bytes <= card.usable,
        "context_limit": None,
        "curve": {"contexts": [], "series": []},
        "precisions": [_weights_row(model, name) for name in chosen],
    }


def _weights_row(model: Model, name: str) -> dict[str, Any]:
    from ..memory.weights import weights

    try:
        size = weights(model, name).bytes
    except ParamcountError as e:
        return {"scheme": name, "label": name, "available": False, "why": str(e)}
    return {"scheme": name, "label": name, "available": True, "weights": size}


def _plain(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def contexts(context: int, limit: int | None) -> list[int]:
    """Powers of two up to the model's limit (or 2^20), with the chosen context and the limit."""
    top = min(limit or 2**MAX_CONTEXT_EXP, 2**MAX_CONTEXT_EXP)
    points = {2**k for k in range(MIN_CONTEXT_EXP, MAX_CONTEXT_EXP + 1) if 2**k <= top}
    points |= {top, context} if context <= 2**MAX_CONTEXT_EXP else {top}
    return sorted(points)


def _curve(planner: Any, batch: int, context: int, limit: int | None) -> dict[str, Any]:
    xs = contexts(context, limit)
    plans = [planner.plan(context=c, batch=batch) for c in xs]
    keys = [t.key for t in plans[0].terms]
    series = [
        {"key": k, "label": plans[0].term(k).label.split(" (")[0], "bytes": [p.term(k).bytes for p in plans]}
        for k in keys
    ]
    return {"contexts": xs, "series": series}


def _precisions(model: Model, card: Any, context: int, q: Any) -> list[dict[str, Any]]:
    """Each standard precision (and the chosen one) on the GPU; one that cannot apply says why."""
    from ..memory.fit import precisions

    mode = "inference" if q.mode == "inference" else "training"
    chosen = [p for p in precisions(mode) if q.mode != "training" or p != "qlora"]
    chosen += [] if q.scheme in chosen else [q.scheme]
    options = {"kv_dtype": q.kv_dtype} if mode == "inference" else _training(q)
    return [_fit_row(model, card, context, q.batch, mode, name, options) for name in chosen]


def _fit_row(model: Model, card: Any, context: int, batch: int, mode: str, name: str, options: dict) -> dict:
    from ..memory.fit import fit

    try:
        row = fit(model, card, context, batch, mode, only=(name,), **options).rows[0]
    except ParamcountError as e:
        return {"scheme": name, "label": name, "available": False, "why": str(e)}
    return {
        "scheme": name,
        "label": TRAINING_LABELS.get(name, name) if mode == "training" else name,
        "available": True,
        "weights": row.plan.term("weights").bytes,
        "total": row.plan.total,
        "fits": row.fits,
        "max_context": row.max_context,
        "context_limit": row.context_limit,
        "gpus": row.gpus,
    }
