import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# text_config of Qwen/Qwen3.5-397B-A17B (its shape fields)
QWEN3_5_397B = {
    "model_type": "qwen3_5_moe_text",
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_size": 4096,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 64,
    "linear_value_head_dim": 128,
    "moe_intermediate_size": 1024,
    "num_attention_heads": 32,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "num_hidden_layers": 60,
    "num_key_value_heads": 2,
    "shared_expert_intermediate_size": 1024,
    "tie_word_embeddings": False,
    "vocab_size": 248320,
}
# Qwen/Qwen3.5-122B-A10B and Qwen/Qwen3.5-35B-A3B
QWEN3_5_122B = {
    **QWEN3_5_397B,
    "hidden_size": 3072,
    "num_hidden_layers": 48,
    "num_experts": 256,
    "num_experts_per_tok": 8,
}
QWEN3_5_35B = {
    **QWEN3_5_122B,
    "hidden_size": 2048,
    "num_hidden_layers": 40,
    "num_attention_heads": 16,
    "linear_num_value_heads": 32,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
}

TINY = {
    "vocab_size": 64,
    "hidden_size": 64,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 12,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24,
}
SMALL = {"model_type": "qwen3_5_moe_text", **TINY}
CAUSAL = {**SMALL, "architectures": ["Qwen3_5MoeForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "qwen3_5_moe_text"},
    "qwen3.5-397b-a17b": QWEN3_5_397B,
    "qwen3.5-122b-a10b": QWEN3_5_122B,
    "qwen3.5-35b-a3b": QWEN3_5_35B,
    "tied-interval-3-biased": {
        **CAUSAL,
        "tie_word_embeddings": True,
        "full_attention_interval": 3,
        "attention_bias": True,
    },
    "explicit-layer-types": {**CAUSAL, "layer_types": ["linear_attention", "full_attention"] * 2 + ["full_attention"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen3_5_moe_text_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen3_5_moe_text_class():
    expect_all_classes(SMALL)


@pytest.mark.parametrize(
    ("raw", "total", "active"),
    [
        (QWEN3_5_397B, 396_346_350_336, 17_349_040_896),  # 397B-A17B with its vision tower
        (QWEN3_5_122B, 122_111_526_912, 9_771_288_576),
        (QWEN3_5_35B, 34_660_610_688, 3_454_988_928),
    ],
)
def test_qwen3_5_moe_total_and_active(raw, total, active):
    """Text towers only; per token: k routed experts, the shared expert and everything else."""
    model = from_config(raw, "test")
    assert (model.total, model.active_total) == (total, active)
    e, k, i_e = raw["num_experts"], raw["num_experts_per_tok"], raw["moe_intermediate_size"]
    assert total - active == raw["num_hidden_layers"] * (e - k) * 3 * raw["hidden_size"] * i_e


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_qwen3_5_moe_text_cache_equals_transformers(dtype):
    expect_cache("qwen3_5_moe_text", TINY, "Qwen3_5MoeForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"num_experts": 0}, "num_experts"),
        ({"num_experts_per_tok": 300}, "num_experts_per_tok"),
        ({"linear_num_value_heads": 20}, "linear_num_value_heads"),
    ],
)
def test_impossible_qwen3_5_moe_text_configs_are_refused(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "qwen3_5_moe_text", **fields}, "test")


def test_qwen3_5_moe_mtp_layer_is_noted_with_its_size():
    model = from_config(QWEN3_5_397B, "test")
    full = next(g for g in model.layers() if g.first == 3).each  # a full-attention MoE layer
    assert f"mtp.*, {full + 2 * 4096 * 4096 + 3 * 4096:,} parameters" in " ".join(model.notes)
