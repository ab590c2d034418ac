"""The planner's runtime choice over the API: transformers, llama.cpp and vLLM plan as the library
plans them, a GGUF file defaults to llama.cpp, vLLM says what it would log on the GPU, and a bad
runtime or an option of another runtime is a one-line error."""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount.memory.core.gpus import gpu
from paramcount.memory.fit import LLAMA_INFERENCE, MLX_INFERENCE, VLLM_INFERENCE, fit
from paramcount.memory.runtimes import inference, planner
from paramcount.web.planner import PAGE_RUNTIMES as RUNTIMES  # the page's: MLX is not on it yet

from .conftest import gguf_header, upload_body

LLAMA = "meta-llama/Meta-Llama-3-8B"
CATALOG = {"kind": "catalog", "name": LLAMA}

# (request fields, the library's options for the same settings)
SETTINGS = {
    "transformers": ({"scheme": "int8", "kv_dtype": "fp8"}, {"kv_dtype": "fp8"}),
    "llama.cpp": (
        {"scheme": "q4_k_m", "kv_dtype": "q8_0", "flash_attn": "on"},
        {"kv_dtype": "q8_0", "flash_attn": "on"},
    ),
    "vllm": (
        {"scheme": "fp8", "tp": 2, "gpu_memory_utilization": 0.85},
        {"tp": 2, "utilization": 0.85, "gpu": "h100"},
    ),
    "mlx": (  # mlx-lm's --group-size and --kv-bits, as `memory --runtime mlx` takes them
        {"scheme": "mlx-4bit", "group_size": 32, "kv_bits": 4},
        {"group_size": 32, "kv_bits": 4},
    ),
}


def memory(client, source=CATALOG, **fields):
    return client.post("/api/memory", json={"source": source, **fields})


def terms(plan_terms):
    """(key, bytes, parts) of each term, as the library's Term or the API's JSON."""
    return [
        (t["key"], t["bytes"], terms(t["parts"])) if isinstance(t, dict) else (t.key, t.bytes, terms(t.parts))
        for t in plan_terms
    ]


@pytest.fixture(scope="module")
def llama():
    return paramcount.load(LLAMA)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_runtimes_plan_is_the_librarys(client, llama, runtime):
    fields, options = SETTINGS[runtime]
    batch = 1 if runtime == "mlx" else 3  # mlx_lm.generate runs one sequence
    r = memory(client, runtime=runtime, context=8192, batch=batch, gpu="h100", **fields)
    assert r.status_code == 200, r.text
    got = r.json()
    lib = inference(llama, fields["scheme"], 8192, batch=batch, runtime=runtime, **options)
    assert got["runtime"] == runtime and got["total"] == lib.total
    assert terms(got["terms"]) == terms(lib.terms)
    assert got["fits"] == (lib.total <= gpu("h100").usable)
    series = {s["key"]: s["bytes"] for s in got["curve"]["series"]}
    for i, context in enumerate(got["curve"]["contexts"]):  # every point of the curve, the same runtime
        at = inference(llama, fields["scheme"], context, batch=batch, runtime=runtime, **options)
        assert {k: v[i] for k, v in series.items()} == {t.key: t.bytes for t in at.terms if not t.host}, context


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_precision_is_fitted_under_the_same_runtime(client, llama, runtime):
    fields, options = SETTINGS[runtime]
    got = memory(client, runtime=runtime, context=8192, gpu="h100", **fields).json()
    expected = {"llama.cpp": LLAMA_INFERENCE, "vllm": VLLM_INFERENCE, "mlx": MLX_INFERENCE}.get(runtime)
    schemes = [r["scheme"] for r in got["precisions"]]
    if expected:
        assert schemes == list(expected) + ([] if fields["scheme"] in expected else [fields["scheme"]])
    served = {k: v for k, v in options.items() if k != "gpu"}  # fit's GPU is its own argument
    for row in got["precisions"]:
        # MLX's --group-size is the mlx-Nbit rows' (a float row takes none: mlx-lm refuses it)
        grouped = {k: v for k, v in served.items() if k != "group_size" or row["scheme"].startswith("mlx-")}
        lib = fit(llama, "h100", 8192, 1, only=(row["scheme"],), runtime=runtime, **grouped).rows[0]
        assert (row["total"], row["fits"], row["max_context"]) == (lib.plan.total, lib.fits, lib.max_context)
        assert row["max_sequences"] == (lib.serving["max_sequences"] if runtime == "vllm" else None)


def test_llama_cpp_host_memory_is_marked_and_left_out_of_the_gpu(client, llama):
    """llama.cpp keeps the input layer in host memory: the term says so, the total and the curve
    (drawn against the GPU) leave it out."""
    got = memory(client, runtime="llama.cpp", scheme="q4_k_m", gpu="h100").json()
    lib = inference(llama, "q4_k_m", 4096, runtime="llama.cpp")
    host = [t for t in got["terms"] if t.get("host")]  # present, and true, on host terms only
    # the input layer's weights and, on one GPU, the scheduler's CUDA_Host compute buffer
    assert [t["key"] for t in host] == ["host_weights", "host_compute"]
    assert got["host"] == lib.host == sum(t["bytes"] for t in host) and host[0]["bytes"] > 0
    assert got["total"] == lib.total == sum(t["bytes"] for t in got["terms"] if not t.get("host"))
    assert "host_weights" not in {s["key"] for s in got["curve"]["series"]}
    assert memory(client).json()["host"] == 0  # transformers: everything on the GPU


def test_vllm_says_what_it_would_log_on_the_gpu(client, llama):
    got = memory(client, runtime="vllm", tp=2, context=16384, batch=4, gpu="h100").json()
    vllm = planner(llama, "bf16", "vllm", tp=2, gpu="h100")
    assert got["serving"] == vllm.serving(gpu("h100").memory, 16384)
    assert got["serving"]["starts"] and got["serving"]["max_sequences"] > 4
    outside = next(t for t in got["terms"] if t["key"] == "outside")
    assert outside["bytes"] == sum(p["bytes"] for p in outside["parts"])  # CUDA context, cuBLAS, NCCL, left free
    small = memory(client, runtime="vllm", gpu="16GB").json()  # 0.92 of it is less than the 16 GB of weights
    one = planner(llama, "bf16", "vllm", gpu="16GB")
    assert small["serving"] == one.serving(gpu("16GB").memory, 4096) and small["serving"]["starts"] is False
    assert small["precisions"][0]["scheme"] == "bf16" and not small["precisions"][0]["fits"]  # at TP 1, not the fewest
    assert memory(client).json()["serving"] is None  # transformers logs no KV blocks


def test_a_gguf_file_defaults_to_llama_cpp(client, tmp_path):
    from ..test_gguf import LLAMA as TENSORS
    from ..test_gguf import META, write

    path = write(tmp_path / "tiny.gguf", TENSORS, meta=META)
    up = client.post("/api/upload", json=upload_body("gguf", path, gguf_header(path)))
    source = {"kind": "upload", "id": up.json()["id"]}
    model = paramcount.load(path)
    got = memory(client, source, scheme="stored", context=1024, batch=2).json()
    lib = inference(model, "stored", 1024, batch=2)  # the library's default for a GGUF: llama.cpp
    assert got["runtime"] == "llama.cpp" == lib.settings["runtime"]
    assert got["total"] == lib.total and terms(got["terms"]) == terms(lib.terms)
    assert [r["scheme"] for r in got["precisions"]] == [*LLAMA_INFERENCE, "stored"]
    other = memory(client, source, scheme="stored", context=1024, batch=2, runtime="transformers").json()
    assert other["runtime"] == "transformers"
    assert other["total"] == inference(model, "stored", 1024, batch=2, runtime="transformers").total != lib.total


@pytest.mark.parametrize(
    ("fields", "status", "field", "said"),
    [
        ({"runtime": "tensorrt"}, 422, "runtime", "runtime: one of transformers, llama.cpp, vllm, ollama or mlx"),
        ({"runtime": "vllm", "tp": 0}, 422, "tp", "tp: at least 1"),
        ({"runtime": "vllm", "tp": 3}, 400, "tp", "attention heads to divide evenly"),
        ({"runtime": "vllm", "gpu_memory_utilization": 1.5}, 422, "gpu_memory_utilization", ": at most 1"),
        ({"runtime": "vllm", "gpu_memory_utilization": 1e-320}, 400, "gpu_memory_utilization", "share in [0.01"),
        ({"runtime": "transformers", "tp": 2}, 400, "tp", "--tp is a vllm setting; this plan's runtime is"),
        ({"tp": 2}, 400, "tp", "this plan's runtime is transformers"),  # the default runtime refuses it too
        ({"runtime": "vllm", "flash_attn": "off"}, 400, "flash_attn", "--flash-attn is a llama.cpp setting"),
        ({"runtime": "llama.cpp", "gpu_memory_utilization": 0.5}, 400, "gpu_memory_utilization", "a vllm setting"),
        ({"runtime": "vllm", "scheme": "q4_k_m"}, 400, "scheme", "q4_k_m is a GGUF type: llama.cpp and Ollama load it"),
        ({"scheme": "q4_k_m"}, 400, "scheme", "not transformers"),
        ({"runtime": "vllm", "kv_dtype": "int4"}, 400, "kv_dtype", "--kv-cache-dtype is one of"),
        ({"runtime": "llama.cpp", "kv_dtype": "q4_0", "flash_attn": "off"}, 400, "kv_dtype", "needs flash attention"),
        ({"mode": "training", "runtime": "vllm"}, 400, "runtime", "only for inference"),
        ({"mode": "training", "num_gpu": 3}, 400, "num_gpu", "only for inference"),
        ({"runtime": "ollama"}, 400, "runtime", "Ollama runs GGUF files"),  # a catalog model: no file to run
        ({"num_gpu": 3}, 400, "num_gpu", "an Ollama setting: choose the runtime ollama"),
        ({"runtime": "llama.cpp", "free_vram": "4GB"}, 400, "free_vram", "an Ollama setting"),
        ({"runtime": "ollama", "num_gpu": -2}, 422, "num_gpu", "num_gpu: at least -1"),
    ],
)
def test_bad_runtime_settings_are_one_line_errors(client, fields, status, field, said):
    r = memory(client, **fields)
    body = r.json()
    assert (r.status_code, body["field"]) == (status, field), body
    assert said in body["error"] and "\n" not in body["error"] and not body["bug"], body


def test_vllm_refuses_a_model_without_a_kv_cache_in_one_line(client):
    r = memory(client, {"kind": "catalog", "name": "bert-base-chinese"}, runtime="vllm")
    assert r.status_code == 400 and r.json()["field"] == "runtime" and "encoder" in r.json()["error"]


def test_a_precision_a_runtime_refuses_is_said_in_its_row_and_as_the_plan_in_one_line(client):
    narrow = {"model_type": "llama", "hidden_size": 96, "intermediate_size": 200, "num_attention_heads": 4}
    source = {"kind": "config", "config": {**narrow, "num_hidden_layers": 2, "vocab_size": 100}}
    rows = memory(client, source, runtime="vllm").json()["precisions"]
    assert [(r["scheme"], r["available"]) for r in rows] == [("bf16", True), ("fp8", True), ("awq-int4", False)]
    assert "multiple of group 128" in rows[2]["why"]
    r = memory(client, source, runtime="vllm", scheme="awq-int4")
    assert r.status_code == 400 and "multiple of group 128" in r.json()["error"] and not r.json()["bug"]


def test_the_options_offer_what_each_runtime_takes(client, llama):
    o = client.get("/api/memory/options").json()
    assert [r["value"] for r in o["runtimes"]] == [*RUNTIMES, "ollama"]
    assert o["tp_sizes"] == [1, 2, 4, 8] and o["default_utilization"] == 0.92
    assert o["flash_attn"] == ["auto", "on", "off"]
    low, high = o["context_bounds"]  # the page's number input: any context the API takes, none it refuses
    assert memory(client, context=low).status_code == 200 and memory(client, context=high + 1).status_code == 422
    assert memory(client, context=low - 1).status_code == 422
    scheme = {"transformers": "bf16", "llama.cpp": "q8_0", "vllm": "bf16"}
    assert o["runtime_kv_dtypes"].pop("ollama") == ["f16", "q8_0", "q4_0"]  # a GGUF file's: test_ollama_* below
    assert o["runtime_kv_dtypes"].pop("mlx") == []  # MLX's cache is the activation dtype, or --kv-bits
    for bits in o["mlx_kv_bits"]:  # every --kv-bits and --group-size the page offers, mlx-lm's planner takes
        assert memory(client, runtime="mlx", scheme="bf16", kv_bits=bits).status_code == 200, bits
    for group in o["mlx_group_sizes"]:
        assert memory(client, runtime="mlx", scheme="mlx-4bit", group_size=group).status_code == 200, group
    assert o["vllm_versions"][0] == "latest" and {"0.6", "0.8", "0.10", "0.20"} <= set(o["vllm_versions"])
    for version in o["vllm_versions"]:
        assert memory(client, runtime="vllm", vllm_version=version).status_code == 200, version
    for runtime, kinds in o["runtime_kv_dtypes"].items():
        assert kinds, runtime
        for kv in kinds:  # every cache type the page offers, the runtime's planner takes
            r = memory(client, runtime=runtime, scheme=scheme[runtime], kv_dtype=kv)
            assert r.status_code == 200, (runtime, kv, r.text)
    for tp in o["tp_sizes"]:
        assert memory(client, runtime="vllm", tp=tp).status_code == 200, tp


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("attention.head_count", float("nan"), "expected a whole number from 0 to 67,108,864, got nan"),
        ("expert_count", [4, 4], "got an array of 2: [4, 4]"),
        ("attention.head_count_kv", "\x1b[2J", r"got '\x1b[2J'"),
    ],
)
def test_a_gguf_file_with_a_bad_key_is_a_one_line_error_not_a_bug(client, tmp_path, key, value, said):
    """The planners' checked view of GGUF metadata (gguf/meta.py) on the web: 400 with the
    file, the key and the value, never 422 with bug: true."""
    from paramcount.gguf.reader import read_header

    from ..gguf_files import llama_spec, write_raw

    spec = llama_spec("bad", 2, 256, 4, 2, 256, 512, experts=4, used=2)
    path = write_raw(spec, tmp_path / "bad.gguf", {**spec["meta"], key: value})
    header = path.read_bytes()[: read_header(path).data_offset]
    up = client.post("/api/upload", json=upload_body("gguf", path, header))
    assert up.status_code == 200, up.text  # the count needs no metadata
    r = memory(client, {"kind": "upload", "id": up.json()["id"]}, gpu="h100")
    assert r.status_code == 400 and r.json()["bug"] is False, r.text
    error = r.json()["error"]
    assert error.startswith(f"bad.gguf: llama.{key}: expected ") and error.endswith(said) and "\x1b" not in error


# ---- Ollama's own plan (issue 24): what `paramcount memory --runtime ollama --json` prints -------


@pytest.fixture
def tiny_gguf(client, tmp_path, monkeypatch):
    """A 4-block Llama GGUF uploaded as the page uploads it (its header), its path, and no OLLAMA_*
    variable in the server's environment (the API reads them as the CLI does)."""
    import os

    from ..gguf_files import llama_spec, write

    for key in [k for k in os.environ if k.startswith("OLLAMA_")]:
        monkeypatch.delenv(key)
    path = write(llama_spec("tiny", 4, 256, 8, 2, 512, 1000, context=8192), tmp_path / "tiny.gguf")
    up = client.post("/api/upload", json=upload_body("gguf", path, gguf_header(path)))
    return {"kind": "upload", "id": up.json()["id"]}, path


@pytest.mark.parametrize(
    ("fields", "asked", "free"),
    [
        ({}, {}, None),
        ({"free_vram": "540MiB", "context": 2048, "batch": 2}, {"context": 2048, "parallel": 2}, 540 << 20),
        ({"num_gpu": 2, "flash_attn": "on", "kv_dtype": "q8_0"}, {"num_gpu": 2, "flash": True, "kv_type": "q8_0"}, 0),
    ],
)
def test_ollama_plans_an_uploaded_gguf_as_the_cli_does(client, tiny_gguf, fields, asked, free):
    from paramcount.memory.runtimes.ollama import Asked
    from paramcount.memory.runtimes.ollama_vs_llamacpp import plan as ollama_plan
    from paramcount.render.ollama import dumps

    source, path = tiny_gguf
    r = memory(client, source, runtime="ollama", scheme="stored", gpu="rtx3060", **fields)
    assert r.status_code == 200, r.text
    got = r.json()
    lib = ollama_plan(paramcount.load(path), gpu("rtx3060"), Asked(**asked), free=free or None)
    cli = json.loads(dumps(lib, gpu("rtx3060")))  # what --json prints for the file on disk
    assert got["runtime"] == "ollama" and got["total"] == lib.plan.total
    assert terms(got["terms"]) == terms(lib.plan.terms)
    assert {k: v for k, v in got["ollama"].items() if k not in ("free", "all_layers")} == cli["ollama"]
    assert got["ollama_now"] == cli["ollama_now"] and got["settings"] == cli["settings"]
    assert (got["ollama"]["free"], got["ollama"]["all_layers"]) == (cli["gpu"]["free"], cli["gpu"]["all_layers"])
    assert got["fits"] == cli["gpu"]["all_layers"] and got["precisions"] == [] and got["curve"]["contexts"] == []


def test_ollama_on_too_little_memory_offloads_part_of_the_layers(client, tiny_gguf):
    source, _ = tiny_gguf
    got = memory(client, source, runtime="ollama", scheme="stored", gpu="rtx3060", free_vram="540MiB").json()
    o = got["ollama"]
    assert 0 < o["num_gpu"] < o["layers_model"] == 5 and not got["fits"] and o["free"] == 540 << 20


def test_ollama_as_an_earlier_release_estimated(client, tiny_gguf):
    source, _ = tiny_gguf
    got = memory(client, source, runtime="ollama", scheme="stored", gpu="rtx3060", ollama_version="0.5.1").json()
    assert got["ollama"]["version"] == got["settings"]["version"] == "v0.5.1"
    assert got["settings"]["num_ctx"] == 2048 and got["settings"]["num_parallel"] == 4  # tried at 4, it fits


@pytest.mark.parametrize(
    ("fields", "field", "said"),
    [
        ({"scheme": "q4_0"}, "scheme", "Ollama runs the GGUF file as stored"),
        ({"tp": 2}, "tp", "not an Ollama setting (it takes context"),
        ({"gpu_memory_utilization": 0.5}, "gpu_memory_utilization", "not an Ollama setting"),
        ({"free_vram": "lots"}, "free_vram", "expected a size like 24GB or 20GiB, got 'lots'"),
        ({"free_vram": "-1GB"}, "free_vram", "expected a size like 24GB"),
        ({"ollama_version": "0.1.48"}, "ollama_version", "unknown Ollama release '0.1.48'"),
        ({"ollama_version": "0.13.0"}, "ollama_version", "does not estimate layers"),
    ],
)
def test_bad_ollama_settings_are_one_line_errors(client, tiny_gguf, fields, field, said):
    r = memory(client, tiny_gguf[0], **{"runtime": "ollama", "scheme": "stored", **fields})
    body = r.json()
    assert (r.status_code, body["field"]) == (400, field), body
    assert said in body["error"] and "\n" not in body["error"] and not body["bug"], body


# ---- llama.cpp's placement (issue 24): -ngl, -ot, --n-cpu-moe, -ts, -sm, -mg over the API ---------

OLMOE = {"kind": "catalog", "name": "allenai/OLMoE-1B-7B-0924"}


@pytest.mark.parametrize(
    ("fields", "flags"),
    [
        ({"n_gpu_layers": 10, "tensor_split": "3,1"}, {"gpu_layers": "10", "tensor_split": "3,1"}),
        ({"n_gpu_layers": "all", "n_cpu_moe": 4}, {"gpu_layers": "all", "overrides": [("ncmoe", "4")]}),
        (
            {"override_tensor": ["blk\\.1\\.=CPU,ffn_up=CPU"], "n_cpu_moe": 2},
            {"overrides": [("ot", "blk\\.1\\.=CPU,ffn_up=CPU"), ("ncmoe", "2")]},  # -ot first, then --n-cpu-moe
        ),
        (
            {"tensor_split": "1,1", "split_mode": "none", "main_gpu": 1},
            {"tensor_split": "1,1", "split_mode": "none", "main_gpu": 1},
        ),
    ],
)
def test_placement_goes_to_the_planner_options_the_cli_builds(client, fields, flags):
    from paramcount.cli import placement_options

    r = memory(client, OLMOE, runtime="llama.cpp", scheme="q4_k_m", context=8192, gpu="rtx3060", **fields)
    assert r.status_code == 200, r.text
    got = r.json()
    options = placement_options(dict(flags))  # what `paramcount memory -ngl ... -ot ... -ts ...` plans with
    lib = inference(paramcount.load("allenai/OLMoE-1B-7B-0924"), "q4_k_m", 8192, runtime="llama.cpp", **options)
    assert got["total"] == lib.total and got["host"] == lib.host and terms(got["terms"]) == terms(lib.terms)
    assert (
        got["settings"]["devices"] == lib.settings["devices"]
        and got["settings"]["arguments"] == lib.settings["arguments"]
    )
    row = next(p for p in got["precisions"] if p["scheme"] == "q4_k_m")  # the fit rows keep the placement
    assert row["total"] == lib.total


@pytest.mark.parametrize(
    ("fields", "status", "field", "said"),
    [
        ({"n_gpu_layers": "most"}, 400, "n_gpu_layers", "expected a number of layers, auto or all, not 'most'"),
        ({"n_gpu_layers": 10**30}, 400, "n_gpu_layers", "expected at most"),
        ({"n_gpu_layers": True}, 422, "n_gpu_layers", "not a whole number"),  # not 1: a JSON true is no count
        ({"tensor_split": "3,x"}, 400, "tensor_split", "expected numbers like 3,1, not '3,x'"),
        ({"tensor_split": ",".join("1" * 16)}, 400, "tensor_split", "llama.cpp takes fewer than 16"),
        ({"override_tensor": ["exps"]}, 400, "override_tensor", "expected PATTERN=BUFFER_TYPE, not 'exps'"),
        ({"override_tensor": ["(a)\\1=CPU"]}, 400, "override_tensor", "backreference \\1 needs a backtracking matcher"),
        ({"override_tensor": ["a{4294967296}=CPU"]}, 400, "override_tensor", "expands to 4,294,967,296 states"),
        ({"override_tensor": ["(?s:.)*" * 14 + "=CPU"]}, 400, "override_tensor", "Python syntax"),
        ({"override_tensor": ["(?!exps)=CPU"]}, 400, "override_tensor", "lookahead (?! needs a backtracking"),
        ({"tensor_split": "1e308,1e308"}, 400, "tensor_split", "a C float, std::stof"),
        ({"tensor_split": "3e38,3e38"}, 400, "tensor_split", "add up past a C float"),
        ({"override_tensor": ["[=CPU"]}, 400, "override_tensor", "bad tensor pattern '['"),
        ({"override_tensor": ["x=CUDA3"]}, 400, "override_tensor", "unknown buffer type 'CUDA3'"),
        ({"n_cpu_moe": -1}, 422, "n_cpu_moe", "n_cpu_moe: at least 0"),
        ({"split_mode": "none", "main_gpu": 16}, 422, "main_gpu", "main_gpu: at most 15"),  # ggml-cuda's 16 devices
        ({"split_mode": "diagonal"}, 422, "split_mode", "split_mode: one of none, layer or row"),
        ({"runtime": "transformers", "n_gpu_layers": 3}, 400, "n_gpu_layers", "a llama.cpp setting"),
        ({"runtime": "vllm", "tensor_split": "1,1"}, 400, "tensor_split", "a llama.cpp setting"),
        ({"runtime": "ollama", "n_gpu_layers": 3}, 400, "runtime", "Ollama runs GGUF files"),
        ({"mode": "training", "runtime": None, "n_cpu_moe": 1}, 400, "n_cpu_moe", "only for inference"),
    ],
)
def test_bad_placement_is_a_one_line_error(client, fields, status, field, said):
    r = memory(client, OLMOE, **{"runtime": "llama.cpp", "scheme": "q4_k_m", **fields})
    body = r.json()
    assert (r.status_code, body["field"]) == (status, field), body
    assert said in body["error"] and "\n" not in body["error"] and not body["bug"], body


# Patterns that froze the server under Python's re (issue 32 item 1): valid ECMAScript, so planned
FREEZING = (".*" * 12 + "Z", "(.|.)*Z", "(\\w|\\w)*Z", "((a+))+$", "(.*)*" * 14 + "Z")


def test_patterns_that_froze_the_server_are_planned(client):
    r = memory(client, OLMOE, runtime="llama.cpp", scheme="q4_k_m", override_tensor=[f"{p}=CPU" for p in FREEZING])
    assert r.status_code == 200, r.json()
    plain = memory(client, OLMOE, runtime="llama.cpp", scheme="q4_k_m", override_tensor=["QQ=CPU"]).json()
    assert r.json()["total"] == plain["total"]  # none of them matches a tensor name, as QQ does not


@pytest.mark.parametrize(
    ("targets", "status", "said"),
    [
        ("(.|.)*Z(q_proj)\\2", 400, "backreference \\2 needs a backtracking matcher"),
        ("(?P<x>q_proj)", 400, "Python syntax"),
        ("(.|.)*(q|k)_proj", 200, None),  # froze Python's re on a long enough name; linear here
    ],
)
def test_lora_targets_go_through_the_linear_matcher(client, targets, status, said):
    r = memory(client, {"kind": "catalog", "name": "Qwen/Qwen2.5-0.5B"}, mode="lora", lora_targets=targets)
    body = r.json()
    assert r.status_code == status, body
    if said:
        assert body["field"] == "lora_targets" and said in body["error"] and not body["bug"], body


def test_ollama_refuses_llama_cpps_placement_in_one_line(client, tiny_gguf):
    r = memory(client, tiny_gguf[0], runtime="ollama", scheme="stored", n_gpu_layers=2)
    assert r.status_code == 400 and r.json()["field"] == "n_gpu_layers" and "not an Ollama setting" in r.json()["error"]
