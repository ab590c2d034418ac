"""Record llama.cpp's CPU compute buffer for dense decoders (llama, qwen2, qwen3) over widths,
micro-batches, sequence counts and flash attention settings, as a test fixture for the replay
(``paramcount.memory.runtimes.llamacpp.replay``).

Not part of CI. Needs llama-cpp-python 0.3.36's Python package with ``LLAMA_CPP_LIB_PATH``
pointing at a CPU build of its vendored llama.cpp (libllama 0.5.0) with ``#define
GGML_ALLOCATOR_DEBUG`` at the top of ``ggml/src/ggml-alloc.c`` (tools/record_llamacpp_landing.py
loads the files the same way):

    python tools/record_llamacpp_replay.py

Output: tests/fixtures/llamacpp_replay.json (``held_out``: cases the replay was not looked at
against before they were recorded).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from tests.gguf_files import llama_spec, write  # noqa: E402

from record_llamacpp_landing import CHILD  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "llamacpp_replay.json"


def qwen(name: str, arch: str, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int, d: int = 0) -> dict:
    """A qwen2 (q/k/v biases) or qwen3 (q/k norms) file: llama's tensors plus those; ``d``: a
    head size other than hidden / heads (Qwen3's 128 at 1,024 wide)."""
    spec = llama_spec(name, layers, hidden, heads, kv, ffn, vocab, arch=arch)
    d = d or hidden // heads
    if d != hidden // heads:
        widths = {"attn_q": [heads * d, hidden], "attn_k": [kv * d, hidden], "attn_v": [kv * d, hidden],
                  "attn_output": [hidden, heads * d]}  # fmt: skip
        for t in spec["tensors"]:
            role = t[0].split(".")[-2]
            if t[0].startswith("blk.") and role in widths:
                t[1] = widths[role]
        spec["meta"]["rope.dimension_count"] = d
    for i in range(layers):
        b = f"blk.{i}."
        if arch == "qwen2":
            spec["tensors"] += [[b + "attn_q.bias", [heads * d], "F32"], [b + "attn_k.bias", [kv * d], "F32"],
                                [b + "attn_v.bias", [kv * d], "F32"]]  # fmt: skip
        else:
            spec["tensors"] += [[b + "attn_q_norm.weight", [d], "F32"], [b + "attn_k_norm.weight", [d], "F32"]]
    spec["meta"]["attention.key_length"] = d
    spec["meta"]["attention.value_length"] = d
    return spec


SPECS = {
    "llama-h768": llama_spec("llama-h768", 5, 768, 12, 4, 3072, 16000),
    "llama-h1280": llama_spec("llama-h1280", 4, 1280, 20, 4, 3456, 20000),
    "qwen2-h896": qwen("qwen2-h896", "qwen2", 5, 896, 14, 2, 4864, 20000),
    "qwen3-h1024": qwen("qwen3-h1024", "qwen3", 5, 1024, 16, 8, 3072, 20000),
    "qwen3-hd128": qwen("qwen3-hd128", "qwen3", 4, 1024, 16, 8, 3072, 20000, d=128),
}
# (context per sequence, sequences, n_ubatch, flash attention[, K cache type, V cache type])
SETTINGS = [(512, 1, 512, "off"), (1024, 1, 256, "off"), (2048, 1, 512, "on"), (768, 2, 512, "off"),
            (512, 4, 128, "on"), (4096, 1, 1024, "off"), (1536, 3, 512, "on"),
            (1024, 1, 512, "off", "q8_0", "f16"), (2048, 2, 256, "on", "q4_0", "q4_0"),
            (4096, 1, 512, "on", "f16", "q8_0")]  # fmt: skip
GGML_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}  # enum ggml_type


def main() -> None:
    doc = {
        "source": "tools/record_llamacpp_replay.py: llama.cpp as vendored by llama-cpp-python 0.3.36 (libllama "
        "0.5.0), CPU build with GGML_ALLOCATOR_DEBUG, n_batch 2048, kv_unified off, use_extra_bufts off",
        "specs": SPECS,
        "cases": [],
    }
    child = CHILD.replace("2048, 512, par", "2048, int(sys.argv[5]), par").replace(
        "cp.flash_attn_type", "cp.type_k, cp.type_v = int(sys.argv[6]), int(sys.argv[7])\ncp.flash_attn_type"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in SPECS.items():
            path = write(spec, Path(tmp) / f"{name}.gguf")
            for per, par, ub, fa, *cache in SETTINGS:
                k, v = cache or ("f16", "f16")
                run = [sys.executable, "-c", child, str(path), str(per), str(par), str(int(fa == "on")), str(ub),
                       str(GGML_TYPES[k]), str(GGML_TYPES[v])]  # fmt: skip
                out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
                got = json.loads(out.splitlines()[-1])
                top = max(end for _, _, end in got["peak"])  # the log's list may keep a freed tensor's row
                case = {"spec": name, "context": per, "parallel": par, "ubatch": ub, "flash_attn": fa,
                        "type_k": k, "type_v": v}  # fmt: skip
                doc["cases"].append({**case, "compute_bytes": top, "compute_mib": got["compute_mib"]})
                print(name, per, par, ub, fa, top, flush=True)
    text = json.dumps(doc, indent=1) + "\n"
    FIXTURE.write_text(text)


if __name__ == "__main__":
    main()
