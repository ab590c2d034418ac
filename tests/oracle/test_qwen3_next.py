import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# Qwen/Qwen3-Next-80B-A3B-Instruct (the Thinking and Base checkpoints share these shape fields)
QWEN3_NEXT_80B = {
    "model_type": "qwen3_next",
    "architectures": ["Qwen3NextForCausalLM"],
    "decoder_sparse_step": 1,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "mlp_only_layers": [],
    "moe_intermediate_size": 512,
    "num_attention_heads": 16,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "partial_rotary_factor": 0.25,
    "shared_expert_intermediate_size": 512,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
}

TINY = {
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 12,
    "linear_conv_kernel_dim": 3,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24,
}
SMALL = {"model_type": "qwen3_next", **TINY, "mlp_only_layers": [1], "num_labels": 3}

CAUSAL = {**SMALL, "architectures": ["Qwen3NextForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "qwen3_next"},
    "qwen3-next-80b-a3b": QWEN3_NEXT_80B,
    "explicit-layer-types-tied-biased": {
        **CAUSAL,
        "layer_types": ["full_attention", "linear_attention", "linear_attention", "full_attention"]
        + ["linear_attention"] * 2,
        "tie_word_embeddings": True,
        "attention_bias": True,
    },
    "interval-3-sparse-step-2-dense-layers": {
        **CAUSAL,
        "num_hidden_layers": 7,
        "full_attention_interval": 3,
        "decoder_sparse_step": 2,
        "mlp_only_layers": [3, 40],
        "linear_num_key_heads": 4,
        "linear_key_head_dim": 6,
    },
    "no-experts-all-dense": {**CAUSAL, "num_experts": 0, "decoder_sparse_step": 0},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen3_next_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen3_next_class():
    expect_all_classes(SMALL)


def test_qwen3_next_80b_a3b_total_and_active():
    """80B total and 3B active, as the name says (3.3B without the embedding and the head):
    10 of 512 experts plus the shared expert run per token."""
    model = from_config(QWEN3_NEXT_80B, "test")
    assert (model.total, model.active_total) == (79_674_391_296, 3_874_929_408)
    assert model.total - model.active_total == 48 * (512 - 10) * 3 * 2048 * 512


def test_layers_follow_interval_and_mlp_only_layers():
    groups = from_config(CONFIGS["interval-3-sparse-step-2-dense-layers"], "test").layers()
    # DeltaNet at 0, 1, 3, 4, 6; routed at 1 and 5 (step 2), not at 3 (mlp_only_layers)
    assert [(g.first, g.copies) for g in groups] == [(0, 1), (1, 1), (2, 1), (3, 2), (5, 1), (6, 1)]
    assert groups[0].each == groups[3].each
    groups = from_config(QWEN3_NEXT_80B, "test").layers()
    assert [(g.first, g.copies) for g in groups][:3] == [(0, 3), (3, 1), (4, 3)]
    assert groups[0].each == groups[2].each  # the DeltaNet subtree is built once


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_qwen3_next_cache_equals_transformers(dtype):
    """Conv state in the model dtype, recurrent state in fp32, KV for the full layers."""
    expect_cache("qwen3_next", TINY, "Qwen3NextForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"linear_num_value_heads": 5, "linear_num_key_heads": 2}, "linear_num_value_heads"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"num_experts_per_tok": 600}, "num_experts_per_tok"),
        ({"layer_types": ["full_attention"] * 3}, "layer_types"),
        ({"layer_types": ["mamba"] * 48}, "layer_types"),
        ({"full_attention_interval": 0}, "full_attention_interval"),
    ],
)
def test_impossible_qwen3_next_configs_are_refused(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "qwen3_next", **fields}, "test")


def test_qwen3_next_mtp_layer_is_noted_with_its_size():
    """One full-attention MoE layer (1,642,076,672) + fc 2h·h + three RMSNorms of h."""
    said = " ".join(from_config(QWEN3_NEXT_80B, "test").notes)
    assert f"mtp.*, {1_642_076_672 + 2 * 2048 * 2048 + 3 * 2048:,} parameters" in said
    assert not from_config({**QWEN3_NEXT_80B, "num_nextn_predict_layers": 0}, "test").notes
