import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# allenai/OLMoE-1B-7B-0924
OLMOE_1B_7B = {
    "model_type": "olmoe",
    "architectures": ["OlmoeForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "clip_qkv": None,
    "eos_token_id": 50279,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 1024,
    "max_position_embeddings": 4096,
    "norm_topk_prob": False,
    "num_attention_heads": 16,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 16,
    "num_key_value_heads": 16,
    "output_router_logits": False,
    "pad_token_id": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "router_aux_loss_coef": 0.01,
    "tie_word_embeddings": False,
    "use_cache": True,
    "vocab_size": 50304,
}

SMALL = {
    "model_type": "olmoe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_experts": 6,
    "num_experts_per_tok": 2,
}

CONFIGS = {
    "defaults": {"model_type": "olmoe"},
    "olmoe-1b-7b-0924": OLMOE_1B_7B,
    "gqa-biased-tied": {**SMALL, "attention_bias": True, "tie_word_embeddings": True},
    # head_dim is not a config field: it sizes the projections, never the norms
    "explicit-head-dim": {**SMALL, "head_dim": 24},
    "null-kv-heads-means-mha": {**SMALL, "num_key_value_heads": None},
    "num-local-experts-wins": {**SMALL, "num_local_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_olmoe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_olmoe_class():
    expect_all_classes(SMALL)


def test_olmoe_1b_7b_total_and_active():
    """The paper's 6.9B total and 1.3B active (1B in the name): 8 of 64 experts per token."""
    model = from_config(OLMOE_1B_7B, "t")
    assert (model.total, model.active_total) == (6_919_161_856, 1_282_017_280)
    assert model.total - model.active_total == 16 * (64 - 8) * 3 * 2048 * 1024


def test_olmoe_refuses_more_active_than_experts():
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**SMALL, "num_experts_per_tok": 7}, "t")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_olmoe_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("olmoe", tiny, "OlmoeForCausalLM", dtype=dtype)
