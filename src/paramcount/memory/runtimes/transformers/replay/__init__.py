"""``paramcount memory … --replay``: a transformers step's memory replayed allocation by allocation.

The exact mode of the transformers runtime, for users with torch (``pip install
'paramcount[replay]'``). A child process (:mod:`.worker`, within :data:`TIME_LIMIT` and
:data:`MEMORY_LIMIT`) builds the model from its config on the meta device (no weights read, no
code from the model's repository run), runs the step tools/measure_gpu.py measures on a GPU
(a ``use_cache=True, logits_to_keep=1`` forward; two AdamW steps; peft LoRA's two steps) under a
dispatch mode that records every storage's birth and death (:mod:`.trace`), and replays those
events through the rules of PyTorch's CUDA caching allocator (:mod:`.allocator`,
c10/cuda/CUDACachingAllocator.cpp). The answer: the peak allocated, the peak reserved (+ the
CUDA context the plans use, :data:`paramcount.memory.core.overhead.CUDA_CONTEXT`) and the op
whose allocation set the peak.

Nothing here imports torch: only the child does. It is a model of the allocator, not a GPU run,
and says so (:data:`HELD`): how close it came to the 94 H100/H200 runs it was held to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from .....errors import ParamcountError
from .....model import Model
from ....core.overhead import CUDA_CONTEXT
from ....core.plan import SCHEMA, context_for, model_dict, positive, size_dict
from ....core.terms import Term

TIME_LIMIT = 600.0  # seconds for the child, torch's import included (a 7B two-step training: ~40 s)
MEMORY_LIMIT = 8 << 30  # the child's address space (torch and transformers map ~1 GB; events ~200 B each)
INSTALL = "pip install 'paramcount[replay]'"
SOURCE = (
    "paramcount.memory.runtimes.transformers.replay: the step traced on the meta device (trace.py) and replayed "
    "through PyTorch c10/cuda/CUDACachingAllocator.cpp's rules (allocator.py); CUDA context measured on an H100 "
    "80GB (PyTorch 2.11, CUDA 13.0; tests/fixtures/gpu_h100.json)"
)
# How the replay held the measured runs (tests/test_alloc_trace.py; the H100 figures: docs/memory.md).
HELD = (
    "a model of the allocator, not a GPU run: on the 15 H100 runs whose peaks were kept its total came within "
    "-1.2% to +3.3% of the card's use and its peak allocated within 0.3%; of 94 H100/H200 runs, its peak "
    "allocated was within 3% in all and its peak reserved within 3% (or 0.3 GB) of its placements' range in 93"
)
PRECISIONS = ("mixed", "bf16", "fp32")
DTYPES = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class Case:
    """One step to replay: tools/measure_gpu.py's case (``kind``, T, B, options) for a config."""

    kind: str  # infer, train or lora
    context: int
    batch: int
    options: Mapping[str, Any]

    def settings(self) -> dict[str, Any]:
        mode = {"infer": "inference", "train": "training", "lora": "LoRA training"}[self.kind]
        return {"runtime": "transformers", "replay": True, "step": mode, "context": self.context,
                "batch": self.batch, **self.options}  # fmt: skip


def case(model: Model, context: int | None = None, batch: int = 1, **flags: Any) -> Case:
    """The step ``memory``'s flags describe; a flag the replay cannot model is refused in one line.

    ``flags``: ``train``, ``dtype``, ``attn`` (inference); ``precision``, ``recompute``,
    ``lora_rank``, ``lora_targets`` (training). Anything else given is refused by its name."""
    T, _ = context_for(model, context)
    B = positive(batch, "--batch")
    given = {k: v for k, v in flags.items() if v is not None and v is not False}
    train = given.pop("train", False)
    modelled = ("precision", "recompute", "lora_rank", "lora_targets") if train else ("dtype", "attn")
    for name in given:
        if name not in modelled:
            raise ParamcountError(f"--replay does not model {_flag(name)}; leave it out", field=_flag(name))
    options = _train(given) if train else _infer(given)
    return Case("lora" if "r" in options else "train" if train else "infer", T, B, options)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _infer(given: dict[str, Any]) -> dict[str, Any]:
    dtype = given.get("dtype", "bf16")
    if dtype not in DTYPES:
        raise ParamcountError(f"--replay runs bf16, fp16 or fp32 weights, not {dtype!r}", field="--dtype")
    attn = given.get("attn")
    if attn not in (None, "sdpa", "eager"):
        raise ParamcountError(f"--replay runs sdpa or eager attention, not {attn!r}", field="--attn")
    return {"dtype": dtype, **({"attn": attn} if attn else {})}


def _train(given: dict[str, Any]) -> dict[str, Any]:
    rank = given.get("lora_rank")
    if "lora_targets" in given and rank is None:
        raise ParamcountError("--lora-targets needs --lora-rank", field="--lora-targets")
    precision = given.get("precision", "bf16" if rank else "mixed")
    if precision not in (("bf16",) if rank else PRECISIONS):
        said = "LoRA on bf16 weights" if rank else "mixed, bf16 or fp32"
        raise ParamcountError(f"--replay runs {said}, not --precision {precision}", field="--precision")
    recompute = given.get("recompute", "full" if rank else "none")
    if recompute not in ("none", "full"):
        raise ParamcountError("--replay runs --recompute none or full, not selective", field="--recompute")
    if rank is None:
        return {"precision": precision, "recompute": recompute}
    return {"r": rank, "targets": _targets(given.get("lora_targets")), "recompute": recompute}


def _targets(text: str | None) -> Any:
    """peft's ``target_modules``: None (its default for the model type), all-linear, a list of
    names, or one regular expression matched against the whole module name."""
    if text is None or text == "all-linear":
        return text
    names = [n.strip() for n in text.split(",")]
    return names if all(n.replace("_", "").isalnum() for n in names) else text


# ---- the child ------------------------------------------------------------------------------


def run(model: Model, step: Case, limit: float = TIME_LIMIT, memory: int = MEMORY_LIMIT) -> Replay:
    """The replay of ``step`` for ``model``, from a child process within ``limit`` s and ``memory`` B."""
    if find_spec("torch") is None or find_spec("transformers") is None:
        raise ParamcountError(f"--replay runs PyTorch and transformers on the meta device: {INSTALL}", field="--replay")
    config = dict(model.config)
    if not config.get("model_type"):
        raise ParamcountError("--replay builds the model from its config.json, and this source has none")
    _buildable(config, model.source)
    request = {"kind": step.kind, "config": config, "T": step.context, "B": step.batch, "options": dict(step.options)}
    answer = _ask(request, limit, memory)
    if "error" in answer:
        raise ParamcountError(f"the replay failed: {answer['error']}", source=model.source, field="--replay")
    return Replay(model, step, answer)


def _buildable(config: Mapping[str, Any], source: str) -> None:
    """A model_type transformers knows (paramcount's list of them), and no remote code: else one
    line, before the child starts (which checks both again against the transformers installed)."""
    from .....frontends.fallback import known

    if config.get("auto_map"):
        raise ParamcountError(
            "--replay never runs the repository's own code (auto_map)", source=source, field="auto_map"
        )
    if not known(config["model_type"]):
        said = f"transformers has no model_type {config['model_type']!r}, and --replay runs no remote code"
        raise ParamcountError(said, source=source, field="model_type")


def _ask(request: dict[str, Any], limit: float, memory: int) -> dict[str, Any]:
    from .....frontends.fallback_worker import OFFLINE

    env = {**os.environ, **OFFLINE, "PYTHONPATH": _path()}
    cmd = [sys.executable, "-m", __name__ + ".worker", str(memory)]
    try:
        done = subprocess.run(
            cmd, input=json.dumps(request).encode(), capture_output=True, timeout=limit, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise ParamcountError(f"the replay took longer than its limit of {limit:g} s and was stopped") from None
    try:
        return json.loads(done.stdout.decode().splitlines()[-1])
    except (ValueError, IndexError):
        gib = f"{memory / (1 << 30):.3g} GiB"
        raise ParamcountError(f"the replay stopped without an answer (past its memory limit of {gib}?)") from None


def gb(n: int) -> str:
    return f"{n / 1e9:.2f}"


def _path() -> str:
    """PYTHONPATH for the child: this paramcount first, whatever the parent runs from."""
    here = str(Path(__file__).resolve().parents[5])
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)


# ---- the result -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """What the child answered, as ``memory``'s terms: ``total`` = peak reserved + CUDA context."""

    model: Model = field(repr=False)
    step: Case
    answer: Mapping[str, Any]
    context: int = CUDA_CONTEXT

    @property
    def reserved(self) -> int:
        """The peak reserved: the most any placement of the segments reserved (where the driver
        puts a segment decides which free block best fit splits; a plan cannot know it)."""
        return max(self.answer["reserved"].values())

    @property
    def total(self) -> int:
        return self.reserved + self.context

    @property
    def held(self) -> str:
        """What the replay is, and how close it came to the measured runs."""
        return f"the replay is {HELD}"

    def terms(self) -> tuple[Term, ...]:
        a = self.answer
        lo, hi = min(a["reserved"].values()), max(a["reserved"].values())
        count = len(a["reserved"])
        spread = (
            f"the same under {count} placements"
            if lo == hi
            else f"the most of {count} placements, {gb(lo)}–{gb(hi)} GB"
        )
        return (
            Term("reserved_peak", "peak reserved (replayed)", self.reserved, spread, HELD, True, SOURCE),
            Term("cuda_context", "CUDA context (measured)", self.context, "H100, PyTorch 2.11, CUDA 13.0",
                 "the card's use after CUDA's start and one cuBLAS matmul, before any model", True, SOURCE),
        )  # fmt: skip

    def beside(self) -> tuple[Term, ...]:
        """Figures shown beside the total, not added to it: the peak allocated and the peak's op."""
        a = self.answer
        return (
            Term("allocated_peak", "peak allocated (replayed)", a["allocated_peak"],
                 f"set by {a['allocated_op']}", HELD, True, SOURCE),
            Term("peak_op", "op that set the peak reserved", a["peak_op_bytes"],
                 f"{a['peak_op']}, in {a['peak_phase']}",
                 "the allocation that made the allocator reserve its last segment", True, SOURCE),
        )  # fmt: skip

    def notes(self) -> list[str]:
        v = self.answer["versions"]
        said = ", ".join(f"{k} {v[k]}" for k in sorted(v))
        return [
            f"replayed on the meta device with {said}: {self.answer['events']:,} allocations and frees",
        ]

    def to_dict(self) -> dict[str, Any]:
        """``paramcount.memory/1`` with ``exact: false``; ``terms`` sum to ``total`` but for those
        marked ``"in_total": false`` (the peak allocated and the peak's op)."""
        from ....core.plan import term_dict

        beside = [{**term_dict(t), "in_total": False} for t in self.beside()]
        return {
            "schema": SCHEMA,
            "model": model_dict(self.model),
            "mode": "training" if self.step.kind != "infer" else "inference",
            "settings": self.step.settings(),
            "total": size_dict(self.total),
            "estimated": size_dict(self.total),
            "exact": False,
            "estimate": HELD,
            "terms": [term_dict(t) for t in self.terms()] + beside,
            "peak_op": self.answer["peak_op"],
            "notes": self.notes(),
        }
