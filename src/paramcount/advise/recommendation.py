"""A recommendation: what to run under one runtime, and the command that runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..memory.core.plan import Plan


@dataclass(frozen=True)
class Recommendation:
    """What to run under one runtime: ``scheme`` at ``context`` tokens (one sequence), ``gpu_bytes``
    on the GPU and ``host_bytes`` in host memory, and the ``command`` that runs it; ``fits`` False
    (and no command) where nothing this runtime loads fits, ``why`` says so in words."""

    runtime: str
    scheme: str | None
    context: int | None
    fits: bool
    gpu_bytes: int | None
    host_bytes: int | None
    command: str | None
    why: str
    placement: str = "gpu"  # gpu | offload (layers or experts in host memory) | none
    plan: Plan | None = field(default=None, repr=False, compare=False)
    options: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the runtime's, for speed
    speed: dict[str, Any] | None = None  # decode, prefill and TTFT as paramcount.memory.speed predicts them

    def to_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "scheme": self.scheme,
            "context": self.context,
            "fits": self.fits,
            "gpu_bytes": self.gpu_bytes,
            "host_bytes": self.host_bytes,
            "placement": self.placement,
            "command": self.command,
            "why": self.why,
            "speed": self.speed,
        }


def host_ok(host: int, ram: int | None) -> bool:
    """Whether the host part fits the RAM given (None: not checked)."""
    return ram is None or host <= ram


def ram_words(ram: int | None) -> str:
    return "host RAM not checked (give --ram)" if ram is None else f"within {ram / 2**30:,.1f} GiB of RAM"


def gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


def model_ref(model: Any) -> str:
    """What a runtime's command names: a catalog or Hub id as it is, a local config or checkpoint by
    its folder (``from_pretrained`` and ``vllm serve`` take the folder, not config.json)."""
    from pathlib import Path

    name = str(model.name)
    source = str(getattr(model, "source", ""))
    if source.startswith(("catalog:", "hub:", "ollama:")) or not Path(source).exists():
        return name
    path = Path(source)
    return str(path if path.is_dir() else path.parent)
