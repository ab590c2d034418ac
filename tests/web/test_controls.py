"""The page's RAM, vLLM (--vllm-version, --device cpu, --kv-cache-space) and MLX (--group-size,
--kv-bits) controls and its speed (/api/speed): each figure the API answers is the one the CLI
prints for the same settings (`memory ... --json`, `speed ... --json`), and each bad value is one
plain line naming its field."""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory.fit import fit
from paramcount.memory.speed import speed

LLAMA = {"kind": "catalog", "name": "meta-llama/Meta-Llama-3-8B"}
NAME = "meta-llama/Meta-Llama-3-8B"


@pytest.fixture(scope="module")
def llama():
    return paramcount.load(NAME)


def cli(capsys, argv: list[str]) -> tuple[int, dict]:
    """The command's exit status and its JSON."""
    capsys.readouterr()
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def post(client, path: str, **fields):
    return client.post(path, json={"source": LLAMA, **fields})


def terms(items) -> list[tuple[str, int]]:
    return [(t["key"], t["bytes"]) for t in items]


def one_line(r, status: int, field: str, said: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["field"] == field and said in body["error"], body
    assert "\n" not in body["error"] and "Traceback" not in body["error"] and "Input should" not in body["error"]


# ---- RAM ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ram", ["2GB", "64GB"])
def test_ram_holds_the_host_part_as_memory_ram_does(client, capsys, llama, ram):
    """llama.cpp with 16 layers on the GPU keeps the rest in RAM: 2 GB does not hold it, 64 GB does;
    the API's verdict and its ``ram`` are `memory --ram`'s, and so is each precision's fit."""
    got = post(client, "/api/memory", runtime="llama.cpp", scheme="q4_k_m", n_gpu_layers=16, gpu="rtx4090", ram=ram)
    assert got.status_code == 200, got.text
    body = got.json()
    argv = ["memory", NAME, "--runtime", "llama.cpp", "--dtype", "q4_k_m", "-ngl", "16", "--gpu", "rtx4090"]
    rc, out = cli(capsys, [*argv, "--ram", ram])
    assert body["ram"] == out["ram"] and body["total"] == out["total"]["bytes"]
    assert body["fits"] is (rc == 0) is out["ram"]["fits"] is (ram == "64GB")
    row = next(r for r in body["precisions"] if r["scheme"] == "q4_k_m")
    lib = fit(llama, "rtx4090", 4096, 1, only=("q4_k_m",), runtime="llama.cpp", gpu_layers=16, ram=out["ram"]["bytes"])
    assert row["fits"] is lib.rows[0].fits is body["fits"]


@pytest.mark.parametrize("path", ["/api/memory", "/api/recommend"])
@pytest.mark.parametrize(
    ("ram", "said"),
    [
        ("lots", "ram: expected a size like 24GB or 20GiB, got 'lots'"),
        ("0GB", "ram: a size must be positive, got '0GB'"),
        ("", "ram: empty"),
    ],
)
def test_a_bad_ram_is_one_plain_line(client, path, ram, said):
    r = post(client, path, ram=ram)
    one_line(r, 422, "ram", said)
    assert r.json()["error"] == said


# ---- vLLM: its version, and its CPU platform ------------------------------------------------------


@pytest.mark.parametrize("version", ["0.6", "0.10", "0.32", "latest"])
def test_vllm_version_plans_as_the_cli(client, capsys, version):
    got = post(client, "/api/memory", runtime="vllm", vllm_version=version, gpu="h100").json()
    _, out = cli(capsys, ["memory", NAME, "--runtime", "vllm", "--vllm-version", version, "--gpu", "h100"])
    assert got["total"] == out["total"]["bytes"] and terms(got["terms"]) == terms(out["terms"])
    assert got["serving"] == out["gpu"]["serving"]


def test_vllm_versions_differ_where_their_accounting_does(client):
    """0.6 (V0) counts cuBLAS and NCCL in its claim; the latest does not: not one plan under two names."""
    old, new = (
        post(client, "/api/memory", runtime="vllm", vllm_version=v, gpu="h100").json() for v in ("0.6", "latest")
    )
    assert old["serving"]["kv_tokens"] != new["serving"]["kv_tokens"]


@pytest.mark.parametrize(
    ("given", "flags"), [({"ram": "64GB"}, ["--ram", "64GB"]), ({"kv_cache_space": 8}, ["--kv-cache-space", "8"])]
)
def test_vllm_on_cpus_is_planned_in_ram_as_the_cli(client, capsys, given, flags):
    got = post(client, "/api/memory", runtime="vllm", device="cpu", **given).json()
    _, out = cli(capsys, ["memory", NAME, "--runtime", "vllm", "--device", "cpu", *flags])
    assert got["total"] == out["total"]["bytes"] and terms(got["terms"]) == terms(out["terms"])
    assert got["serving"] == out["serving"] and got["settings"]["device"] == "cpu"
    assert got["precisions"] == []  # a fit is on a GPU
    if "ram" in given:
        assert got["ram"] == out["ram"] and got["fits"] is out["ram"]["fits"] is True
    else:
        assert got["ram"] is None and got["fits"] is None  # no RAM: no verdict, never a GPU's


@pytest.mark.parametrize(
    ("fields", "status", "field", "said"),
    [
        ({"runtime": "vllm", "kv_cache_space": 4}, 400, "kv_cache_space", "add --device cpu"),
        (
            {"runtime": "vllm", "device": "cpu", "kv_cache_space": 0},
            422,
            "kv_cache_space",
            "kv_cache_space: at least 1",
        ),
        ({"runtime": "vllm", "device": "tpu"}, 422, "device", "device: one of gpu or cpu"),
        ({"runtime": "vllm", "vllm_version": "0.7"}, 422, "vllm_version", "0.20, 0.32 or latest"),
        ({"runtime": "llama.cpp", "vllm_version": "0.6"}, 400, "vllm_version", "is a vllm setting"),
        ({"mode": "training", "vllm_version": "0.6"}, 400, "vllm_version", "only for inference"),
        ({"runtime": "mlx", "group_size": 48}, 422, "group_size", "group_size: one of 32, 64 or 128"),
        ({"runtime": "mlx", "kv_bits": 7}, 422, "kv_bits", "kv_bits: one of 2, 3, 4, 5, 6 or 8"),
        ({"runtime": "mlx", "scheme": "bf16", "group_size": 32}, 400, "group_size", "for mlx-Nbit schemes"),
        ({"runtime": "mlx", "batch": 2}, 400, "batch", "runs one sequence"),
        ({"runtime": "transformers", "kv_bits": 4}, 400, "kv_bits", "--kv-bits is a mlx setting"),
    ],
)
def test_a_bad_runtime_control_is_one_plain_line(client, fields, status, field, said):
    one_line(post(client, "/api/memory", **fields), status, field, said)


# ---- MLX ----------------------------------------------------------------------------------------


def test_mlx_group_size_and_kv_bits_plan_as_the_cli(client, capsys):
    fields = {"runtime": "mlx", "scheme": "mlx-4bit", "group_size": 32, "kv_bits": 4, "gpu": "m2-max-64gb"}
    got = post(client, "/api/memory", **fields, context=8192).json()
    flags = ["--runtime", "mlx", "--dtype", "mlx-4bit", "--group-size", "32", "--kv-bits", "4", "--context", "8192"]
    _, out = cli(capsys, ["memory", NAME, *flags, "--gpu", "m2-max-64gb"])
    assert got["total"] == out["total"]["bytes"] and terms(got["terms"]) == terms(out["terms"])
    default = post(client, "/api/memory", **{**fields, "group_size": None}, context=8192).json()
    assert default["total"] < got["total"]  # group 32 holds twice the scales and biases of 64


# ---- speed --------------------------------------------------------------------------------------


def test_speed_is_paramcount_speeds_and_its_curve_the_librarys(client, capsys, llama):
    got = post(client, "/api/speed", runtime="llama.cpp", scheme="q4_k_m", gpu="rtx4090", context=4096)
    assert got.status_code == 200, got.text
    body = got.json()
    flags = ["--runtime", "llama.cpp", "--dtype", "q4_k_m", "--context", "4096"]
    _, out = cli(capsys, ["speed", NAME, "--gpu", "RTX 4090", *flags])
    assert body["speed"] == out
    est = body["speed"]["decode"]["estimate"]
    assert est["label"] == "estimate" and est["expected_error"]["median"] > 0  # fitted: its expected error
    assert body["speed"]["decode"]["upper_bound"]["label"] == "upper bound"
    curve = body["curve"]
    assert 4096 in curve["contexts"] and curve["contexts"][-1] == 8192  # up to the model's limit
    for i, depth in enumerate(curve["contexts"]):
        s = speed(llama, ["RTX 4090"], "llama.cpp", "q4_k_m", depth, 512, 1)
        assert curve["estimate"][i] == round(s.decode.tokens_per_s, 2)
        assert curve["bound"][i] == round(s.decode.bound_tokens_per_s, 2)
    assert curve["estimate"] == sorted(curve["estimate"], reverse=True)  # slower as the cache fills


def test_vllm_speed_over_tensor_parallel_is_the_cli_over_two_cards(client, capsys):
    body = post(client, "/api/speed", runtime="vllm", gpu="h100", tp=2, vllm_version="0.10", context=2048).json()
    _, out = cli(capsys, ["speed", NAME, "--gpu", "H100 SXM,H100 SXM", "--runtime", "vllm", "--context", "2048"])
    assert body["speed"]["decode"] == out["decode"] and body["speed"]["ttft_s"] == out["ttft_s"]
    assert body["speed"]["settings"]["tp"] == 2


def test_the_prompt_is_speeds_prompt_for_prefill_and_ttft(client, capsys):
    """The page's prompt field is `speed --prompt`: prefill and TTFT at 2,048 tokens are the CLI's,
    decode (the KV depth's) is the 512-token prompt's, and the longer prompt takes longer."""
    fields = {"runtime": "llama.cpp", "scheme": "q4_k_m", "gpu": "rtx4090", "context": 4096}
    body = post(client, "/api/speed", **fields, prompt=2048).json()
    flags = ["--runtime", "llama.cpp", "--dtype", "q4_k_m", "--context", "4096", "--prompt", "2048"]
    _, out = cli(capsys, ["speed", NAME, "--gpu", "RTX 4090", *flags])
    assert body["speed"] == out and out["settings"]["prompt"] == 2048
    short = post(client, "/api/speed", **fields).json()["speed"]
    assert short["settings"]["prompt"] == 512 and short["decode"] == body["speed"]["decode"]
    assert body["speed"]["ttft_s"] > short["ttft_s"] and body["speed"]["prefill"]["terms"]["prompt_tokens"] == 2048


def test_vllm_on_cpus_is_refused_in_the_clis_words(client, capsys):
    """`speed --runtime vllm` on a CPU refuses (no run of vLLM's CPU platform was measured); the
    page's vLLM with --device cpu says the same line, under its own field."""
    assert main(["speed", NAME, "--gpu", "EPYC 9654", "--runtime", "vllm"]) == 2
    said = capsys.readouterr().err.strip().removeprefix("paramcount: error: --runtime: ")
    r = post(client, "/api/speed", runtime="vllm", gpu="h100", device="cpu")
    one_line(r, 400, "device", said)
    assert r.json()["error"] == f"device: {said}"


def test_mlx_speed_reads_the_group_sizes_scales(client, capsys, llama):
    base = {"runtime": "mlx", "scheme": "mlx-4bit", "gpu": "m2-max-64gb", "context": 4096}
    default = post(client, "/api/speed", **base).json()
    _, out = cli(capsys, ["speed", NAME, "--gpu", "Apple M2 Max 64GB", "--runtime", "mlx", "--dtype", "mlx-4bit"])
    assert default["speed"] == out
    grouped = post(client, "/api/speed", **base, group_size=32).json()
    lib = speed(llama, ["Apple M2 Max 64GB"], "mlx", "mlx-4bit", 4096, 512, 1, group_size=32)
    assert grouped["speed"] == lib.to_dict()
    assert grouped["speed"]["decode_tokens_per_s"] < default["speed"]["decode_tokens_per_s"]
    # MLX's own factors (fitted on mlx-lm runs): an estimate with its expected error
    assert grouped["speed"]["decode"]["estimate"]["expected_error"]["runtime"] == "mlx"


def test_transformers_speed_is_a_bound_labelled_as_one(client):
    body = post(client, "/api/speed", runtime="transformers", gpu="rtx4090").json()
    decode = body["speed"]["decode"]
    assert decode["estimate"] is None and decode["upper_bound"]["label"] == "upper bound" and decode["note"]
    assert set(body["curve"]["estimate"]) == {None} and all(b > 0 for b in body["curve"]["bound"])


def test_transformers_speed_on_a_fitted_family_is_an_estimate_beside_its_bound(client):
    body = post(client, "/api/speed", runtime="transformers", gpu="a100-sxm-80gb", scheme="fp16").json()
    decode = body["speed"]["decode"]
    assert decode["estimate"]["label"] == "estimate" and decode["estimate"]["expected_error"]["rows"] >= 6
    assert decode["upper_bound"]["tokens_per_s"] > decode["estimate"]["tokens_per_s"] > 0


def test_a_partial_offload_is_timed_with_the_host_cpu(client, capsys):
    fields = {"runtime": "llama.cpp", "scheme": "q4_k_m", "gpu": "rtx4090", "n_gpu_layers": 16, "context": 4096}
    body = post(client, "/api/speed", **fields, cpu="AMD EPYC 9124").json()
    flags = ["--runtime", "llama.cpp", "--dtype", "q4_k_m", "-ngl", "16", "--cpu", "AMD EPYC 9124"]
    _, out = cli(capsys, ["speed", NAME, "--gpu", "RTX 4090", *flags])
    assert body["speed"] == out
    one_line(post(client, "/api/speed", **fields), 400, "cpu", "name the host's CPU")


@pytest.mark.parametrize(
    ("fields", "status", "field", "said"),
    [
        ({"gpu": "24GB"}, 400, "gpu", "a size, not a card of the catalog"),
        ({"gpu": "abacus"}, 400, "gpu", "abacus"),
        ({"runtime": "mlx", "gpu": "rtx4090"}, 400, "runtime", "MLX runs on Apple silicon"),
        ({"runtime": "vllm", "scheme": "q4_k_m"}, 400, "scheme", "is a GGUF type"),
        ({"runtime": "vllm", "device": "cpu"}, 400, "device", "vLLM's speed is modelled on GPUs only"),
        ({"prompt": 0}, 422, "prompt", "prompt: at least 1"),
        ({"prompt": "many"}, 422, "prompt", "prompt: not a whole number"),
        ({"prompt": 1.5}, 422, "prompt", "prompt: not a whole number"),
        ({"prompt": None}, 422, "prompt", "prompt: not a whole number"),  # the page's empty field
        ({"prompt": 1 << 25}, 422, "prompt", "prompt: at most 16,777,216"),  # speed's MAX_TOKENS
        ({"concurrency": "many"}, 422, "concurrency", "concurrency: not a whole number"),
        ({"context": 0}, 422, "context", "context: at least 1"),
        ({"kv_dtype": "fp8"}, 422, "kv_dtype", "not a field this request takes"),
    ],
)
def test_a_bad_speed_request_is_one_plain_line(client, fields, status, field, said):
    one_line(post(client, "/api/speed", **fields), status, field, said)
