import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# microsoft/Phi-3.5-MoE-instruct, without its longrope rope_scaling (two 64-entry factor lists,
# no parameters) and auto_map.
PHI_3_5_MOE = {
    "model_type": "phimoe",
    "architectures": ["PhimoeForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 32000,
    "hidden_act": "silu",
    "hidden_dropout": 0.0,
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "input_jitter_noise": 0.01,
    "intermediate_size": 6400,
    "lm_head_bias": True,
    "max_position_embeddings": 131072,
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 16,
    "original_max_position_embeddings": 4096,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "router_aux_loss_coef": 0.0,
    "router_jitter_noise": 0.01,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "use_cache": True,
    "vocab_size": 32064,
}
SMALL = {
    "model_type": "phimoe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 40,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 5,
    "num_experts_per_tok": 2,
    "num_labels": 3,
}

CONFIGS = {
    "defaults": {"model_type": "phimoe"},
    "phi-3.5-moe": PHI_3_5_MOE,
    "biased-head-tied": {**SMALL, "lm_head_bias": True, "tie_word_embeddings": True, "attention_bias": True},
    "mha": {**SMALL, "num_key_value_heads": 4},
    "explicit-head-dim": {**SMALL, "head_dim": 8},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_phimoe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_phimoe_class():
    expect_all_classes(SMALL)


def test_phi_3_5_moe_total_and_active():
    """The model card: 41.9B parameters, 6.6B active with 2 of 16 experts."""
    model = from_config(PHI_3_5_MOE, "t")
    assert (model.total, model.active_total) == (41_873_153_344, 6_640_999_744)
    assert model.total - model.active_total == 32 * (16 - 2) * 3 * 4096 * 6400


def test_phimoe_checkpoint_names():
    model = from_config(SMALL, "t", model_class="PhimoeForCausalLM")
    saved = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.2.block_sparse_moe.gate.weight" in saved
    assert "model.layers.0.block_sparse_moe.experts.4.w3.weight" in saved
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_experts_per_tok": 6}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"num_key_value_heads": None}, "num_key_value_heads"),  # transformers refuses a null here
    ],
)
def test_phimoe_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


@pytest.mark.parametrize("window", [None, 4])
def test_phimoe_cache(window):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size", "num_labels")}
    expect_cache("phimoe", {**tiny, "sliding_window": window}, "PhimoeForCausalLM")
