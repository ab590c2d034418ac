"""The GPU measurements of tests/fixtures/gpu_h100.json and gpu_h200.json as plans to hold against them.

Each case is planned as it ran (tools/record_gpu.py says where the figures come from):
inference with bf16 weights (fp16 or fp32 where the case says, and its attention), training and
LoRA at the case's precision, checkpointing and adapters. ``table`` writes the
plan-against-measurement table that docs/memory.md shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramcount
from paramcount import memory
from paramcount.memory.core.terms import GB

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "gpu_h100.json").read_text())
H200 = json.loads((Path(__file__).parent / "fixtures" / "gpu_h200.json").read_text())
CONTEXT_USED = FIXTURE["cublas_context_used"]


@dataclass(frozen=True)
class Case:
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        o = self.raw["options"]
        extra = [f"{k} {v}" for k, v in o.items() if k not in ("new_tokens", "targets")]
        if "targets" in o:
            extra.append("targets " + (o["targets"] if isinstance(o["targets"], str) else ",".join(o["targets"])))
        kind = {"infer": "", "generate": "generate, "}.get(self.raw["kind"], self.raw["kind"] + ", ")
        head = f"{self.gpu}: {self.raw['id']}, {kind}{self.raw['T']:,} × {self.raw['B']}"
        return head + "".join(f", {e}" for e in extra)

    @property
    def gpu(self) -> str:
        return "H200" if "H200" in self.raw["from"] else "H100"

    @property
    def tokens(self) -> int:
        """Tokens the cache holds: the prompt, and the new ones (a static cache's run generates one)."""
        o = self.raw["options"]
        return self.raw["T"] + o.get("new_tokens", 1 if o.get("cache") == "static" else 0)

    @property
    def reported(self) -> bool:
        return "used" in self.raw["measured"]

    @property
    def steps(self) -> list[dict[str, int]]:
        return self.raw["measured"].get("steps") or [self.raw["measured"]]

    @property
    def used(self) -> int:
        """What the card held at the peak: peak reserved + the CUDA context."""
        m = self.raw["measured"]
        if self.reported:
            return m["used"]
        return max(s["peak_reserved"] for s in self.steps) + self.raw["context_used"]

    @property
    def peak_alloc(self) -> int | None:
        return None if self.reported else max(s["peak_alloc"] for s in self.steps)

    def model(self) -> paramcount.Model:
        cfg = FIXTURE["configs"].get(self.raw["model"]) if "model" in self.raw else None
        return paramcount.load(cfg["config"] if cfg else self.raw["id"])

    def plan(self, gpu: str | None = None) -> memory.Plan:
        o, kind = self.raw["options"], self.raw["kind"]
        T, B = self.tokens, self.raw["B"]
        if kind in ("infer", "generate"):
            scheme = o.get("dtype", "bf16")
            return memory.inference(self.model(), scheme, context=T, batch=B, cache=o.get("cache"), attn=o.get("attn"))
        recompute = o.get("recompute", "none")
        if kind == "lora":
            targets = o.get("targets")
            return memory.train(
                self.model(),
                precision="bf16",
                context=T,
                batch=B,
                recompute=recompute,
                lora=o["r"],
                lora_targets=targets,
            )
        return memory.train(self.model(), precision=o["precision"], context=T, batch=B, recompute=recompute)


def cases() -> list[Case]:
    return [Case(c) for c in FIXTURE["cases"] + FIXTURE["reported"] + H200["cases"]]


def allocated(plan: memory.Plan) -> int:
    """What PyTorch's allocator hands out in the plan: every term but the overhead, and the
    overhead's cuBLAS workspace (the context and the allocator's reserve are not allocations)."""
    tensors = sum(t.bytes for t in plan.device_terms if t.key != "overhead")
    return tensors + sum(
        p.bytes for t in plan.device_terms if t.key == "overhead" for p in t.parts if p.key == "overhead.workspace"
    )


def ratio(plan_bytes: int, measured: int) -> float:
    return plan_bytes / measured - 1


def table(skip: Mapping[str, str] | None = None) -> str:
    """Every case, plan against measurement; a case in ``skip`` (not planned as it ran) says why."""
    rows = ["| case | plan total | GPU used | plan vs GPU | plan tensors | peak allocated | vs allocated |"]
    rows.append("|---|---:|---:|---:|---:|---:|---:|")
    for c in cases():
        if skip and c.name in skip:
            rows.append(f"| {c.name} | | {c.used / GB:.2f} GB | not planned: {skip[c.name]} | | | |")
            continue
        p = c.plan()
        a = c.peak_alloc
        measured = f"{a / GB:.2f} GB | {ratio(allocated(p), a):+.0%}" if a else "(not kept) | "
        alloc = f"{allocated(p) / GB:.2f} GB | {measured}"
        rows.append(
            f"| {c.name} | {p.total / GB:.2f} GB | {c.used / GB:.2f} GB | {ratio(p.total, c.used):+.0%} | {alloc} |"
        )
    return "\n".join(rows)


def group(c: Case, plan: memory.Plan) -> str:
    """The kind of run a case is, for the README's summary."""
    o, kind = c.raw["options"], c.raw["kind"]
    if kind == "lora":
        return "LoRA (peft)"
    if kind == "train":
        return "training, checkpointing" if o.get("recompute") == "full" else "training"
    if o.get("dtype") in ("fp32", "fp16"):
        return "inference in fp32 or fp16"
    if plan.settings.get("attn") == "eager":
        return "inference, eager attention"
    masked = any(p.key == "activations.masks" for p in plan.term("activations").parts)
    return "inference, sliding window (sdpa with a mask)" if masked else "inference, sdpa"


GROUPS = (
    "inference, sdpa",
    "inference, sliding window (sdpa with a mask)",
    "inference, eager attention",
    "inference in fp32 or fp16",
    "training",
    "training, checkpointing",
    "LoRA (peft)",
)


def summary(skip: frozenset[str] = frozenset()) -> str:
    """Per kind of run: cases, how many totals and tensor figures are within the goal, and the
    range of plan against GPU (``skip``: cases not planned as they ran)."""
    rows = ["| kind of run (H100, H200) | cases | total within −3% to +20% | plan vs GPU | tensors within ±10% |"]
    rows.append("|---|---:|---:|---:|---:|")
    seen: dict[str, list[tuple[float, float | None]]] = {g: [] for g in GROUPS}
    for c in cases():
        if c.name in skip:
            continue
        p = c.plan()
        a = c.peak_alloc
        seen[group(c, p)].append((ratio(p.total, c.used), ratio(allocated(p), a) if a else None))
    for g, got in seen.items():
        totals = [t for t, _ in got]
        tensors = [x for _, x in got if x is not None]
        within = sum(-0.03 <= t <= 0.20 for t in totals)
        close = sum(abs(x) <= 0.10 for x in tensors)
        rows.append(
            f"| {g} | {len(got)} | {within} | {min(totals):+.0%} to {max(totals):+.0%} | {close} of {len(tensors)} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
    print(summary())
