import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same


def alternating(n):
    return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]


# openai/gpt-oss-20b (its mxfp4 quantization_config left out: the oracle builds the bf16 model).
GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "eos_token_id": 200002,
    "experts_per_token": 4,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2880,
    "initial_context_length": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 2880,
    "layer_types": alternating(24),
    "max_position_embeddings": 131072,
    "num_attention_heads": 64,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "output_router_logits": False,
    "pad_token_id": 199999,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
    "rope_theta": 150000,
    "router_aux_loss_coef": 0.9,
    "sliding_window": 128,
    "swiglu_limit": 7.0,
    "tie_word_embeddings": False,
    "use_cache": True,
    "vocab_size": 201088,
}
# openai/gpt-oss-120b: 36 layers of 128 experts, otherwise the same.
GPT_OSS_120B = {**GPT_OSS_20B, "num_hidden_layers": 36, "num_local_experts": 128, "layer_types": alternating(36)}

SMALL = {
    "model_type": "gpt_oss",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 48,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_local_experts": 6,
    "num_experts_per_tok": 2,
    "num_labels": 3,
}

CONFIGS = {
    "defaults": {"model_type": "gpt_oss"},
    "gpt-oss-20b": GPT_OSS_20B,
    "gpt-oss-120b": GPT_OSS_120B,
    "small-no-attention-bias-tied": {**SMALL, "attention_bias": False, "tie_word_embeddings": True},
    "small-mha-wide-heads": {**SMALL, "num_key_value_heads": 4, "head_dim": 24},
    "small-explicit-layer-types": {**SMALL, "layer_types": ["full_attention"] * 3},
    # attribute_map: a file's num_experts overrides num_local_experts
    "small-num-experts-wins": {**SMALL, "num_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gpt_oss_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gpt_oss_class():
    expect_all_classes(SMALL)


def test_gpt_oss_published_totals_and_active():
    """The model cards: 20,914,757,184 and 116,829,156,672 parameters; 3.6B and 5.1B active,
    which OpenAI counts without the input embedding (201,088 × 2,880 = 579,133,440)."""
    small, big = from_config(GPT_OSS_20B, "t"), from_config(GPT_OSS_120B, "t")
    assert (small.total, small.active_total) == (20_914_757_184, 4_187_440_704)
    assert (big.total, big.active_total) == (116_829_156_672, 5_711_982_912)
    embed = 201088 * 2880
    assert round((small.active_total - embed) / 1e9, 1) == 3.6
    assert round((big.active_total - embed) / 1e9, 1) == 5.1
    # every expert tensor, biases included, is 4 of E active; the rest runs in full
    per_expert = 2880 * 5760 + 5760 + 2880 * 2880 + 2880
    assert small.total - small.active_total == 24 * (32 - 4) * per_expert


def test_gpt_oss_tensors():
    shapes = {leaf.name: leaf.shape for leaf in from_config(SMALL, "t", model_class="GptOssForCausalLM").tensors()}
    assert shapes["model.layers.2.self_attn.sinks"] == (4,)
    assert shapes["model.layers.0.mlp.router.bias"] == (6,)
    assert shapes["model.layers.0.mlp.experts.gate_up_proj"] == (6, 64, 96)  # (E, in, out)
    assert shapes["model.layers.0.mlp.experts.gate_up_proj_bias"] == (6, 96)
    assert shapes["model.layers.0.mlp.experts.down_proj"] == (6, 48, 64)
    assert shapes["model.layers.0.mlp.experts.down_proj_bias"] == (6, 64)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_experts_per_tok": 7}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"head_dim": None}, "head_dim"),  # transformers refuses a null where it wants an int
        ({"layer_types": ["full_attention"]}, "layer_types"),
        ({"layer_types": ["full_attention", "mamba", "full_attention"]}, "layer_types"),
    ],
)
def test_gpt_oss_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


TINY = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size", "num_labels")} | {"sliding_window": 4}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gpt_oss_cache_alternates_sliding_and_full(dtype):
    expect_cache("gpt_oss", TINY, "GptOssForCausalLM", dtype=dtype)


def test_gpt_oss_cache_explicit_layer_types():
    types = ["full_attention", "full_attention", "sliding_attention"]
    expect_cache("gpt_oss", {**TINY, "layer_types": types}, "GptOssForCausalLM")
