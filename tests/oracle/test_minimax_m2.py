import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# MiniMaxAI/MiniMax-M2: the architecture fields of its config.json (its fp8 quantization_config,
# auto_map and the MiniMax-only fields transformers does not read left out).
MINIMAX_M2 = {
    "model_type": "minimax_m2",
    "architectures": ["MiniMaxM2ForCausalLM"],
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "max_position_embeddings": 196608,
    "num_attention_heads": 48,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 62,
    "num_key_value_heads": 8,
    "num_local_experts": 256,
    "rms_norm_eps": 1e-06,
    "rope_theta": 5000000,
    "rotary_dim": 64,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "use_qk_norm": True,
    "use_routing_bias": True,
    "vocab_size": 200064,
}

SMALL = {
    "model_type": "minimax_m2",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 24,
    "num_local_experts": 6,
    "num_experts_per_tok": 2,
}

CONFIGS = {
    "defaults": {"model_type": "minimax_m2"},
    "minimax-m2": MINIMAX_M2,
    "tied-narrow-heads": {**SMALL, "tie_word_embeddings": True, "head_dim": 8},
    "mha": {**SMALL, "num_key_value_heads": 4},
    "num-experts-wins": {**SMALL, "num_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_minimax_m2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_minimax_m2_class():
    expect_all_classes(SMALL)


def test_minimax_m2_total_and_active():
    """The card: 230B total, 10B active (8 of 256 experts per token; the card's active figure
    leaves out the embedding and the output head, 2·V·h)."""
    model = from_config(MINIMAX_M2, "t")
    assert (model.total, model.active_total) == (228_689_748_992, 11_030_537_216)
    assert round((model.active_total - 2 * 200064 * 3072) / 1e9) == 10
    assert model.total - model.active_total == 62 * (256 - 8) * 3 * 3072 * 1536


def test_minimax_m2_tensors_and_notes():
    model = from_config(SMALL, "t", model_class="MiniMaxM2ForCausalLM")
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert shapes["model.layers.0.self_attn.q_norm.weight"] == (96,)  # a · d_head, not d_head
    assert shapes["model.layers.0.self_attn.k_norm.weight"] == (48,)
    saved = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.1.block_sparse_moe.experts.5.w2.weight" in saved
    assert any("e_score_correction_bias" in n for n in model.notes)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_experts_per_tok": 7}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"head_dim": None}, "head_dim"),
    ],
)
def test_minimax_m2_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_minimax_m2_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("minimax_m2", tiny, "MiniMaxM2ForCausalLM", dtype=dtype)
