"""Print the tensors in ggml-alloc's compute buffer at its peak, for one recorded llama.cpp case.

Not part of CI. How the compute moments of ``paramcount.memory.runtimes.llamacpp.plan`` were read: llama.cpp
built with ``#define GGML_ALLOCATOR_DEBUG`` at the top of ``ggml/src/ggml-alloc.c`` logs, at
each new peak of the buffer, every tensor in use with its offset; the last such line before the
"compute buffer size" line is the buffer's peak, and the gaps between the tensors are the holes
ggml-alloc could not reuse. Needs llama-cpp-python 0.3.36's Python package with
``LLAMA_CPP_LIB_PATH`` pointing at such a build (see tools/record_llamacpp.py):

    python tools/llamacpp_peak.py granitemoehybrid medium 0     # llamacpp_hybrid.json
    python tools/llamacpp_peak.py buffers 12                    # llamacpp_buffers.json
    python tools/llamacpp_peak.py unseen35 6 [--json]           # llamacpp_unseen35.json

``--json`` prints the peak's tensors as ``[name, start, end]`` rows (how
llamacpp_unseen35.json's ``peaks`` were recorded). The peak is the largest ``max_size`` line:
llama_context::sched_reserve reserves several graphs (the prompt's, one token's, the prompt's
again) and ggml_gallocr_reserve_n only grows the buffer, so its size is the largest graph's.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.gguf_files import write  # noqa: E402
from tools.record_llamacpp import _FLASH, _log_to  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
TENSOR = re.compile(r"(\S+) \[\d+: ([0-9a-f]+)-([0-9a-f]+)\]")


def case_of(args: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the GGUF spec, the recorded case) named on the command line."""
    if args[0] == "buffers":
        doc = json.loads((FIXTURES / "llamacpp_buffers.json").read_text())
        case = doc["cases"][int(args[1])]
        return doc["models"][case["model"]], {**case, "n_ctx": case["context"] * case["parallel"]}
    if args[0] == "unseen35":
        doc = json.loads((FIXTURES / "llamacpp_unseen35.json").read_text())
        case = doc["cases"][int(args[1])]
        run = {"n_ctx": case["context"] * case["parallel"], "ubatch": 512, "kv_unified": False}
        return doc["specs"][case["config"]], {**case, **run, "compute_mib": case["compute_bytes"] / 2**20}
    rec = json.loads((FIXTURES / "llamacpp_hybrid.json").read_text())["families"][args[0]][args[1]]
    return rec["spec"], rec["cases"][int(args[2])]


def peak(path: Path, case: dict[str, Any]) -> list[str]:
    """The allocator's debug lines for one context made as the recording scripts make it."""
    import llama_cpp

    lines: list[str] = []
    keep = _log_to(lines)
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.use_extra_bufts = False
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = case["n_ctx"], 2048, case["ubatch"]
    cp.n_seq_max = max(1, case["parallel"])
    cp.flash_attn_type = _FLASH[case["flash_attn"]]
    cp.kv_unified = case["kv_unified"]
    cp.n_threads = cp.n_threads_batch = 1
    ctx = llama_cpp.llama_init_from_model(model, cp)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    del keep
    return "".join(lines).splitlines()


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--json"]
    spec, case = case_of(args)
    with tempfile.TemporaryDirectory() as tmp:
        log = peak(write(spec, Path(tmp) / "m.gguf"), case)
    maxes = [line for line in log if line.startswith("max_size[")]
    if not maxes:
        sys.exit("no max_size lines: build ggml-alloc.c with GGML_ALLOCATOR_DEBUG")
    top_line = max(maxes, key=lambda line: float(line.split("=")[1].split("MB")[0]))
    if "--json" in sys.argv:
        print(json.dumps([[name, int(a, 16), int(b, 16)] for name, a, b in TENSOR.findall(top_line)]))
        return
    print(f"recorded {case['compute_mib']} MiB; the peak: {top_line.split(':')[0]}")
    top = 0
    for name, a, b in TENSOR.findall(top_line):
        start, end = int(a, 16), int(b, 16)
        hole = f"  (hole {(start - top) / 2**20:.3f} MiB below)" if start - top > 64 else ""
        print(f"{name:32s} {start / 2**20:10.3f} - {end / 2**20:10.3f} MiB{hole}")
        top = max(top, end)


if __name__ == "__main__":
    main()
