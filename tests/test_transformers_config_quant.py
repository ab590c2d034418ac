"""A config's quantization_config, no --dtype: the transformers plan holds the weights transformers
5.23 would load (runtimes.transformers.config_quant), exact where the layout is pinned, flagged
``estimate`` where it is not, refused for methods not planned. Every figure worked by hand here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.memory import inference

ROOT = Path(__file__).resolve().parent.parent
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
# the tiny Llama's linear layers per decoder layer as (in, out): q, k, v, o, gate, up, down
LINEARS = [(64, 64), (64, 32), (64, 32), (64, 64), (64, 128), (64, 128), (128, 64)]
OUTSIDE = 2 * 128 * 64 + 2 * 2 * 64 + 64  # embeddings, lm_head, two norms a layer, the final norm


def tiny(tmp_path, qc, **more):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **more, "quantization_config": qc}))
    return paramcount.load(str(path))


def weights(model, gpu=None):
    plan = inference(model, context=64, gpu=gpu)
    return plan.term("weights"), plan


def ceil(a, b):
    return -(-a // b)


# DeepSeek-V3 (catalog config: quant_method fp8, weight_block_size [128, 128], fp32 scales)
H, V, LAYERS, DENSE = 7168, 129280, 61, 3
ATTN = [(H, 1536), (1536, 24576), (H, 576), (512, 32768), (16384, H)]  # q_a, q_b, kv_a, kv_b, o as (in, out)
ATTN_NORMS = 1536 + 512 + 2 * H  # q_a and kv_a layernorms, input and post-attention norms
DENSE_MLP = [(H, 18432), (H, 18432), (18432, H)]
SHARED = [(H, 2048), (H, 2048), (2048, H)]
E, MOE_I = 256, 2048


def _blocks(inp, out, floor=1):
    return max(ceil(out, 128), floor) * ceil(inp, 128)


def deepseek_v3() -> tuple[int, int]:
    """(bf16 bytes, FP8 bytes) of DeepSeek-V3 as transformers holds it: every parameter in bf16;
    or linear layers and fused experts fp8 (1 B) with an fp32 scale per 128×128 block, and the
    embeddings, lm_head (get_keys_to_not_convert), norms and routers bf16."""
    linear = [*ATTN] * LAYERS + DENSE_MLP * DENSE + SHARED * (LAYERS - DENSE)
    lin_params = sum(i * o for i, o in linear)
    experts = (LAYERS - DENSE) * E * (H * 2 * MOE_I + MOE_I * H)
    scales = sum(_blocks(i, o) for i, o in linear) + (LAYERS - DENSE) * E * (
        _blocks(H, 2 * MOE_I, 2) + _blocks(MOE_I, H)
    )
    rest = 2 * V * H + LAYERS * ATTN_NORMS + H + (LAYERS - DENSE) * E * H  # + the routers
    bf16 = 2 * (lin_params + experts + rest)
    return bf16, lin_params + experts + 4 * scales + 2 * rest


def test_deepseek_v3_fp8_kept_on_h100_dequantised_on_a100():
    model = paramcount.load("deepseek-ai/DeepSeek-V3")
    bf16, fp8 = deepseek_v3()
    assert (bf16, fp8) == (1_342_052_808_704, 673_150_552_416)
    term, plan = weights(model, "h100-sxm")
    assert (term.bytes, term.estimate, plan.settings["scheme"]) == (fp8, False, "fp8")
    assert plan.settings["quantization_config"] == "fp8 (kept)"
    term, plan = weights(model, "a100-80gb")
    assert (term.bytes, term.estimate, plan.settings["scheme"]) == (bf16, False, "bf16")
    assert plan.settings["quantization_config"] == "fp8 (dequantised to bf16)"
    assert any(n.startswith("FP8 dequantised to bf16 on A100 80GB: compute capability 8.0 < 8.9") for n in plan.notes)


def test_no_gpu_named_plans_fp8_flagged():
    """Without --gpu the plan assumes the card keeps FP8, and says so in the JSON's estimate flag."""
    term, plan = weights(paramcount.load("deepseek-ai/DeepSeek-V3"))
    assert (term.bytes, term.estimate) == (deepseek_v3()[1], True)
    assert plan.settings["quantization_config"] == "fp8 (assumed kept)"
    assert any("no GPU named (--gpu)" in n for n in plan.notes)


def test_an_explicit_dtype_still_plans_that_scheme():
    term, _ = weights_with(paramcount.load("deepseek-ai/DeepSeek-V3"), "bf16")
    assert (term.bytes, term.estimate) == (deepseek_v3()[0], False)


def weights_with(model, dtype):
    plan = inference(model, dtype, context=64, gpu="h100-sxm")
    return plan.term("weights"), plan


def test_fp8_per_tensor_static_and_listed_modules(tmp_path):
    """Mistral's form: weight_block_size null (one fp32 weight_scale_inv), activation_scheme static
    (one fp32 activation_scale), modules_to_not_convert naming lm_head and every layer's MLP."""
    qc = {
        "quant_method": "fp8",
        "activation_scheme": "static",
        "weight_block_size": None,
        "modules_to_not_convert": ["lm_head", "model.layers.*.mlp"],
    }
    term, _ = weights(tiny(tmp_path, qc), "h100-sxm")
    attention = sum(i * o + 4 + 4 for i, o in LINEARS[:4])
    mlp = sum(i * o for i, o in LINEARS[4:]) * 2
    assert term.bytes == 2 * (attention + mlp) + OUTSIDE * 2 == 156_352


def test_fp8_skips_in_some_layers_only_are_refused(tmp_path):
    with pytest.raises(ParamcountError, match="some of those layers only") as e:
        weights(tiny(tmp_path, {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp"]}), "h100")
    assert e.value.field == "quantization_config.modules_to_not_convert"


def gptq_layer(inp, out, group):
    """qweight int32 [in·4/32, out], qzeros int32 [groups, out·4/32], scales fp16 [groups, out], g_idx int32 [in]."""
    groups = ceil(inp, group)
    return inp * 4 // 32 * out * 4 + groups * (out * 4 // 32) * 4 + groups * out * 2 + inp * 4


def awq_layer(inp, out, group):
    """qweight int32 [in, out/8], qzeros int32 [in/g, out/8], scales fp16 [in/g, out]."""
    return inp * (out // 8) * 4 + inp // group * (out // 8) * 4 + inp // group * out * 2


@pytest.mark.parametrize(("method", "layer"), [("gptq", gptq_layer), ("awq", awq_layer)])
def test_gptq_and_awq_at_the_configs_group_flagged(tmp_path, method, layer):
    """The checkpoint's layout at group 32, the rest fp16; flagged: gptqmodel's kernel may repack."""
    qc = {"quant_method": method, "bits": 4, "group_size": 32, "desc_act": False, "sym": True}
    term, plan = weights(tiny(tmp_path, qc), "rtx4090")
    expected = 2 * sum(layer(i, o, 32) for i, o in LINEARS) + OUTSIDE * 2
    assert (term.bytes, term.estimate, plan.settings["scheme"]) == (expected, True, f"{method}-int4")
    assert expected == (46_720 if method == "gptq" else 42_624) + OUTSIDE * 2
    assert any("gptqmodel picks the kernel" in n for n in plan.notes)


def test_gptq_bits_not_planned_refused(tmp_path):
    with pytest.raises(ParamcountError, match="GPTQ at 3 bits is not planned for transformers"):
        weights(tiny(tmp_path, {"quant_method": "gptq", "bits": 3}), "rtx4090")


def test_bitsandbytes_nf4_double_quant(tmp_path):
    """Linear4bit per layer: n/2 B packed, one uint8 absmax per 64 values, a 16-value fp32 map, and
    (double quant) an fp32 absmax per 256 blocks, a 256-value fp32 map, an fp32 offset; lm_head bf16."""
    qc = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True}
    term, plan = weights(tiny(tmp_path, qc), "rtx4090")
    per = [i * o // 2 + ceil(i * o, 64) + 16 * 4 + ceil(ceil(i * o, 64), 256) * 4 + 256 * 4 + 4 for i, o in LINEARS]
    assert (term.bytes, term.estimate) == (2 * sum(per) + OUTSIDE * 2, False)
    assert plan.settings["scheme"] == "nf4" and "double quant" in term.label


def test_bitsandbytes_8bit_with_skip_modules(tmp_path):
    """LLM.int8: int8 weights and an fp32 SCB per output; llm_int8_skip_modules keeps the MLPs bf16
    (and, replacing the default skips, leaves lm_head to be quantised)."""
    qc = {"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_skip_modules": ["mlp"]}
    term, _ = weights(tiny(tmp_path, qc), "rtx4090")
    attention = sum(i * o + 4 * o for i, o in LINEARS[:4])
    mlp = sum(i * o for i, o in LINEARS[4:]) * 2
    head = 64 * 128 + 4 * 128
    rest = (128 * 64 + 2 * 2 * 64 + 64) * 2
    assert term.bytes == 2 * (attention + mlp) + head + rest


GPT_OSS = dict(
    model_type="gpt_oss",
    architectures=["GptOssForCausalLM"],
    hidden_size=64,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_local_experts=4,
    num_experts_per_tok=2,
    vocab_size=128,
    layer_types=["sliding_attention", "full_attention"],
    max_position_embeddings=256,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)


def gpt_oss(tmp_path):
    path = tmp_path / "config.json"
    qc = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}
    path.write_text(json.dumps({**GPT_OSS, "quantization_config": qc}))
    return paramcount.load(str(path))


def test_gpt_oss_mxfp4_kept_from_7_5_flagged_dequantised_below(tmp_path):
    """Kept: each expert projection n/2 B of blocks and n/32 B of E8M0 scales (gate_up 4×64×128,
    down 4×64×64), the rest bf16: attention with biases and sinks, router with bias, expert biases,
    norms, embeddings and lm_head. Flagged: the Triton swizzle's padding is not modelled."""
    experts = 4 * 64 * 128 + 4 * 64 * 64
    attention = 64 * 64 + 64 + 2 * (64 * 32 + 32) + 64 * 64 + 64 + 4
    per_layer = attention + 4 * 64 + 4 + 4 * 128 + 4 * 64 + 2 * 64
    rest = 2 * (2 * per_layer + 2 * 128 * 64 + 64)
    term, plan = weights(gpt_oss(tmp_path), "h100-sxm")
    assert (term.bytes, term.estimate) == (2 * (experts // 2 + experts // 32) + rest, True)
    assert plan.settings["quantization_config"] == "mxfp4 (kept)"
    term, plan = weights(gpt_oss(tmp_path), "v100-sxm2-32gb")
    assert (term.bytes, term.estimate) == (2 * 2 * experts + rest, False)


@pytest.mark.parametrize("method", ["compressed-tensors", "hqq", "fbgemm_fp8"])
def test_other_methods_refused_in_one_line(tmp_path, method):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": {"quant_method": method}}))
    cmd = [sys.executable, "-m", "paramcount", "memory", str(path), "--runtime", "transformers", "--gpu", "h100"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "quantization_config.quant_method" in lines[0] and method in lines[0]
    # an explicit --dtype plans the shapes at that scheme
    assert (
        subprocess.run(
            [*cmd, "--dtype", "bf16"], capture_output=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src")}
        ).returncode
        == 0
    )


MIXTRAL = {**TINY, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 4}


def test_fp8_fp4_experts(tmp_path):
    """expert_dtype fp4 (DeepSeek-V4's form): FP8Experts holds int8 of two e2m1 values a byte and an fp32
    scale per row and 32 inputs; attention FP8Linear at one 128×128 block each; router, norms,
    embeddings and lm_head bf16."""
    qc = {"quant_method": "fp8", "weight_block_size": [128, 128], "expert_dtype": "fp4"}
    term, _ = weights(tiny(tmp_path, qc, **MIXTRAL), "h100-sxm")
    attention = sum(i * o + 4 for i, o in LINEARS[:4])  # one block scale each: every dim ≤ 128
    gate_up = 4 * 256 * 64 // 2 + 4 * 256 * (64 // 32) * 4  # [E, 2I, H]
    down = 4 * 64 * 128 // 2 + 4 * 64 * (128 // 32) * 4  # [E, H, I]
    rest = (2 * 128 * 64 + 2 * (4 * 64 + 2 * 64) + 64) * 2
    assert term.bytes == 2 * (attention + gate_up + down) + rest == 181_920


def test_fp8_dequantize_true_is_bf16(tmp_path):
    term, plan = weights(tiny(tmp_path, {"quant_method": "fp8", "dequantize": True}), "h100-sxm")
    assert (term.bytes, term.estimate) == ((2 * sum(i * o for i, o in LINEARS) + OUTSIDE) * 2, False)
    assert plan.settings["quantization_config"] == "fp8 (dequantised to bf16)"


def test_fp8_embeddings_refused(tmp_path):
    with pytest.raises(ParamcountError) as e:
        weights(tiny(tmp_path, {"quant_method": "fp8", "modules_to_convert": ["model.embed_tokens"]}), "h100")
    assert e.value.field == "quantization_config.modules_to_convert"


def test_a_quantization_config_not_an_object_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": "fp8"}))
    with pytest.raises(ParamcountError) as e:
        weights(paramcount.load(str(path)), "h100")
    assert e.value.field == "quantization_config"


def test_awq_modules_to_not_convert_stay_fp16(tmp_path):
    """AWQ's modules_to_not_convert (should_convert_module: "mlp.down_proj" matches as a suffix) keep
    both layers' down projections fp16."""
    qc = {"quant_method": "awq", "bits": 4, "group_size": 32, "modules_to_not_convert": ["mlp.down_proj"]}
    term, _ = weights(tiny(tmp_path, qc), "rtx4090")
    expected = 2 * (sum(awq_layer(i, o, 32) for i, o in LINEARS[:6]) + 128 * 64 * 2) + OUTSIDE * 2
    assert (term.bytes, term.estimate) == (expected, True)
