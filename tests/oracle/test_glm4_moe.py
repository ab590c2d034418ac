import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# zai-org/GLM-4.5-Air
GLM_4_5_AIR = {
    "model_type": "glm4_moe",
    "architectures": ["Glm4MoeForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "pad_token_id": 151329,
    "eos_token_id": [151329, 151336, 151338],
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "partial_rotary_factor": 0.5,
    "initializer_range": 0.02,
    "intermediate_size": 10944,
    "max_position_embeddings": 131072,
    "moe_intermediate_size": 1408,
    "norm_topk_prob": True,
    "num_attention_heads": 96,
    "n_group": 1,
    "topk_group": 1,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "routed_scaling_factor": 1.0,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 46,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
    "use_cache": True,
    "use_qk_norm": False,
    "vocab_size": 151552,
}
# zai-org/GLM-4.5: three dense layers, 160 experts, per-head q/k norms.
GLM_4_5 = {
    **GLM_4_5_AIR,
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "n_routed_experts": 160,
    "routed_scaling_factor": 2.5,
    "first_k_dense_replace": 3,
    "num_hidden_layers": 92,
    "use_qk_norm": True,
}

SMALL = {
    "model_type": "glm4_moe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 80,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "n_routed_experts": 6,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 2,
}

CONFIGS = {
    "defaults": {"model_type": "glm4_moe"},
    "glm-4.5-air": GLM_4_5_AIR,
    "glm-4.5": GLM_4_5,
    "qk-norm-biased-head-dim-tied": {
        **SMALL,
        "use_qk_norm": True,
        "attention_bias": True,
        "head_dim": 24,
        "tie_word_embeddings": True,
    },
    "all-moe-two-shared": {**SMALL, "first_k_dense_replace": 0, "n_shared_experts": 2},
    "all-dense": {**SMALL, "first_k_dense_replace": 9},
    "no-shared-experts": {**SMALL, "n_shared_experts": 0},
    "num-local-experts-wins": {**SMALL, "num_local_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_glm4_moe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_glm4_moe_class():
    expect_all_classes(SMALL)


def test_glm_4_5_totals_and_active():
    """The cards: GLM-4.5 355B total, 32B active; GLM-4.5-Air 106B total, 12B active. The
    transformers model leaves out the multi-token-prediction layer; the active figures of the
    cards leave out the embedding and the output head (2·V·h)."""
    big, air = from_config(GLM_4_5, "t"), from_config(GLM_4_5_AIR, "t")
    assert (big.total, big.active_total) == (352_797_814_784, 33_632_251_904)
    assert (air.total, air.active_total) == (106_852_245_504, 13_424_123_904)
    assert round((big.active_total - 2 * 151552 * 5120) / 1e9) == 32
    assert round((air.active_total - 2 * 151552 * 4096) / 1e9) == 12
    assert big.total - big.active_total == 89 * (160 - 8) * 3 * 5120 * 1536
    assert [(g.first, g.copies) for g in big.layers()] == [(0, 3), (3, 89)]


def test_glm4_moe_notes():
    notes = from_config(GLM_4_5_AIR, "t").notes
    assert any("model.layers.46" in n and "multi-token-prediction" in n for n in notes)
    assert any("e_score_correction_bias" in n for n in notes)
    quiet = from_config({**SMALL, "num_nextn_predict_layers": 0, "first_k_dense_replace": 9}, "t").notes
    assert not any("multi-token" in n or "e_score" in n for n in quiet)


def test_glm4_moe_mtp_note_counts_the_layer():
    """One MTP layer = one MoE decoder layer + eh_proj (2h·h) + enorm, hnorm, shared_head.norm."""
    model = from_config({**SMALL, "first_k_dense_replace": 0}, "t")
    layer = model.layers()[0].each
    note = next(n for n in model.notes if "multi-token" in n)
    assert f"{layer + 2 * 64 * 64 + 3 * 64:,} parameters" in note


def test_glm4_moe_checkpoint_names():
    model = from_config(SMALL, "t", model_class="Glm4MoeForCausalLM")
    names = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.3.mlp.experts.5.down_proj.weight" in names
    assert "model.layers.2.mlp.shared_experts.up_proj.weight" in names
    assert "model.layers.1.mlp.gate_proj.weight" in names
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


@pytest.mark.parametrize(
    "bad, field",
    [({"num_experts_per_tok": 7}, "num_experts_per_tok"), ({"num_key_value_heads": None}, "num_key_value_heads")],
)
def test_glm4_moe_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_glm4_moe_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("glm4_moe", {**tiny, "head_dim": 24, "use_qk_norm": True}, "Glm4MoeForCausalLM", dtype=dtype)
