"""Earlier Ollama releases' estimates, held to each release's own code.

tools/ollama_versions/record.py built thirteen releases' ``EstimateGPULayers`` (v0.2.0 to v0.11.8,
``llm/memory.go`` with its GGUF reader and ``GraphSize``, unchanged) and ran them on the models of
test_ollama_logs.py and a small Mixtral-style llama, over free memory, one or two GPUs, num_ctx
and num_gpu: tests/fixtures/ollama_versions.json. paramcount's estimate for the same release must
equal it to the byte: layers, graph, VRAM, total, KV cache, both graph sizes, bytes per GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paramcount.gguf.reader import read_header
from paramcount.memory.runtimes.ollama.ggml import OllamaGGUF, graph_size
from paramcount.memory.runtimes.ollama.layers import Device, estimate, sizes
from paramcount.memory.runtimes.ollama.settings import from_env, resolve
from paramcount.memory.runtimes.ollama.versions import release

from .gguf_files import llama_spec, write
from .test_ollama_logs import MODELS

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "ollama_versions.json").read_text())
SPECS = {**MODELS, "moe": lambda: llama_spec("moe", 4, 256, 8, 2, 512, 1000, experts=4, used=2)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("versions")
    return {name: OllamaGGUF(read_header(write(build(), folder / f"{name.replace(':', '-')}.gguf")))
            for name, build in SPECS.items()}  # fmt: skip


def ours(f: OllamaGGUF, case: dict) -> dict:
    """The estimate as the harness called it: num_ctx as given (num_parallel 1), the case's OLLAMA_*
    variables, every GPU CUDA with 457 MiB of minimum; the 2,048 floor where the release put it
    inside the estimate (v0.7.1 to v0.11.4: every model)."""
    rel = release(case["release"])
    f = f.at(rel)
    asked = from_env(case["env"], context=case["num_ctx"], parallel=1, num_gpu=case["num_gpu"], version=case["release"])
    s = resolve(f, asked, rel.ctx_floor == "all", True, rel)
    graph = graph_size(f, s.context, s.batch, s.parallel, s.kv_type, rel, s.flash)
    devices = [Device("CUDA", free) for free in case["free"]]
    at = sizes(f, graph, 0, devices, rel)
    e = estimate(at, devices, s.overhead, s.num_gpu, rel)
    per_gpu = list(e.per_gpu) if e.layers else [0] * len(devices) if case["ollama"]["per_gpu"] else []
    return {"layers": e.layers, "graph": e.graph, "vram": e.vram, "total": e.total, "kv": sum(at.kv),
            "full": at.full, "partial": at.partial, "per_gpu": per_gpu}  # fmt: skip


@pytest.mark.parametrize("release_", RECORDED["releases"])
def test_each_release_estimates_as_its_own_code(files, release_):
    cases = [c for c in RECORDED["cases"] if c["release"] == release_]
    assert cases
    wrong = []
    for case in cases:
        theirs = {k: v for k, v in case["ollama"].items() if k != "split"}
        if ours(files[case["model"]], case) != theirs:
            wrong.append((case["model"], case["free"], case["num_ctx"], case["num_gpu"]))
    assert not wrong, wrong
