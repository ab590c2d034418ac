import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# deepseek-ai/DeepSeek-V3 (its fp8 quantization_config left out: the oracle builds the bf16 model).
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "n_group": 8,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.5,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 163840,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "attention_bias": False,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
}
# moonshotai/Moonlight-16B-A3B (model_type deepseek_v3): q_lora_rank null, a direct q_proj.
MOONLIGHT = {
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "vocab_size": 163840,
    "hidden_size": 2048,
    "intermediate_size": 11264,
    "moe_intermediate_size": 1408,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "n_shared_experts": 2,
    "n_routed_experts": 64,
    "num_experts_per_tok": 6,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "n_group": 1,
    "topk_group": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_nextn_predict_layers": 0,
    "routed_scaling_factor": 2.446,
    "rope_theta": 50000.0,
    "rms_norm_eps": 1e-5,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "bos_token_id": 163584,
    "eos_token_id": 163585,
}
SMALL = {
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 160,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
}

CONFIGS = {
    "defaults": {"model_type": "deepseek_v3"},
    "deepseek-v3": DEEPSEEK_V3,
    "moonlight-16b-a3b-no-q-lora": MOONLIGHT,
    "small-q-lora-null": {**SMALL, "q_lora_rank": None},
    "small-biased-tied-all-moe": {
        **SMALL,
        "attention_bias": True,
        "tie_word_embeddings": True,
        "first_k_dense_replace": 0,
        "n_shared_experts": 2,
    },
    "small-all-dense": {**SMALL, "first_k_dense_replace": 9},
    # q_proj has no bias even with attention_bias; zero shared experts leave empty (0, h) tensors.
    "small-q-lora-null-biased-no-shared": {**SMALL, "q_lora_rank": None, "attention_bias": True, "n_shared_experts": 0},
    "small-alias-num-local-experts": {
        **{k: v for k, v in SMALL.items() if k != "n_routed_experts"},
        "num_local_experts": 6,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_deepseek_v3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_deepseek_v3_totals():
    # "671B total, 37B activated" (without the 14B multi-token-prediction module the checkpoint adds).
    model = expect_same(DEEPSEEK_V3)
    assert model.total == 671_026_404_352
    assert 36.5e9 < model.active_total < 38e9
    layers = model.layers()
    assert [(g.first, g.copies) for g in layers] == [(0, 3), (3, 58)]


def test_moonlight_totals():
    model = expect_same(MOONLIGHT)
    assert round(model.total / 1e9) == 16  # "16B total"
    assert 2.5e9 < model.active_total < 3.5e9  # "3B activated"
    assert not any("multi-token" in n for n in model.notes)  # num_nextn_predict_layers: 0


def test_deepseek_v3_notes():
    notes = from_config(DEEPSEEK_V3, "t").notes
    assert any("multi-token-prediction" in n and "model.layers.61" in n for n in notes)
    # DeepSeek's "11.5B unique" MTP parameters (one MoE layer, eh_proj (2h·h) and three norms),
    # and the layer's own embed_tokens and shared_head.head (2·V·h) its files hold beside them
    assert any("(11,610,067,968)" in n and f"{11_610_067_968 + 2 * 129280 * 7168:,} parameters" in n for n in notes)
    assert any("e_score_correction_bias" in n for n in notes)
    assert any("moe_layer_freq" in n for n in from_config({**SMALL, "moe_layer_freq": 2}, "t").notes)


def test_deepseek_v3_checkpoint_names():
    model = from_config(SMALL, "t")
    names = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.1.mlp.experts.7.gate_proj.weight" in names
    assert "model.layers.3.mlp.experts.0.up_proj.weight" in names
    assert "model.layers.2.mlp.experts.5.down_proj.weight" in names
    assert "model.layers.1.mlp.gate.weight" in names
    assert "model.layers.1.mlp.shared_experts.gate_proj.weight" in names
    assert "model.layers.0.mlp.gate_proj.weight" in names
    assert not any(n.endswith("experts.gate_up_proj") or n.endswith("experts.down_proj") for n in names)
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


def test_deepseek_v3_refuses_more_active_than_routed_experts():
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**SMALL, "num_experts_per_tok": 9}, "t")


def test_every_deepseek_v3_class():
    expect_all_classes({**SMALL, "num_labels": 3})
