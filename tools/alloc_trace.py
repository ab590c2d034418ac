"""The allocations a transformers step makes, in order, without a GPU, for the catalog's models.

The tracer is the package's (src/paramcount/memory/runtimes/transformers/replay/trace.py, what
``paramcount memory --replay`` runs in its child process); this takes the cases of
tools/measure_gpu.py (``[kind, model id, T, B, options]``), a model by its catalog id.

    python tools/alloc_trace.py CASES.json    # prints each case's events count and peak
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from paramcount.memory.runtimes.transformers.replay import trace as _trace
from paramcount.memory.runtimes.transformers.replay.allocator import replay
from paramcount.memory.runtimes.transformers.replay.trace import Autocast, Recorder, kernels  # noqa: F401

CATALOG = Path(__file__).resolve().parent.parent / "src" / "paramcount" / "catalog"


def config(model_id: str) -> dict:
    """The catalog's published config of ``model_id`` (as tools/measure_gpu.py builds it)."""
    return json.loads((CATALOG / (model_id.replace("/", "--") + ".json")).read_text())["config"]


def trace(kind: str, model_id: str, T: int, B: int, options: dict) -> tuple[list[tuple], object]:
    """The events of one case, and where its steps begin (an index, or a list for training)."""
    return _trace.trace(kind, config(model_id), T, B, options)


def main() -> None:
    for case in json.loads(Path(sys.argv[1]).read_text()):
        events, marks = trace(*case)
        print(case, len(events), "events", replay(events, marks), flush=True)


if __name__ == "__main__":
    main()
