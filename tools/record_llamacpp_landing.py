"""Record llama.cpp's CPU compute buffer and its peak for the graphs whose last-layer placement
``paramcount.memory.runtimes.llamacpp.plan.landing`` reads, over settings and widths beyond
issue 35's rows, as a test fixture.

Not part of CI. Needs llama-cpp-python 0.3.36's Python package with ``LLAMA_CPP_LIB_PATH``
pointing at a CPU build of its vendored llama.cpp (libllama 0.5.0) with ``#define
GGML_ALLOCATOR_DEBUG`` at the top of ``ggml/src/ggml-alloc.c`` (see tools/llamacpp_peak.py):

    python tools/record_llamacpp_landing.py

Each spec is issue 35's (tests/fixtures/llamacpp_unseen35.json ``specs``) or a llama of
tests/gguf_files.py ``llama_spec`` at other widths; each case is loaded in its own process as
tools/record_llamacpp.py loads them (``use_extra_bufts`` off, n_batch 2,048, n_ubatch 512,
``kv_unified`` off, one thread), and the bytes of the largest ``max_size`` line's top (the
"CPU compute buffer size") and the tensors in use there are kept.

Output: tests/fixtures/llamacpp_landing.json.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.gguf_files import llama_spec, write  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "llamacpp_landing.json"
UNSEEN = json.loads((ROOT / "tests" / "fixtures" / "llamacpp_unseen35.json").read_text())["specs"]

# name -> (spec, [(context per sequence, sequences, flash attention)])
LLAMAS = {  # (hidden, heads, kv heads, n_ff), six layers, 24,000 tokens
    "llama-ff2048": (896, 14, 2, 2048),
    "llama-ff3072": (896, 14, 2, 3072),
    "llama-h1024": (1024, 16, 2, 2432),
}
SETTINGS = {
    "llama": [(512, 1, "off"), (256, 4, "off"), (1024, 1, "off"), (2048, 1, "off"), (512, 1, "on"), (4096, 1, "on")],
    "llama-ff2048": [(512, 1, "off"), (512, 4, "off"), (512, 1, "on"), (1024, 1, "off")],
    "llama-ff3072": [(512, 1, "off"), (512, 4, "off"), (1024, 1, "off"), (512, 1, "on")],
    "llama-h1024": [(512, 1, "off"), (512, 4, "off"), (1024, 1, "off"), (512, 1, "on")],
    "lfm2": [(512, 1, "off"), (1024, 1, "on"), (2048, 1, "on"), (512, 2, "on"), (256, 4, "off"), (4096, 1, "off")],
    "granitemoehybrid": [(512, 1, "on"), (1024, 1, "on"), (2048, 1, "on"), (256, 4, "on"), (512, 1, "off"),
                         (5120, 1, "on"), (6144, 1, "on"), (8192, 1, "on"), (4096, 1, "off"), (2048, 4, "off")],
}  # fmt: skip

CHILD = r"""
import ctypes, json, re, sys
import llama_cpp
path, per, par, fa = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lines = []
@llama_cpp.llama_log_callback
def log(level, text, user):
    lines.append(text.decode("utf-8", "replace"))
llama_cpp.llama_log_set(log, ctypes.c_void_p(0))
llama_cpp.llama_backend_init()
mp = llama_cpp.llama_model_default_params()
mp.use_extra_bufts = False
model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
cp = llama_cpp.llama_context_default_params()
cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = per * par, 2048, 512, par
cp.flash_attn_type, cp.kv_unified = fa, False
cp.n_threads = cp.n_threads_batch = 1
ctx = llama_cpp.llama_init_from_model(model, cp)
text = "".join(lines)
size = re.search(r"CPU compute buffer size = +([0-9.]+) MiB", text).group(1)
maxes = [line for line in text.splitlines() if line.startswith("max_size[")]
top = max(maxes, key=lambda line: float(line.split("=")[1].split("MB")[0]))
rows = [[n, int(a, 16), int(b, 16)] for n, a, b in re.findall(r"(\S+) \[\d+: ([0-9a-f]+)-([0-9a-f]+)\]", top)]
print(json.dumps({"compute_mib": size, "peak": rows}))
"""


def spec_of(name: str) -> dict:
    if name in LLAMAS:
        h, heads, kv, ff = LLAMAS[name]
        return llama_spec(name, 6, h, heads, kv, ff, 24000)
    return UNSEEN[name]


def main() -> None:
    doc = {
        "source": "tools/record_llamacpp_landing.py: llama.cpp as vendored by llama-cpp-python 0.3.36 (libllama "
        "0.5.0), CPU build with GGML_ALLOCATOR_DEBUG, n_ubatch 512, n_batch 2048, kv_unified off, use_extra_bufts off",
        "specs": {},
        "cases": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in SETTINGS.items():
            spec = doc["specs"][name] = spec_of(name)
            path = write(spec, Path(tmp) / f"{name}.gguf")
            for per, par, fa in settings:
                run = [sys.executable, "-c", CHILD, str(path), str(per), str(par), str(int(fa == "on"))]
                out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
                got = json.loads(out.splitlines()[-1])
                peak = got["peak"]
                case = {"spec": name, "context": per, "parallel": par, "flash_attn": fa, "compute_bytes": peak[-1][2]}
                doc["cases"].append({**case, "compute_mib": got["compute_mib"], "peak": peak})
                print(name, per, par, fa, peak[-1][2], flush=True)
    text = json.dumps(doc, indent=1) + "\n"
    flat = lambda m: json.dumps(json.loads(m.group(0)))  # noqa: E731
    text = re.sub(r'\[\s*"[^"\[\]]*",\s*\[[^\[\]]*\],\s*"[A-Z0-9_]+"\s*\]', flat, text)
    text = re.sub(r'\[\s*"[^"\[\]]*",\s*\d+,\s*\d+\s*\]', flat, text)
    text = re.sub(r"\[[\s\d,]*\]", flat, text)
    FIXTURE.write_text(text)


if __name__ == "__main__":
    main()
