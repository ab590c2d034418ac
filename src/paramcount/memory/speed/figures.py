"""A speed figure: the estimate, the bound beside it, the terms behind both and what binds.

Every figure is labelled: ``estimate`` (a bound times fitted factors, with the expected error of
its runtime and hardware family from the calibration's leave-one-out residuals) or, where no
factor was fitted for that pair, only the ``upper bound`` (the estimate is None and ``why`` says
so). A bound is never shown as an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Part:
    """One device's share of a step or a prompt: what it reads or computes and the time it takes."""

    device: str  # the hardware's key, or "host"
    bytes: int  # bytes read (decode) or copied over PCIe (prefill's host weights)
    flops: int
    seconds: float | None  # estimate (None: not calibrated)
    bound_seconds: float | None  # at the peaks (None: the catalog has no such peak)
    limit: str  # the term that binds on this device
    host: bool = False  # a CPU's part: layers or tensors left in host memory

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "bytes": self.bytes,
            "flops": self.flops,
            "seconds": None if self.seconds is None else round(self.seconds, 9),
            "bound_seconds": None if self.bound_seconds is None else round(self.bound_seconds, 9),
            "bound_by": self.limit,
        }


@dataclass(frozen=True)
class Figure:
    """Decode (``tokens_per_s`` per stream), prefill (``tokens_per_s`` of one prompt) or TTFT
    (``seconds``): the estimate where factors were fitted, else None, and always the bound."""

    phase: str
    seconds: float | None  # the step (decode), the prompt (prefill), to the first token (ttft)
    bound_seconds: float | None  # None: a peak the bound needs is not in the catalog
    tokens: int  # tokens the seconds cover: streams (decode), prompt tokens (prefill)
    bound_by: str
    parts: tuple[Part, ...] = ()
    terms: dict[str, Any] = field(default_factory=dict)
    factors: tuple[dict[str, Any], ...] = ()
    error: dict[str, Any] | None = None
    why: str = ""  # why there is no estimate, or what it leaves out

    @property
    def tokens_per_s(self) -> float | None:
        return None if not self.seconds else self.tokens / self.seconds

    @property
    def bound_tokens_per_s(self) -> float | None:
        return self.tokens / self.bound_seconds if self.bound_seconds else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "estimate": None if self.seconds is None else self._estimate(),
            "upper_bound": None
            if self.bound_seconds is None
            else {"label": self._bound_label(), **self._rate(self.bound_seconds)},
            "bound_by": self.bound_by,
            "terms": self.terms,
            "parts": [p.to_dict() for p in self.parts],
            "factors": list(self.factors),
        }
        if self.why:
            out["note"] = self.why
        return out

    def _bound_label(self) -> str:
        """The bound on speed is, for a time (TTFT), the shortest it can take: say which way it bounds."""
        return "upper bound on speed: the shortest time" if self.phase == "ttft" else "upper bound"

    def _estimate(self) -> dict[str, Any]:
        return {"label": "estimate", **self._rate(self.seconds), "expected_error": self.error}

    def _rate(self, seconds: float | None) -> dict[str, Any]:
        if self.phase == "ttft":
            return {"seconds": None if seconds is None else round(seconds, 6)}
        rate = self.tokens / seconds if seconds else None
        return {"tokens_per_s": None if rate is None else round(rate, 2), "seconds": round(seconds or 0, 9)}
