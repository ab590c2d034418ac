"""``paramcount compute`` as one result: each figure with its formula, numbers in, for text and JSON.

:func:`report` gathers what :mod:`paramcount.memory.flops` counts (the N used, forward FLOPs per
token, training FLOPs, the Chinchilla budget) and, given a GPU, the time at a stated utilisation.
``Report.figures`` lists every figure the way the terminal shows it; ``Report.to_dict`` is the
JSON document, schema ``paramcount.compute/1`` (README, "Compute").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ParamcountError
from .memory.flops import (
    CHINCHILLA_TOKENS_PER_PARAM,
    MIN_UTILISATION,
    Forward,
    TrainingFlops,
    attention_widths,
    chinchilla_tokens,
    forward_flops,
    parse_tokens,
    relative_error,
    train_time,
    training_flops,
)
from .model import Model
from .records import replace

if TYPE_CHECKING:
    from .memory.core.gpus import GPU

SCHEMA = "paramcount.compute/1"
CHINCHILLA_DEFAULT = f"Chinchilla's {CHINCHILLA_TOKENS_PER_PARAM}·N, no --tokens"
DEFAULT_UTILISATION = 0.4
KAPLAN = "Kaplan et al. 2020, Table 1 (arXiv:2001.08361)"
KAPLAN_6ND = "Kaplan et al. 2020, §2.1 (arXiv:2001.08361)"
PALM = "Chowdhery et al. 2022, App. B (arXiv:2204.02311): backward = 2 × forward"
HOFFMANN = "Hoffmann et al. 2022 (arXiv:2203.15556): about 20 tokens per parameter"
NO_ATTENTION = "no attention blocks in this model: the attention terms are 0"
# Figures without the attention term: exact whatever the attention computes.
DENSE_ONLY = ("forward.dense", "training.6nd", "training.6nd_non_embedding")
# Figures exact on any tree: counts of every parameter, whatever the tree's structure (6·N·D is too, but its
# error is against the forward count, which is not).
STRUCTURE_FREE = ("n.total", "n.active", "chinchilla.tokens")
_FP16_ONLY = ("t4", "v100-16gb", "v100-32gb")  # no bf16: gpus.py gives their fp16 peak


@dataclass(frozen=True)
class Figure:
    """One shown figure: ``value`` in ``unit``; ``error`` = value / exact − 1 for an approximation
    (``error_causal`` against the causal count); ``estimate`` for a modelled figure."""

    key: str
    label: str
    value: int | float
    unit: str  # parameters | FLOPs | tokens | seconds
    formula: str
    error: float | None = None
    error_causal: float | None = None
    estimate: bool = False
    approximate: bool = False  # an approximation: a None error then means no ratio (exact is 0)
    source: str = ""
    inexact: str | None = None  # why the figure is not exact (the tree is not the family's); None: exact


@dataclass(frozen=True)
class Time:
    """Wall-clock time to spend ``flops`` on ``gpus`` of ``gpu`` at ``utilisation`` of its peak."""

    gpu: GPU
    gpus: int
    utilisation: float
    flops: int
    seconds: float

    @property
    def peak_flops(self) -> float:
        return self.gpu.tflops * 10**12

    @property
    def peak_dtype(self) -> str:
        return "fp16" if self.gpu.key in _FP16_ONLY else "bf16"

    @property
    def hours(self) -> float:
        return self.seconds / 3600

    @property
    def days(self) -> float:
        return self.seconds / 86400


@dataclass(frozen=True)
class Report:
    model: Model
    forward: Forward
    training: TrainingFlops
    chinchilla: int
    widths: dict[int, int]  # d_attn -> attention blocks run
    settings: dict[str, Any]
    time: Time | None = None
    notes: tuple[str, ...] = ()
    attention_estimate: bool = False  # the dense attention term is not what this model computes (notes say why)
    inexact: str | None = None  # why the figures read from the tree's structure are not exact (not the family's tree)

    @property
    def figures(self) -> list[Figure]:
        figures = [*forward_figures(self), *training_figures(self)]
        if self.attention_estimate:  # every figure with the attention term in it
            figures = [f if f.key in DENSE_ONLY else replace(f, estimate=True) for f in figures]
        figures = [*parameter_figures(self), *figures, *budget_figures(self)]
        if self.inexact:  # embedding tables, linear layers and attention guessed from names
            figures = [f if f.key in STRUCTURE_FREE else replace(f, inexact=self.inexact) for f in figures]
        return figures

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, schema ``paramcount.compute/1``."""
        from .memory.core.plan import model_dict

        m, f, t = self.model, self.forward, self.training
        return {
            "schema": SCHEMA,
            "model": model_dict(m),
            "settings": dict(self.settings),
            "parameters": {
                "total": m.total,
                "active": m.active_total,
                "non_embedding": f.non_embedding,
                "matmul": f.matmul_params,
            },
            "forward": forward_dict(f, self.widths),
            "training": training_dict(t),
            "chinchilla": {"tokens_per_parameter": CHINCHILLA_TOKENS_PER_PARAM, "tokens": self.chinchilla},
            "time": time_dict(self.time) if self.time else None,
            "attention_exact": not self.attention_estimate and self.inexact is None,
            "exact": self.inexact is None,
            "why_not_exact": self.inexact,
            "figures": [vars(fig) for fig in self.figures],
            "notes": list(self.notes),
        }


def report(
    model: Model | str,
    context: int | None = None,
    batch: int = 1,
    tokens: int | str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    utilisation: float | None = None,
) -> Report:
    """Everything ``paramcount compute`` shows. ``context`` defaults as ``paramcount memory``'s
    does (the model's limit, at most 4,096); ``tokens`` to the Chinchilla budget, 20·N."""
    from .family import resolve
    from .loader import load
    from .memory.core.plan import context_for, positive

    resolved = resolve(model if isinstance(model, Model) else load(model))  # a report resolves its source
    model, batch = resolved.model, positive(batch, "--batch")
    context, context_from = context_for(model, context)
    budget = chinchilla_tokens(model)
    d = budget if tokens is None else parse_tokens(tokens)
    training = training_flops(model, d, context)
    forward = forward_flops(model, context, batch)
    settings = {"context": context, "context_from": context_from, "batch": batch, "tokens": d}
    settings["tokens_from"] = "--tokens" if tokens is not None else CHINCHILLA_DEFAULT
    time = _time(training.exact, gpu, gpus, utilisation)
    settings |= {"gpu": time.gpu.key, "gpus": time.gpus, "utilisation": time.utilisation} if time else {}
    widths = attention_widths(model)
    caveats = attention_caveats(model) if widths else []
    notes = tuple(caveats) if widths else (NO_ATTENTION,) if resolved.is_family else ()
    why = _inexact(resolved.why, widths)
    notes += (f"not exact: {why}",) if why else ()
    return Report(model, forward, training, budget, widths, settings, time, notes, bool(caveats), why)


def _inexact(why: str | None, widths: dict[int, int]) -> str | None:
    """Why the figures that read the tree's structure (embedding tables, linear layers, attention
    widths) are not exact: a tree read from names has no family to say which module is which."""
    if why is None:
        return None
    found = "attention widths read" if widths else "no attention block found (attention unknown)"
    return f"no family's tree ({why}): embedding tables and linear layers read from names and shapes, {found}"


def attention_caveats(model: Model) -> list[str]:
    """Where the dense attention term (4·T·d_attn per token and layer, d_attn the value width)
    is not what the model computes, from its cache layout: the attention figures are then
    estimates, and each reason is said."""
    from .arch.cache import NoLayout
    from .memory.context.kv_layout import attention_layout

    try:
        kinds = attention_layout(model).kinds
    except NoLayout:
        return []
    said = []
    windows = sorted({k.window for k in kinds if k.window})
    if windows:
        shown = ", ".join(f"{w:,}" for w in windows)
        said.append(f"sliding-window layers attend to at most W = {shown} keys; counted here over all T")
    if any(k.stores.startswith("mla") for k in kinds):
        said.append("MLA: QKᵀ runs at the query head width (qk_nope + qk_rope), counted here at the value width")
    if any(k.stores == "indexer" for k in kinds):
        said.append("the sparse-attention indexer's scores and top-k are not counted; attention is counted dense")
    if any(k.attention in ("compressed", "buffer", "overlap") for k in kinds):
        said.append("compressed attention (entries every m tokens) is counted as dense attention over T")
    if any(k.attention == "state" for k in kinds):
        said.append("recurrent mixers' state updates (SSM, linear attention, short convolutions) are not counted")
    return [f"attention figures are estimates: {s}" for s in said]


def _time(flops: int, name: str | None, gpus: int | None, utilisation: float | None) -> Time | None:
    from .memory.core.gpus import GPUS, gpu
    from .memory.core.plan import positive

    if name is None:
        for value, flag in ((gpus, "--gpus"), (utilisation, "--utilisation")):
            if value is not None:
                raise ParamcountError("only with --gpu (the time needs a GPU's peak)", field=flag)
        return None
    card = gpu(name)
    if card.tflops is None:
        known = ", ".join(k for k, g in GPUS.items() if g.tflops)
        raise ParamcountError(f"no peak FLOPS stated for {card.name}; one of {known}", field="--gpu")
    share = DEFAULT_UTILISATION if utilisation is None else utilisation
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not MIN_UTILISATION <= share <= 1:
        raise ParamcountError(
            f"expected a share in [{MIN_UTILISATION:g}, 1] like 0.4, got {share!r}", field="--utilisation"
        )
    count = 1 if gpus is None else positive(gpus, "--gpus")
    return Time(card, count, share, flops, train_time(flops, card.tflops * 10**12, share, count))


# ---- figures ---------------------------------------------------------------------------------


def n(value: int) -> str:
    return f"{value:,}"


def sci(value: float) -> str:
    """``3.229e23``: four significant figures."""
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def widths_text(widths: dict[int, int]) -> str:
    """``96 × 12,288``, or ``40 × 4,096 + 8 × 2,048`` when the blocks differ."""
    return " + ".join(f"{n(runs)} × {n(width)}" for width, runs in widths.items()) or "0"


def _flops(key: str, label: str, value: int, formula: str, **kw: Any) -> Figure:
    return Figure(key, label, value, "FLOPs", f"{formula} = {n(value)}", **kw)


def _approx(key: str, label: str, value: int, formula: str, exact: int, causal: int, source: str) -> Figure:
    error, error_causal = relative_error(value, exact), relative_error(value, causal)
    return _flops(key, label, value, formula, error=error, error_causal=error_causal, source=source, approximate=True)


def parameter_figures(r: Report) -> list[Figure]:
    m, f = r.model, r.forward
    tables = m.active_total - f.non_embedding
    less = f"{'N_active' if m.is_moe else 'N'} − embedding tables = {n(m.active_total)} − {n(tables)}"
    matmul = "linear layers a token passes: tied head, routers, k of E experts in; lookups, norms, biases out"
    return [
        Figure("n.total", "total", m.total, "parameters", "every parameter, a tied one once"),
        *([Figure("n.active", "active per token", m.active_total, "parameters", "k of E experts")] if m.is_moe else []),
        Figure(
            "n.non_embedding",
            "non-embedding (Kaplan's N)",
            f.non_embedding,
            "parameters",
            f"{less} = {n(f.non_embedding)}",
            source=KAPLAN,
        ),
        Figure("n.matmul", "matmul (N_matmul)", f.matmul_params, "parameters", matmul),
    ]


def forward_figures(r: Report) -> list[Figure]:
    f, t, w = r.forward, n(r.forward.context), n(r.forward.attention_width)
    kaplan = f"2·N + 2·n_layer·n_ctx·d_attn = 2 × {n(f.non_embedding)} + 2 × {t} × {w}"
    return [
        _flops("forward.dense", "dense", f.dense, f"2·N_matmul = 2 × {n(f.matmul_params)}"),
        _flops("forward.attention", "attention, full", f.attention, f"4·T·Σd_attn = 4 × {t} × {w}"),
        _flops(
            "forward.attention_causal",
            "attention, causal",
            f.attention_causal,
            f"2·(T+1)·Σd_attn = 2 × {n(f.context + 1)} × {w}",
        ),
        _flops("forward.per_token", "per token, full", f.per_token, f"{n(f.dense)} + {n(f.attention)}"),
        _flops(
            "forward.per_token_causal",
            "per token, causal",
            f.per_token_causal,
            f"{n(f.dense)} + {n(f.attention_causal)}",
        ),
        _approx("forward.kaplan", "Kaplan's C_forward", f.kaplan, kaplan, f.per_token, f.per_token_causal, KAPLAN),
        _flops(
            "forward.pass",
            f"one pass, {n(f.batch)} × {t} tokens",
            f.total,
            f"per token × T × B = {n(f.per_token)} × {t} × {n(f.batch)}",
        ),
    ]


def training_figures(r: Report) -> list[Figure]:
    t, f, d = r.training, r.forward, n(r.training.tokens)
    full, causal = t.exact, t.exact_causal
    keys = ("training.6nd", "training.6nd_non_embedding")
    labels = ("N active" if r.model.is_moe else "N total", "N non-embedding")
    sizes = (t.params, t.non_embedding)
    return [
        _flops("training.exact", "3 × forward, full", full, f"3 × {n(f.per_token)} × {d}", source=PALM),
        _flops(
            "training.exact_causal", "3 × forward, causal", causal, f"3 × {n(f.per_token_causal)} × {d}", source=PALM
        ),
        *(
            _approx(key, f"6·N·D, {label}", flops, f"6 × {n(size)} × {d}", full, causal, KAPLAN_6ND)
            for key, label, size, (flops, _) in zip(keys, labels, sizes, t.approximations.values(), strict=True)
        ),
    ]


def budget_figures(r: Report) -> list[Figure]:
    k = CHINCHILLA_TOKENS_PER_PARAM
    formula = f"{k}·N_total = {k} × {n(r.model.total)} = {n(r.chinchilla)}"
    budget = Figure(
        "chinchilla.tokens", "Chinchilla budget", r.chinchilla, "tokens", formula, estimate=True, source=HOFFMANN
    )
    return [budget, *([time_figure(r.time)] if r.time else [])]


def time_figure(t: Time) -> Figure:
    formula = (
        f"training FLOPs (3 × forward, full) / (peak × utilisation × GPUs) = {sci(t.flops)} / ({t.gpu.tflops:g}e12"
        f" × {t.utilisation:g} × {n(t.gpus)}) = {n(round(t.seconds))} s = {t.hours:,.1f} hours = {t.days:,.2f} days"
    )
    source = f"peak: {t.gpu.name}, {t.gpu.tflops:g} TFLOPS dense {t.peak_dtype} (vendor); utilisation: assumed"
    label = f"time on {n(t.gpus)} × {t.gpu.name}"
    return Figure("time.seconds", label, t.seconds, "seconds", formula, estimate=True, source=source)


# ---- JSON ------------------------------------------------------------------------------------


def forward_dict(f: Forward, widths: dict[int, int]) -> dict[str, Any]:
    keys = ("context", "batch", "matmul_params", "attention_width", "dense", "attention", "attention_causal")
    keys += ("per_token", "per_token_causal", "kaplan", "total")
    return {
        **{k: getattr(f, k) for k in keys},
        "attention_blocks": [{"width": w, "blocks": b} for w, b in widths.items()],
    }


def training_dict(t: TrainingFlops) -> dict[str, Any]:
    approx = {name: {"flops": flops, "error": error} for name, (flops, error) in t.approximations.items()}
    keys = ("tokens", "context", "params", "non_embedding", "flops", "exact", "exact_causal")
    return {**{k: getattr(t, k) for k in keys}, "approximations": approx}


def time_dict(t: Time) -> dict[str, Any]:
    from .memory.fit import gpu_dict

    return {
        "gpu": gpu_dict(t.gpu),
        "gpus": t.gpus,
        "utilisation": t.utilisation,
        "peak_flops": t.peak_flops,
        "peak_dtype": t.peak_dtype,
        "flops": t.flops,
        "seconds": t.seconds,
        "hours": t.hours,
        "days": t.days,
        "estimate": True,
    }


__all__ = ["SCHEMA", "Figure", "Report", "Time", "report"]
