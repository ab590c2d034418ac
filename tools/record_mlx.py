"""Record what MLX allocates for small random-weight models, as tests/fixtures/mlx_runs.json holds it.

Run with mlx and mlx-lm installed (never a dependency of paramcount; a scratch environment):

    python -m venv /tmp/mlx-measure && /tmp/mlx-measure/bin/pip install "mlx[cpu]==0.32.4" "mlx-lm==0.32.2"
    /tmp/mlx-measure/bin/python tools/record_mlx.py tests/fixtures/mlx_runs.json

Each run builds one model from its config with random weights (mlx_lm.models.<type>.Model, cast to
the run's dtype, quantised by mlx_lm.utils.quantize_model as ``mlx_lm.convert -q`` does), then
drives mlx_lm.generate.generate_step over a random prompt of ``prompt`` tokens to a sequence of
``context`` tokens (max_tokens = context − prompt) with the run's settings, and records:

- ``weights``: Σ nbytes of the model's parameters (mlx.utils.tree_flatten(model.parameters())),
  and ``active_after_load``: mx.get_active_memory() once they are evaluated;
- ``kv_cache``: Σ nbytes of the cache's arrays when the sequence reaches ``context`` (the cache
  list passed as prompt_cache; maybe_quantize_kv_cache swaps its entries in place);
- ``peak``: mx.get_peak_memory() over the generation (reset after load), MLX arrays only.

The config written out is the one the model was built from, with the ``quantization`` block
mlx_lm.utils.quantize_model returns (what an MLX model folder's config.json holds).
"""

from __future__ import annotations

import json
import platform
import sys

import mlx.core as mx
import mlx_lm
from mlx.utils import tree_flatten
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import _get_classes, quantize_model

VOCAB = 1024
CONFIGS = {
    "llama": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "intermediate_size": 736,  # 23 × 32: down_proj quantises at group 32, stays whole at 64
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "rms_norm_eps": 1e-5,
        "vocab_size": VOCAB,
        "rope_theta": 10000.0,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
    },
    "qwen3": {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "intermediate_size": 768,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
    },
    "qwen3_moe": {
        "model_type": "qwen3_moe",
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "intermediate_size": 512,
        "moe_intermediate_size": 128,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
    },
    "gemma3_text": {
        "model_type": "gemma3_text",
        "architectures": ["Gemma3ForCausalLM"],
        "hidden_size": 256,
        "num_hidden_layers": 6,
        "intermediate_size": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "query_pre_attn_scalar": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "sliding_window": 256,
        "sliding_window_pattern": 6,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
    },
}
DTYPES = {"bf16": mx.bfloat16, "fp16": mx.float16, "fp32": mx.float32}

# (name, model, dtype, bits, group, prompt, context, settings): small, and each a case the plan
# must get right — chunked prefill past 2,048, growth by 256, quantised weights at both groups,
# a quantised KV cache, max_kv_size honoured (Qwen3) and ignored (Llama), sliding windows.
RUNS = [
    ("llama-bf16-512", "llama", "bf16", None, 64, 500, 512, {}),
    ("llama-bf16-3000", "llama", "bf16", None, 64, 2990, 3000, {}),
    ("llama-fp32-1000", "llama", "fp32", None, 64, 990, 1000, {}),
    ("llama-4bit-g64-1000", "llama", "bf16", 4, 64, 990, 1000, {}),
    ("llama-4bit-g32-1000", "llama", "bf16", 4, 32, 990, 1000, {}),
    (
        "llama-8bit-g64-600-kv8",
        "llama",
        "bf16",
        8,
        64,
        590,
        600,
        {"kv_bits": 8, "kv_group_size": 32, "quantized_kv_start": 256},
    ),
    ("llama-bf16-2500-maxkv", "llama", "bf16", None, 64, 2490, 2500, {"max_kv_size": 1024}),
    ("llama-bf16-4500-step1024", "llama", "bf16", None, 64, 4490, 4500, {"prefill_step_size": 1024}),
    ("qwen3-bf16-1000", "qwen3", "bf16", None, 64, 990, 1000, {}),
    ("qwen3-bf16-2500-maxkv", "qwen3", "bf16", None, 64, 2490, 2500, {"max_kv_size": 1024}),
    ("qwen3-4bit-g64-1500-kv4", "qwen3", "bf16", 4, 64, 1490, 1500, {"kv_bits": 4, "quantized_kv_start": 1024}),
    ("qwen3-6bit-g64-800", "qwen3", "bf16", 6, 64, 790, 800, {}),
    ("qwen3-3bit-g32-800", "qwen3", "bf16", 3, 32, 790, 800, {}),
    # MLX's CPU gather_mm takes float32 only ("[GatherMM::eval] Currently only supports float32"):
    # unquantised experts run in fp32 here; quantised ones (gather_qmm) in bf16
    ("qwen3_moe-fp32-1000", "qwen3_moe", "fp32", None, 64, 990, 1000, {}),
    ("qwen3_moe-4bit-g64-1000", "qwen3_moe", "bf16", 4, 64, 990, 1000, {}),
    ("qwen3_moe-8bit-g32-2500", "qwen3_moe", "bf16", 8, 32, 2490, 2500, {}),
    ("gemma3-bf16-1000", "gemma3_text", "bf16", None, 64, 990, 1000, {}),
    ("gemma3-bf16-3000", "gemma3_text", "bf16", None, 64, 2990, 3000, {}),
    ("gemma3-4bit-g64-600", "gemma3_text", "bf16", 4, 64, 590, 600, {}),
    ("gemma3-fp16-300", "gemma3_text", "fp16", None, 64, 290, 300, {}),
]


def build(config: dict, dtype: str, bits: int | None, group: int) -> tuple:
    """The model with random weights at ``dtype``, quantised as mlx_lm.convert does; its config."""
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    # as mlx_lm.utils.load_model does: the model's sanitize over the checkpoint's tensors (a tied
    # checkpoint has no lm_head.weight, and Gemma 3's sanitize then drops its lm_head)
    weights = dict(tree_flatten(model.parameters()))
    if config.get("tie_word_embeddings"):
        weights.pop("lm_head.weight", None)
    weights = model.sanitize(weights) if hasattr(model, "sanitize") else weights
    model.load_weights(list(weights.items()))
    model.set_dtype(DTYPES[dtype])
    config = dict(config)
    if bits is not None:
        model, config = quantize_model(model, config, group, bits)
    mx.eval(model.parameters())
    return model, config


def run(model, prompt: int, context: int, settings: dict) -> dict:
    """One generation; the figures the fixture keeps."""
    mx.random.seed(0)
    tokens = mx.random.randint(0, VOCAB, (prompt,))
    cache = make_prompt_cache(model, max_kv_size=settings.get("max_kv_size"))
    mx.clear_cache()
    mx.reset_peak_memory()
    for _ in generate_step(tokens, model, max_tokens=context - prompt, prompt_cache=cache, **settings):
        pass
    peak = mx.get_peak_memory()
    kv = sum(a.nbytes for c in cache for a, _ in _arrays(c.state))
    offsets = [c.offset for c in cache]
    return {"peak": peak, "kv_cache": kv, "offsets": sorted(set(offsets)), "caches": _kinds(cache)}


def _arrays(state) -> list:
    return [(a, None) for _, a in tree_flatten(state) if isinstance(a, mx.array)]


def _kinds(cache) -> dict:
    out: dict = {}
    for c in cache:
        out[type(c).__name__] = out.get(type(c).__name__, 0) + 1
    return out


def main(path: str) -> None:
    """Every run not yet in ``path``, each written as soon as it is done (a rerun resumes)."""
    runs = []
    try:
        with open(path) as f:
            runs = [r for r in json.load(f)["runs"] if r["name"] in {x[0] for x in RUNS}]
    except FileNotFoundError:
        pass
    for name, kind, dtype, bits, group, prompt, context, settings in RUNS:
        if any(r["name"] == name for r in runs):
            continue
        mx.clear_cache()
        base = mx.get_active_memory()
        model, config = build(CONFIGS[kind], dtype, bits, group)
        weights = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
        loaded = mx.get_active_memory() - base
        figures = run(model, prompt, context, settings)
        del model
        row = {"name": name, "config": config, "dtype": dtype, "bits": bits, "group_size": group}
        row |= {"prompt": prompt, "context": context, "settings": settings}
        row |= {"weights": weights, "active_after_load": loaded, **figures}
        print(json.dumps({k: row[k] for k in ("name", "weights", "active_after_load", "kv_cache", "peak")}), flush=True)
        runs.append(row)
        _write(path, runs)


def _write(path: str, runs: list) -> None:
    order = [x[0] for x in RUNS]
    about = {
        "mlx": mx.__version__,
        "mlx_lm": mlx_lm.__version__,
        "device": str(mx.default_device()),
        "machine": platform.machine(),
        "script": "tools/record_mlx.py",
    }
    with open(path, "w") as f:
        json.dump({"about": about, "runs": sorted(runs, key=lambda r: order.index(r["name"]))}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/mlx_runs.json")
