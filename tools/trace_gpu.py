"""Record the CUDA caching allocator's large blocks while cases of tools/measure_gpu.py run.

Not part of CI. For the cases whose total the plans get wrong by the allocator's reserve (the
blocks it keeps cached beyond the peak allocation), this writes the order in which blocks of
8 MiB and more were allocated and freed, and the segments it reserved, so that the reserve can
be read from the allocator's own behaviour rather than from ratios. Run it where a CUDA GPU,
torch, transformers and peft are at hand, from the repository root:

    python tools/trace_gpu.py CASES.json

``CASES.json`` holds cases as tools/gpu_cases.json does (``[kind, model id, T, B, options]``).
For each it writes ``trace<i>.json`` into ``$OUT`` (or the current folder): the case, what
measure_gpu.py measures for it, and the events as ``[code, address, bytes]`` with code ``A``
(allocated), ``F`` (freed), ``SA`` (segment reserved) or ``SF`` (segment released), from
``torch.cuda.memory._record_memory_history`` and ``_snapshot``.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

import measure_gpu as mg

OUT = Path(os.environ.get("OUT", "."))
CODE = {"alloc": "A", "free_completed": "F", "segment_alloc": "SA", "segment_free": "SF"}
LARGE = 8 * 2**20


def trace(kind: str, model_id: str, T: int, B: int, options: dict) -> dict:
    mg.reset()
    torch.cuda.memory._record_memory_history(max_entries=400_000)
    result = mg.run(kind, model_id, T, B, options)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    events = [
        [CODE[e["action"]], e["addr"], e["size"]]
        for e in snap["device_traces"][0]
        if e["size"] >= LARGE and e["action"] in CODE
    ]
    mg.reset()
    return {"case": [kind, model_id, T, B, options], "result": result, "events": events}


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    torch.zeros(1, device="cuda")
    OUT.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(cases):
        doc = trace(*case)
        (OUT / f"trace{i}.json").write_text(json.dumps(doc))
        print(case[1], case[4], len(doc["events"]), "events", flush=True)


if __name__ == "__main__":
    main()
