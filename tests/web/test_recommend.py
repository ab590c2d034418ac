"""/api/recommend is `paramcount fit MODEL --gpu GPU --json`'s recommendations; the planner's
options offer each runtime only what it loads; the API's 422s are plain words, never pydantic's;
a model in Ollama's store is planned at its modelfile's num_ctx, as the CLI plans it."""

from __future__ import annotations

import json
import os

import pytest

import paramcount
from paramcount.advise import recommend
from paramcount.cli import main
from paramcount.memory.weights.base import scheme
from paramcount.render.advice import to_json

from .test_api import ollama_store

LLAMA = {"kind": "catalog", "name": "meta-llama/Meta-Llama-3-8B"}


def fit_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    main(["fit", *argv, "--json"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("name", "gpu", "extra"),
    [("meta-llama/Meta-Llama-3-8B", "rtx3060", {}), ("Qwen/Qwen3-30B-A3B", "rtx4090", {"ram": "64GB"})],
)
def test_the_api_recommends_what_fit_json_recommends(client, capsys, name, gpu, extra):
    got = client.post("/api/recommend", json={"source": {"kind": "catalog", "name": name}, "gpu": gpu, **extra})
    assert got.status_code == 200, got.text
    body = got.json()
    ram = ["--ram", extra["ram"]] if extra else []
    assert body["recommendations"] == fit_json(capsys, [name, "--gpu", gpu, *ram])["recommendations"]
    lib = recommend(paramcount.load(name), gpu, ram=64 << 30 if extra else None)
    assert body["recommendations"] == to_json(lib) and body["gpu"]["key"] == gpu
    assert all(r["command"] is None or "\n" not in r["command"] for r in body["recommendations"])


def test_the_api_recommends_at_the_context_asked(client, capsys):
    got = client.post("/api/recommend", json={"source": LLAMA, "gpu": "rtx4090", "context": 8000}).json()
    cli = fit_json(capsys, ["meta-llama/Meta-Llama-3-8B", "--gpu", "rtx4090", "--context", "8000"])
    assert got["recommendations"] == cli["recommendations"] and got["context"] == 8000


@pytest.mark.parametrize(
    ("extra", "status", "said"),
    [
        ({"gpu": "x" * 101}, 422, "gpu: at most 100 characters"),
        ({"gpu": "abacus"}, 400, "abacus"),
        ({"context": 0}, 422, "context: at least 1"),
        ({"context": 1 << 31}, 422, "context: at most 1,073,741,824"),
        ({"context": "long"}, 422, "context: not a whole number"),
        ({"ram": "lots"}, 422, "ram: expected a size like 24GB"),  # read as --ram reads it, in the schema
        ({"ram": "0GB"}, 422, "ram: a size must be positive"),
        ({"ram": "x" * 41}, 422, "ram: at most 40 characters"),
        ({"runtimes": ["mlc"]}, 422, "runtimes.0: one of llama.cpp, vllm, transformers or ollama"),
        ({"runtimes": ["vllm"] * 5}, 422, "runtimes: at most 4 items"),
        ({"speed": True}, 422, "speed: not a field this request takes"),
    ],
)
def test_a_bad_recommend_request_is_one_line_naming_its_field(client, extra, status, said):
    got = client.post("/api/recommend", json={"source": LLAMA, "gpu": "rtx3060", **extra})
    assert got.status_code == status, got.text
    body = got.json()
    assert said in body["error"], body
    assert status == 400 or body["field"] == said.split(":")[0], body
    assert "Input should" not in body["error"] and "pydantic" not in body["error"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"batch": "abc"}, "batch: not a whole number"),
        ({"batch": None}, "batch: not a whole number"),
        ({"tp": 2.5}, "tp: not a whole number"),
        ({"runtime": "foo"}, "runtime: one of transformers, llama.cpp, vllm, ollama or mlx"),
        ({"mode": "fast"}, "mode: one of inference, training or lora"),
        ({"gpu": ""}, "gpu: empty"),
        ({"gpu_memory_utilization": 2}, "gpu_memory_utilization: at most 1"),
        ({"flash_attn": "yes"}, "flash_attn: one of auto, on or off"),
    ],
)
def test_a_hand_edited_value_is_said_in_plain_words(client, extra, said):
    """What a hand-edited address sends: one line naming the field, never pydantic's text."""
    got = client.post("/api/memory", json={"source": LLAMA, **extra})
    assert got.status_code == 422 and got.json()["error"] == said, got.text
    assert got.json()["field"] == said.split(":")[0]


def test_each_runtime_is_offered_only_what_it_loads(client):
    o = client.get("/api/memory/options").json()
    offered, default = o["runtime_schemes"], o["runtime_default_scheme"]
    gguf = {s for s in offered["llama.cpp"] if scheme(s).method == "gguf"}
    assert {"q4_k_m", "q8_0", "q6_k"} <= gguf
    for runtime in ("transformers", "vllm"):  # GGUF types are llama.cpp's and Ollama's alone
        assert not [s for s in offered[runtime] if scheme(s).method == "gguf"], runtime
    assert {"fp32", "bf16", "bnb-int8", "nf4", "fp4"} <= set(offered["transformers"])
    assert {"bf16", "fp16", "fp8", "gptq-int4", "awq-int4"} <= set(offered["vllm"])
    assert offered["ollama"] == ["stored"]
    assert all(default[r] in offered[r] for r in offered)
    for runtime, schemes in offered.items():  # each planned by the API under its runtime
        if runtime == "ollama":
            continue
        for s in [x for x in schemes if x != "stored"][:8]:
            body = {"source": LLAMA, "runtime": runtime, "scheme": s, "gpu": "h100"}
            assert client.post("/api/memory", json=body).status_code == 200, (runtime, s)
    assert all(g["unit"] in ("GB", "GiB") for g in o["gpus"])


def test_an_ollama_model_is_planned_at_its_modelfile_num_ctx(client, home, capsys, monkeypatch):
    """The modelfile says 8,192: the page's llama.cpp plan and recommendation take it, as the CLI does."""
    for key in [k for k in os.environ if k.startswith("OLLAMA_") and k != "OLLAMA_MODELS"]:
        monkeypatch.delenv(key)
    ollama_store(home, params={"num_ctx": 8192})
    source = {"kind": "store", "name": "ollama:tiny:1b"}
    plan = client.post("/api/memory", json={"source": source, "runtime": "llama.cpp", "scheme": "stored"}).json()
    assert plan["settings"]["context"] == 8192, plan
    capsys.readouterr()
    main(["memory", "ollama:tiny:1b", "--json"])
    assert json.loads(capsys.readouterr().out)["total"]["bytes"] == plan["total"]
    asked = client.post("/api/memory", json={"source": source, "scheme": "stored", "context": 2048}).json()
    assert asked["settings"]["context"] == 2048  # a context asked wins
    got = client.post("/api/recommend", json={"source": source, "gpu": "rtx3060"}).json()
    assert got["context"] == 8192
    assert got["recommendations"] == fit_json(capsys, ["ollama:tiny:1b", "--gpu", "rtx3060"])["recommendations"]
