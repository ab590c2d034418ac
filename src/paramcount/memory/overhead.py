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

from ..errors import ParamcountError, bounded_number
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


DEFAULT = Overhead()


def _num(x: Fraction) -> str:
    return str(int(x)) if x.denominator == 1 else f"{float(x):g}"


def _size_text(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("GB", 10**9), ("MB", 10**6)):
        if n and n % (size // 2 if unit == "GiB" else size) == 0 and n >= size // 2:
            return f"{_num(Fraction(n, size))} {unit}"
    return f"{n:,} B"


def parse(text: str | Overhead) -> Overhead:
    """``0.5GiB+10%``, ``1GB``, ``15%`` or ``0``: a fixed size and/or a percentage."""
    if isinstance(text, Overhead):
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
