"""An FP8 checkpoint's quantization_config followed as vLLM follows it (FBGEMMFp8Config's
modules_to_not_convert, Fp8Config's ignored_layers: is_layer_skipped keeps those linear layers
16-bit), worked out by hand on a tiny Llama config."""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount.memory.runtimes import planner

LAYER0 = [f"model.layers.0.{m}" for m in ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
ATTENTION = [f"model.layers.{i}.self_attn.{p}_proj" for i in (0, 1) for p in "qkvo"]
TINY = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def model(tmp_path, method: str, key: str):
    q = {"quant_method": method, key: [*ATTENTION, *LAYER0, "lm_head"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": q}))
    return paramcount.load(str(path))


@pytest.mark.parametrize(("method", "key"), [("fbgemm_fp8", "modules_to_not_convert"), ("fp8", "ignored_layers")])
def test_listed_layers_stay_16_bit(tmp_path, method, key):
    """bf16 everywhere (180,864 B) but layer 1's three MLP projections in fp8 (3 × 8,192 B saved)."""
    p = planner(model(tmp_path, method, key), None, "vllm")
    layer = (64 * 64 + 32 * 64 + 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64) * 2  # attention, MLP, norms
    bf16 = 2 * 128 * 64 * 2 + 2 * layer + 64 * 2  # embeddings and head, two layers, the final norm
    assert p.scheme == "fp8" and bf16 == 180_864
    assert p.stages[0].share.bytes == bf16 - 3 * 128 * 64
    said = p.plan(64).term("weights").assumption
    kept = "lm_head, self_attn.q_proj, self_attn.k_proj, self_attn.v_proj, self_attn.o_proj, 3 layers' own"
    assert f"quantization_config keeps {kept} in 16-bit" in said


def test_listed_layers_split_over_tp(tmp_path):
    """TP 2: embeddings, head, attention and MLPs halve (one KV head a rank); norms whole."""
    p = planner(model(tmp_path, "fbgemm_fp8", "modules_to_not_convert"), None, "vllm", tp=2)
    attention_bf16 = 2 * (64 * 64 + 32 * 64 + 32 * 64 + 64 * 64) * 2 // 2
    mlp = (3 * 128 * 64 * 2 + 3 * 128 * 64 * 1) // 2  # layer 0 bf16, layer 1 fp8
    head = 2 * 128 * 64 * 2 // 2
    assert p.stages[0].share.bytes == attention_bf16 + mlp + head + 2 * 2 * 64 * 2 + 64 * 2


def test_no_list_quantises_every_linear_layer(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": {"quant_method": "fbgemm_fp8"}}))
    p = planner(paramcount.load(str(path)), None, "vllm")
    linear = 2 * (64 * 64 * 2 + 32 * 64 * 2 + 3 * 128 * 64)  # parameters: one byte each saved in fp8
    assert p.stages[0].share.bytes == 180_864 - linear


def test_llama_405b_fp8_per_rank_as_logged(tmp_path):
    """Meta's Llama-3.1-405B-Instruct-FP8 on 8 H100s (vllm-project/vllm#6746: 57.752 GiB a rank): its
    attention, first and last MLPs and head stay bf16 (56.72 GiB planned; every linear layer in fp8
    would be 47.74, −17%)."""
    from pathlib import Path

    logs = json.loads((Path(__file__).parent / "fixtures" / "vllm_logs_versions.json").read_text())["logs"]
    row = next(r for r in logs if r["source"].endswith("/issues/6746"))
    config = dict(paramcount.load("meta-llama/Llama-3.1-405B").config)
    names = [f"model.layers.{i}.self_attn.{p}_proj" for i in range(126) for p in "qkvo"]
    names += [f"model.layers.{i}.mlp.{p}_proj" for i in (0, 125) for p in ("gate", "up", "down")] + ["lm_head"]
    config["quantization_config"] = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": names}
    (tmp_path / "config.json").write_text(json.dumps(config))
    p = planner(paramcount.load(str(tmp_path / "config.json")), None, "vllm", tp=row["flags"]["tp"], gpu="h100")
    assert p.stages[0].share.bytes == pytest.approx(row["logged"]["weights_gib"] * 2**30, rel=0.02)


def test_bnb_4bit_served_with_fp32_absmax():
    """vLLM serves bitsandbytes 4-bit (BitsAndBytesLinearMethod) and dequantises a double-quantised
    checkpoint's absmax to fp32 at load (bitsandbytes_loader.py _dequantize_dq): a projection holds
    its 4-bit values, one fp32 absmax per 64 and the 16-value fp32 code; embeddings, norms and the
    head stay bf16."""
    m = paramcount.load("meta-llama/Llama-3.1-8B")
    p = planner(m, "nf4", "vllm", gpu="h100")
    h, kv, inter, v, layers = 4096, 1024, 14336, 128256, 32

    def q4(n):
        return n // 2 + n // 64 * 4 + 64

    linear = q4(h * h) * 2 + q4(kv * h) * 2 + q4(inter * h) * 3
    assert p.stages[0].share.bytes == 2 * v * h * 2 + layers * (linear + 2 * h * 2) + h * 2


def test_bnb_8bit_still_refused():
    with pytest.raises(paramcount.ParamcountError, match="bnb-int8 is not a format vLLM serves from a config"):
        planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bnb-int8", "vllm")


@pytest.mark.parametrize("kind", ["nf4", "fp4"])
def test_bnb_4bit_config_plans_4bit(tmp_path, kind):
    """A bitsandbytes load_in_4bit checkpoint's config is planned in its 4-bit type, as vLLM loads it."""
    q = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": kind}
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "quantization_config": q}))
    p = planner(paramcount.load(str(tmp_path / "config.json")), None, "vllm")
    assert p.scheme == kind and p.stages[0].share.bytes < 180_864 // 2
