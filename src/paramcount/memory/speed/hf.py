"""transformers' speed: ``model.generate`` in eager PyTorch, one forward per token, on one GPU.

What a step does, as transformers does it:

* every weight of the scheme is read once per forward (a ``torch.nn.Linear`` per projection; of
  an untied input embedding only the rows looked up: :func:`.work.flat`);
* the KV cache is a ``DynamicCache``, the default of ``generate``: ``DynamicLayer.update``
  (``cache_utils.py``) appends a step's keys and values with ``torch.cat([self.keys, key_states],
  dim=-2)``, which reads the whole cache and writes a new one, and attention then reads it again:
  :data:`KV_PASSES` passes over the cache per step (the legacy tuple cache of 4.33–4.35 did the same
  ``torch.cat`` inside each attention module);
* every layer's kernels are launched from Python, one after another: the per-layer overhead the
  calibration's ``layer_s`` measures (on the runs fitted, most of a 7B model's step).

So a decode step is llama.cpp's arithmetic (:func:`.llamacpp.decode`: reads at the fitted share of
the bandwidth plus ``layer_s`` per layer) over these reads, and a prompt is one forward of all its
tokens (:func:`.llamacpp.prefill` with the whole prompt as one batch) at the fitted share of the
peak. The factors are ``transformers``' own (``tools/speed_calibration/transformers.csv``:
optimum-benchmark's runs, fp16 with a ``DynamicCache`` and no ``torch.compile``); where no run of
a hardware family was fitted, only the bounds are given. Batches past :data:`MAX_BATCH` streams
were not fitted (there eager attention's own time grows past the per-layer overhead): their
estimate carries no expected error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...model import Model
from . import llamacpp as lcp
from .factors import Fitted, fitted
from .figures import Figure
from .work import Work, flat

RUNTIME = "transformers"
KV_PASSES = 3  # DynamicLayer.update's torch.cat reads the cache and writes it anew; attention reads it
MAX_BATCH = 8  # the largest batch the calibration fitted (tools/speed_calibration/fit.py HF_MAX_BATCH)
DTYPES = ("fp16", "bf16")  # the weights the fitted runs used (fit.py HF_DTYPES): quantised kernels differ
SETTING = (
    "transformers: model.generate with a DynamicCache and no torch.compile, as the fitted runs (optimum-benchmark, "
    "transformers 4.33-4.35, fp16, eager/sdpa/flash_attention_2 pooled, batches 1 to 8, one A100 on an AMD EPYC "
    "7742 host); its per-layer overhead is the host's Python and kernel launches: another host may differ"
)


def work(model: Model, rows: Any, kv_element_bytes: int = 2) -> Work:
    """One token's reads under transformers: :func:`.work.flat` over the scheme's weight rows, the
    KV cache counted :data:`KV_PASSES` times (a ``DynamicCache`` step copies it whole)."""
    w = flat(model, rows, kv_element_bytes)
    return replace(w, kv_kinds=tuple((cell * KV_PASSES, window) for cell, window in w.kv_kinds))


def decode(work: Work, hw: Any, depth: int, streams: int = 1, table: Any = fitted) -> Figure:
    """One ``generate`` step of ``streams`` sequences (a batch) at ``depth`` cells, per stream."""
    fig = lcp.decode(work, lcp.Setup((hw,)), depth, streams, runtime=RUNTIME, table=table)
    fig = replace(fig, terms=_copied(fig.terms))
    if streams > MAX_BATCH and fig.error is not None:
        why = (f"a batch of {streams}: the calibration fitted batches of 1 to {MAX_BATCH} (eager attention's own "
               "time grows past them): the estimate is optimistic and its error unknown")  # fmt: skip
        fig = replace(fig, error=None, why="; ".join(x for x in (fig.why, why) if x))
    return fig


def _copied(terms: dict[str, Any]) -> dict[str, Any]:
    """The step's KV bytes split as read: the cache once (attention) and its copy (the ``torch.cat``'s
    read and write), so ``kv_cache`` stays the cache's own size."""
    read = dict(terms["bytes_read_per_step"])
    kv = read["kv_cache"]
    read["kv_cache"], read["kv_cache_copy"] = kv // KV_PASSES, kv - kv // KV_PASSES
    return {**terms, "bytes_read_per_step": read}


def prefill(work: Work, hw: Any, prompt: int, table: Any = fitted) -> Figure:
    """One forward of the whole prompt (``generate``'s first step: no chunking): its FLOPs at the
    fitted share of the peak, plus the same per-layer launch overhead a decode step pays (the
    forward launches the same kernels, one layer after another, from Python)."""
    from .factors import family

    fig = lcp.prefill(work, lcp.Setup((hw,)), prompt, prompt, runtime=RUNTIME, table=table)
    f = table(RUNTIME, family(hw))
    c = f.get("layer_s") if f else None
    if not c or fig.seconds is None:
        return fig
    overhead = c * sum(work.layers.values())
    parts = tuple(_plus(p, overhead) if p.device == hw.key else p for p in fig.parts)
    binds = next((f"{p.limit} ({p.device})" for p in parts if p.device == hw.key), fig.bound_by)
    return replace(fig, seconds=fig.seconds + overhead, parts=parts, bound_by=binds)


def _plus(part: Any, overhead: float) -> Any:
    """A device's prompt with the layers' launch overhead added (it binds where it is the larger)."""
    if part.seconds is None:
        return part
    limit = "per-layer launch/sync overhead" if overhead > part.seconds else part.limit
    return replace(part, seconds=part.seconds + overhead, limit=limit)


def own(hw: Any) -> Fitted | None:
    """transformers' factors for ``hw``'s family, or None where none of its runs was fitted."""
    from .factors import family

    return fitted(RUNTIME, family(hw))
