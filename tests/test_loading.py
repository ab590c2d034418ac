"""paramcount.memory.runtimes.transformers.loading: a checkpoint's quantization_config planned the way transformers
loads it on the named GPU (kept quantised, or dequantised to bf16), held to the quantizers'
own rules (transformers/quantizers/quantizer_*.py validate_environment)."""

import inspect
import json

import pytest

import paramcount
from paramcount.frontends.checkpoint import load_path
from paramcount.memory import fit, inference
from paramcount.memory.core.gpus import GPUS

from .ckpt import TINY_LLAMA, linears, plain_parts, save, torch, transformers, write_config, zeros

GPT_OSS = dict(
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
)


@pytest.fixture(scope="module")
def gpt_oss(tmp_path_factory):
    """A tiny gpt-oss checkpoint as OpenAI ships it: experts in MXFP4 blocks and E8M0 scales
    (``*_blocks`` [E, out, in/32, 16] uint8, ``*_scales`` [E, out, in/32]), the rest bf16."""
    folder = tmp_path_factory.mktemp("gpt-oss")
    config = transformers.GptOssConfig(**GPT_OSS)
    module = transformers.GptOssForCausalLM(config).to(torch.bfloat16)
    tensors = {}
    for name, t in module.state_dict().items():
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            experts, n_in, n_out = t.shape
            tensors[name + "_blocks"] = zeros(experts, n_out, n_in // 32, 16, dtype=torch.uint8)
            tensors[name + "_scales"] = zeros(experts, n_out, n_in // 32, dtype=torch.uint8)
        else:
            tensors[name] = t.contiguous()
    save(folder / "model.safetensors", tensors)
    raw = {**config.to_dict(), "quantization_config": {"quant_method": "mxfp4"}}
    (folder / "config.json").write_text(json.dumps(raw))
    return load_path(folder), sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("card", ["h100", "a100-80gb", "l4", "t4"])
def test_mxfp4_stays_quantised_from_capability_7_5(gpt_oss, card):
    model, _ = gpt_oss
    stored = inference(model, context=64).term("weights").bytes
    plan = inference(model, context=64, gpu=card)
    assert plan.term("weights").bytes == stored
    assert any(n.startswith(f"MXFP4 kept on {GPUS[card].name}: compute capability") for n in plan.notes)


@pytest.mark.parametrize("card", ["v100-16gb", "apple-64gb"])
def test_mxfp4_is_dequantised_below_7_5_and_off_cuda(gpt_oss, card):
    """V100 (7.0) and Apple's MPS: the experts in bf16, their scales gone; the rest as stored (bf16)."""
    model, parameters = gpt_oss
    plan = inference(model, context=64, gpu=card)
    assert model.total == parameters
    assert plan.term("weights").bytes == 2 * parameters
    assert "dequantised to bf16" in plan.term("weights").label
    assert any(n.startswith(f"MXFP4 dequantised to bf16 on {GPUS[card].name}") for n in plan.notes)


def test_fit_plans_the_weights_each_card_loads(gpt_oss):
    model, parameters = gpt_oss
    h100 = fit(model, "h100", context=64, only=("stored",)).row("stored").plan
    v100 = fit(model, "v100-32gb", context=64, only=("stored",)).row("stored").plan
    assert v100.term("weights").bytes == 2 * parameters > h100.term("weights").bytes


def test_no_gpu_named_says_both_ways(gpt_oss):
    model, _ = gpt_oss
    notes = inference(model, context=64).notes
    assert any("no GPU named (--gpu)" in n and "compute capability ≥ 7.5" in n for n in notes)


@pytest.fixture(scope="module")
def fp8(tmp_path_factory):
    """A Llama checkpoint with block-scaled FP8 linears (DeepSeek-V3's layout), bf16 elsewhere."""
    folder = tmp_path_factory.mktemp("fp8")
    t = plain_parts(dtype=torch.bfloat16)
    for p, out, inp in linears():
        t[f"{p}.weight"] = zeros(out, inp, dtype=torch.float8_e4m3fn)
        t[f"{p}.weight_scale_inv"] = zeros(-(-out // 128), -(-inp // 128), dtype=torch.float32)
    save(folder / "model.safetensors", t)
    qc = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    write_config(folder, {**TINY_LLAMA, "torch_dtype": "bfloat16", "quantization_config": qc})
    return load_path(folder)


@pytest.mark.parametrize(
    ("card", "kept"), [("h100", True), ("rtx4090", True), ("a100-80gb", False), ("rtx3090", False)]
)
def test_fp8_needs_capability_8_9(fp8, card, kept):
    stored = inference(fp8, context=64).term("weights").bytes
    got = inference(fp8, context=64, gpu=card).term("weights").bytes
    linear = sum(out * inp for _, out, inp in linears())
    assert got == (stored if kept else 2 * fp8.total)
    if not kept:  # one byte and the block scales per linear weight became two bytes
        assert got - stored == linear - 4 * len(list(linears()))


def test_the_thresholds_are_the_quantizers():
    """The capabilities transformers checks, read off the installed quantizers' source."""
    from transformers.quantizers.quantizer_finegrained_fp8 import FineGrainedFP8HfQuantizer
    from transformers.quantizers.quantizer_mxfp4 import Mxfp4HfQuantizer

    assert "compute_capability >= (7, 5)" in inspect.getsource(Mxfp4HfQuantizer.validate_environment)
    assert "(major == 8 and minor < 9)" in inspect.getsource(FineGrainedFP8HfQuantizer.validate_environment)


CAPABILITIES = {"h100": (9, 0), "h200": (9, 0), "a100-40gb": (8, 0), "l4": (8, 9), "rtx4090": (8, 9)}
CAPABILITIES |= {"rtx3090": (8, 6), "v100-16gb": (7, 0), "t4": (7, 5), "mi300x": None, "apple-64gb": None}


@pytest.mark.parametrize(("card", "capability"), CAPABILITIES.items())
def test_gpu_table_has_nvidias_compute_capability(card, capability):
    assert GPUS[card].capability == capability


def test_a_config_alone_says_what_transformers_would_load():
    """DeepSeek-V3's published config has an FP8 quantization_config; planned at --dtype bf16 from
    its shapes, the plan says so and what transformers keeps on the card (with no --dtype the plan
    holds what transformers loads: tests/test_transformers_config_quant.py)."""
    notes = inference(paramcount.load("deepseek-ai/DeepSeek-V3"), "bf16", context=64, gpu="h100").notes
    assert any(n.startswith("FP8 kept on H100 SXM 80GB") and "bf16 from the shapes" in n for n in notes)
    notes = inference(paramcount.load("deepseek-ai/DeepSeek-V3"), context=64, gpu="a100-80gb").notes
    assert any(n.startswith("FP8 dequantised to bf16 on A100 80GB: compute capability 8.0 < 8.9") for n in notes)
