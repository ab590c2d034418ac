"""The efficiency factors, as data: fitted by ``tools/speed_calibration/fit.py`` on the measurements in
``tools/speed_calibration/*.csv`` (each row citing its source), written to ``factors.json`` beside
this module with the rows each was fitted on and its residuals. Nothing here is set by hand; a
test refits the committed data and compares.

A factor belongs to a runtime, a hardware family and a term. The families split where the
calibration showed kernels reach different shares of the same datasheet figures: GeForce cards
(``nvidia-geforce``: their 16-bit matrix rate is printed with FP32 accumulation, which llama.cpp's
quantised kernels do not need) apart from NVIDIA's workstation and data-centre cards
(``nvidia-pro``), Radeon (``amd-radeon``) apart from Instinct (``amd-instinct``), then ``apple``,
``intel`` and ``cpu``. The terms:

* ``bandwidth``: the share of the memory bandwidth a decode step's reads reach;
* ``layer_s``: seconds each repeating layer adds to a decode step beyond its reads (kernel
  launches and synchronisation: what dominates a small model);
* ``compute``: the share of the peak dense 16-bit matrix FLOP/s a prompt's matmuls reach;
* ``flop_per_byte``: where the catalog has no FLOP/s (Apple's GPUs past M2), the prompt FLOP/s
  per byte/s of memory bandwidth (an Apple chip's GPU cores grow with its memory bus).

vLLM's own terms (``decode_compute``, ``allreduce_s``, ``steady``, ``request_s``, ``queue``) are
described in :mod:`.vllm`. MLX (runtime ``mlx``, family ``apple``) has the llama.cpp terms, fitted
on mlx-lm's published runs (``tools/speed_calibration/mlx.csv``) over mlx-lm's own work.

Each family's ``error`` gives the leave-one-out |error| of decode and prefill over its rows
(median and 90th percentile): the expected error a figure from it carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

FAMILIES = ("nvidia-geforce", "nvidia-pro", "amd-radeon", "amd-instinct", "apple", "intel", "cpu")


@dataclass(frozen=True)
class Fitted:
    """One runtime's factors on one hardware family, with what they were fitted on."""

    runtime: str
    family: str
    terms: dict[str, float]
    rows: dict[str, int]  # rows per phase (decode, prefill)
    error: dict[str, dict[str, float]]  # phase -> {"median": …, "p90": …}: leave-one-out |error|
    sources: tuple[str, ...]
    hardware: tuple[str, ...] = ()  # the cards fitted, where factors.json lists them (transformers')

    def get(self, term: str) -> float | None:
        return self.terms.get(term)

    def expected(self, phase: str) -> dict[str, Any] | None:
        """The expected |error| of a ``phase`` figure, or None where no row was fitted."""
        e = self.error.get(phase)
        if not e:
            return None
        return {**e, "rows": self.rows.get(phase, 0), "runtime": self.runtime, "family": self.family}


@cache
def table() -> dict[tuple[str, str], Fitted]:
    """Every fitted (runtime, family) in the package's factors.json."""
    text = resources.files(__package__).joinpath("factors.json").read_text(encoding="utf-8")
    data = json.loads(text)
    out = {}
    for f in data["factors"]:
        out[f["runtime"], f["family"]] = Fitted(
            f["runtime"],
            f["family"],
            f["terms"],
            f["rows"],
            f["error"],
            tuple(f["sources"]),
            tuple(f.get("hardware", ())),
        )
    return out


def fitted(runtime: str, family: str) -> Fitted | None:
    """The factors of ``runtime`` on ``family``; None where no measurement of that pair was fitted."""
    return table().get((runtime, family))


def family(hw: Any) -> str:
    """A hardware row's speed family (see the module docstring)."""
    if hw.kind in ("cpu", "apple"):
        return hw.kind
    if hw.vendor == "nvidia":
        return "nvidia-geforce" if hw.family.startswith("GeForce") else "nvidia-pro"
    if hw.vendor == "amd":
        return "amd-instinct" if hw.family == "Instinct" else "amd-radeon"
    return hw.vendor
