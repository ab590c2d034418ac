"""The replay's child process: trace one step on the meta device, replay it, answer in JSON.

Run as ``python -m paramcount.memory.runtimes.transformers.replay.worker MEMORY`` by
:func:`paramcount.memory.runtimes.transformers.replay.run`: one request on stdin (the case),
one JSON line on stdout (the replay's figures, or ``{"error": …}``). Before torch and
transformers are imported, the process takes an address-space limit (``RLIMIT_AS``), sets
transformers and the Hub offline and makes every socket connect raise (as the fallback's
worker does, :mod:`paramcount.frontends.fallback_worker`). The model is built from its config
alone on the meta device: no weights, and no ``trust_remote_code`` (a ``model_type``
transformers does not know is refused).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .....frontends.fallback_worker import OFFLINE, no_network

# Segment placements the replay runs (allocator.py): where the driver puts a segment decides
# which cached block best fit takes, and a plan cannot know it; the answer gives the range.
PLACES = ("upward", "downward", *(f"shuffled:{s}" for s in range(6)))


def sandbox(memory: int) -> None:
    import resource

    os.environ.update(OFFLINE)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (memory if hard == resource.RLIM_INFINITY else min(memory, hard), hard))
    no_network()


def known(config: dict) -> None:
    """A model_type transformers maps to a config class, else a one-line refusal (no remote code)."""
    from transformers import CONFIG_MAPPING

    if config.get("auto_map"):
        raise ValueError("the config names the repository's own code (auto_map), which --replay never runs")
    if config.get("model_type") not in CONFIG_MAPPING:
        raise ValueError(f"transformers has no model_type {config.get('model_type')!r} (no remote code is run)")


def place(name: str):
    from . import allocator

    if name.startswith("shuffled:"):
        return allocator.shuffled(int(name.split(":")[1]))
    return getattr(allocator, name)()


def phase(at: int, marks: Any) -> str:
    """Which part of the run an event index falls in: the build, the forward, or a training step."""
    starts = [marks] if isinstance(marks, int) else list(marks)
    if at < starts[0]:
        return "building the model"
    if isinstance(marks, int):
        return "the forward"
    return f"step {sum(at >= s for s in starts)}"


def replay_case(request: dict) -> dict:
    """The trace's peaks under every placement, and the op whose allocation set each peak."""
    import torch
    import transformers

    from .allocator import replay
    from .trace import trace

    config = request["config"]
    known(config)
    events, marks = trace(request["kind"], config, request["T"], request["B"], request["options"])
    runs = {name: replay(events, None, place(name), where=True)[0] for name in PLACES}
    most = max(runs, key=lambda name: runs[name]["peak_reserved"])
    step = max(replay(events, marks, where=True)[1:], key=lambda p: p["peak_alloc"])  # after the build
    op = events[runs[most]["reserved_at"]]
    return {
        "events": len(events),
        "allocated_peak": step["peak_alloc"],
        "allocated_op": events[step["alloc_at"]][3],
        "reserved": {name: r["peak_reserved"] for name, r in runs.items()},
        "placement": most,
        "peak_op": op[3],
        "peak_op_bytes": op[2],
        "peak_phase": phase(runs[most]["reserved_at"], marks),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, **peft(request)},
    }


def peft(request: dict) -> dict:
    """peft's version, where the step used it (LoRA)."""
    if request["kind"] != "lora":
        return {}
    import peft

    return {"peft": peft.__version__}


def serve(line: bytes, memory: int) -> dict:
    try:
        return replay_case(json.loads(line))
    except MemoryError:
        return {"error": f"the replay needed more than its memory limit of {memory / (1 << 30):.3g} GiB"}
    except ValueError as e:  # transformers refusing the config, or known() refusing it: one line
        return {"error": " ".join(str(e).split())[:300]}
    except Exception as e:  # torch failing to load within the memory limit, an op the meta device lacks
        text = " ".join(str(e).split())[:300]
        return {"error": f"{type(e).__name__} (its memory limit: {memory / (1 << 30):.3g} GiB): {text}"}


def main(memory: int) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever transformers prints goes to stderr, never into the answer
    sandbox(memory)
    answer = serve(sys.stdin.buffer.readline(), memory)
    out.write(json.dumps(answer).encode() + b"\n")
    out.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]))
