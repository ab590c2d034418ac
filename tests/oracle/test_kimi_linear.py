import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_layout import attention_layout

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# moonshotai/Kimi-Linear-48B-A3B-Instruct (the Base checkpoint shares these shape fields)
KIMI_LINEAR_48B = {
    "model_type": "kimi_linear",
    "architectures": ["KimiLinearForCausalLM"],
    "first_k_dense_replace": 1,
    "head_dim": 72,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "kv_lora_rank": 512,
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
        "head_dim": 128,
        "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
        "num_heads": 32,
        "short_conv_kernel_size": 4,
    },
    "mla_use_nope": True,
    "model_max_length": 1048576,
    "moe_intermediate_size": 1024,
    "moe_layer_freq": 1,
    "moe_renormalize": True,
    "num_attention_heads": 32,
    "num_expert_group": 1,
    "num_experts": 256,
    "num_experts_per_token": 8,
    "num_hidden_layers": 27,
    "num_key_value_heads": 32,
    "num_nextn_predict_layers": 0,
    "num_shared_experts": 1,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "routed_scaling_factor": 2.446,
    "tie_word_embeddings": False,
    "topk_group": 1,
    "vocab_size": 163840,
}

TINY = {
    "vocab_size": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 12,
    "linear_num_heads": 2,
    "linear_head_dim": 8,
    "linear_conv_kernel_dim": 3,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
}
SMALL = {"model_type": "kimi_linear", **TINY}
CAUSAL = {**SMALL, "architectures": ["KimiLinearForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "kimi_linear"},
    "kimi-linear-48b-a3b": KIMI_LINEAR_48B,
    "q-lora-biased-tied-two-shared": {
        **CAUSAL,
        "q_lora_rank": 24,
        "attention_bias": True,
        "tie_word_embeddings": True,
        "n_shared_experts": 2,
    },
    "explicit-types-no-shared": {
        **CAUSAL,
        "layer_types": ["full_attention", "linear_attention", "full_attention"] + ["linear_attention"] * 3,
        "mlp_layer_types": ["sparse", "dense", "dense", "sparse", "sparse", "dense"],
        "n_shared_experts": 0,
    },
    "checkpoint-lists-win-over-top-level": {
        **CAUSAL,
        "linear_attn_config": {"full_attn_layers": [1, 6], "kda_layers": [2, 3, 4, 5], "num_heads": 3, "head_dim": 4},
        "first_k_dense_replace": 3,
    },
    "attribute-map-names-win": {
        **CAUSAL,
        "num_local_experts": 6,
        "num_experts": 5,
        "num_experts_per_tok": 1,
        "num_experts_per_token": 3,
        "n_shared_experts": 1,
        "num_shared_experts": 2,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_kimi_linear_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_kimi_linear_class():
    expect_all_classes(SMALL)


def test_kimi_linear_48b_a3b_total_and_active():
    """48B total, 3B active, as the name says (8 of 256 experts + 1 shared; layer 1 dense)."""
    model = from_config(KIMI_LINEAR_48B, "test")
    assert (model.total, model.active_total) == (49_122_675_072, 3_484_453_248)
    assert model.total - model.active_total == 26 * (256 - 8) * 3 * 2304 * 1024


def test_kimi_linear_layers_follow_the_checkpoint_lists():
    groups = from_config(KIMI_LINEAR_48B, "test").layers()
    assert [(g.first, g.copies) for g in groups][:4] == [(0, 1), (1, 2), (3, 1), (4, 3)]
    assert [(g.first, g.copies) for g in groups][-2:] == [(24, 2), (26, 1)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_kimi_linear_cache_equals_transformers(dtype):
    """MLA latent for the full layers, conv state and fp32 recurrent state for KDA."""
    expect_cache("kimi_linear", TINY, "KimiLinearForCausalLM", dtype=dtype)


def test_kimi_linear_expanded_mla_form():
    layout = attention_layout(from_config(KIMI_LINEAR_48B, "test"), mla="expanded")
    full = [k for k in layout.kinds if k.attention == "full"]
    assert [(k.layers, k.kv_heads, k.key_dim, k.value_dim) for k in full] == [(7, 32, 192, 128)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"num_experts_per_token": 300}, "num_experts_per_token"),
        ({"linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3]}}, "linear_attn_config"),
        ({"linear_attn_config": {"full_attn_layers": [0], "kda_layers": [1]}}, "full_attn_layers"),
        ({"linear_attn_config": {"head_dim": 0}}, "head_dim"),
        ({"mlp_layer_types": ["moe"] * 27}, "mlp_layer_types"),
        ({"layer_types": ["full_attention"] * 3}, "layer_types"),
    ],
)
def test_impossible_kimi_linear_configs_are_refused(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "kimi_linear", **fields}, "test")


def test_kimi_linear_notes_say_what_transformers_does():
    model = from_config({**CAUSAL, "tie_word_embeddings": True, "moe_layer_freq": 2}, "test")
    said = " ".join(model.notes)
    assert "never ties lm_head" in said
    assert "moe_layer_freq = 2 is ignored" in said
    assert "e_score_correction_bias" in said
