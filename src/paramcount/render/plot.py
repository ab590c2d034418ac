"""Memory against context length and batch size, stacked by term, with a GPU's capacity as a line.

matplotlib is an optional extra (``pip install 'paramcount[plot]'``), imported only here and
only when a plot is asked for. No pyplot: a bare Figure leaves the caller's backend alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ParamcountError
from ..memory.core.gpus import GPU
from ..memory.core.limits import max_positions
from ..memory.core.plan import Plan
from ..memory.core.terms import GIB

FORMATS = ("png", "svg")
POINTS = 48


def _figure():
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ParamcountError("plots need matplotlib: pip install 'paramcount[plot]'", field="--plot") from e
    return Figure(figsize=(11, 4.6), layout="constrained")


def _format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ParamcountError(f"a plot is .png or .svg, not {path.name!r}", field="--plot")
    return fmt


def _grid(high: int, points: int = POINTS) -> list[int]:
    """About ``points`` whole numbers from 1 to ``high``, both included."""
    step = max(1, high // points)
    values = list(range(1, high + 1, step))
    return values if values[-1] == high else [*values, high]


def _panel(ax, xs: Sequence[int], plans: Sequence[Plan], xlabel: str, mark: int, gpu: GPU | None, limit=None) -> None:
    shown = list(plans[0].device_terms)  # against the GPU: not what the host holds
    keys = [t.key for t in shown]
    labels = [t.label.split(" (")[0] + (" (estimate)" if t.estimate else "") for t in shown]
    ys = [[p.term(k).bytes / GIB for p in plans] for k in keys]
    ax.stackplot(xs, ys, labels=labels, alpha=0.85)
    if gpu is not None:
        ax.axhline(
            gpu.usable / GIB,
            color="black",
            linestyle="--",
            linewidth=1.2,
            label=f"{gpu.name} ({gpu.usable / GIB:.1f} GiB)",
        )
    ax.axvline(mark, color="grey", linestyle=":", linewidth=1)
    if limit is not None and xs[0] < limit < xs[-1]:
        ax.axvline(limit, color="firebrick", linestyle="-.", linewidth=1, label=f"model's limit ({limit:,} tokens)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GiB")
    ax.set_xlim(xs[0], xs[-1])
    ax.grid(alpha=0.3)


def plot(plan: Plan, path: str | Path, gpu: GPU | None = None) -> Path:
    """Write ``path`` (.png or .svg): ``plan``'s total against context (at its batch) and against
    batch (at its context), stacked by term; ``gpu``'s usable memory as a dashed line, the
    model's context limit as a vertical one. The context axis runs to twice the plan's context."""
    path = Path(path)
    fmt = _format(path)
    context, batch = plan.settings["context"], plan.settings["batch"]
    if context is None:  # a printout or bare checkpoint says no context length: the axis needs one
        raise ParamcountError("draws memory against context: the model states none, so give --context", field="--plot")
    fig = _figure()
    left, right = fig.subplots(1, 2)
    contexts = _grid(2 * context)
    batches = _grid(max(2 * batch, 8), 16)
    along = [plan.at(t, batch) for t in contexts]
    _panel(left, contexts, along, f"context (tokens), batch {batch:,}", context, gpu, max_positions(plan.model))
    _panel(right, batches, [plan.at(context, b) for b in batches], f"batch (sequences), {context:,} tokens", batch, gpu)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4), fontsize="small")
    fig.suptitle(_title(plan))
    try:
        fig.savefig(path, format=fmt, dpi=110, metadata={"Software": None} if fmt == "png" else {"Date": None})
    except OSError as e:
        raise ParamcountError(f"cannot write {path}: {e.strerror or e}", field="--plot") from e
    return path


def _title(plan: Plan) -> str:
    s = plan.settings
    what = (
        f"weights {s['scheme']}, KV cache {s['kv_dtype']}" if plan.mode == "inference" else f"{s['precision']} training"
    )
    return f"{plan.model.name}: {plan.mode} memory ({what}, overhead {s['overhead']})"
