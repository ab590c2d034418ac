import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"]}

# mistralai/Mixtral-8x7B-v0.1
MIXTRAL_8X7B = {
    **CAUSAL,
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 32768,
    "sliding_window": None,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "mixtral"},
    "mixtral-8x7b": MIXTRAL_8X7B,
    # mistralai/Mixtral-8x22B-v0.1
    "mixtral-8x22b": {
        **CAUSAL,
        "vocab_size": 32768,
        "hidden_size": 6144,
        "intermediate_size": 16384,
        "num_hidden_layers": 56,
        "num_attention_heads": 48,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "max_position_embeddings": 65536,
        "tie_word_embeddings": False,
    },
    "standard-name-num-experts-tied-head-dim": {
        **CAUSAL,
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 40,
        "num_experts": 5,
        "num_experts_per_tok": 1,
        "tie_word_embeddings": True,
    },
}

SMALL = {
    "model_type": "mixtral",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 1000,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "num_labels": 3,
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mixtral_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mixtral_class():
    expect_all_classes(SMALL)


def test_mixtral_8x7b_active_parameters():
    """Published: 46.7B parameters, 12.9B used per token (2 of 8 experts)."""
    model = from_config(MIXTRAL_8X7B, "test")
    assert model.total == 46_702_792_704
    assert round(model.active_total / 1e9, 1) == 12.9
    experts = 32 * 8 * 3 * 4096 * 14336
    assert model.total - model.active_total == experts * 6 // 8


def test_mixtral_8x22b_active_parameters():
    """Published: 141B parameters, 39B active."""
    model = from_config(CONFIGS["mixtral-8x22b"], "test")
    assert (model.total, model.active_total) == (140_630_071_296, 39_161_468_928)


def test_num_experts_wins_over_num_local_experts():
    """transformers sets the attribute_map name from the file after the field."""
    expect_same({**SMALL, "num_experts": 3, "num_local_experts": 4})


def test_checkpoint_names_are_block_sparse_moe():
    model = from_config(SMALL, "test", model_class="MixtralForCausalLM")
    saved = {leaf.name: leaf.shape for leaf in model.tensors(checkpoint=True)}
    assert saved["model.layers.1.block_sparse_moe.gate.weight"] == (4, 64)
    assert saved["model.layers.0.block_sparse_moe.experts.3.w1.weight"] == (96, 64)
    assert saved["model.layers.0.block_sparse_moe.experts.3.w3.weight"] == (96, 64)
    assert saved["model.layers.0.block_sparse_moe.experts.3.w2.weight"] == (64, 96)
    assert not any(".mlp." in name for name in saved)
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


def test_top_k_cannot_exceed_experts():
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3}, "test")
