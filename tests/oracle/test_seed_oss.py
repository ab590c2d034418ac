import pytest

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "seed_oss", "architectures": ["SeedOssForCausalLM"]}

# ByteDance-Seed/Seed-OSS-36B-Instruct: q/k/v biases, none on o_proj, head_dim 128 with h/a = 64
SEED_OSS_36B = {
    **CAUSAL,
    "vocab_size": 155136,
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 80,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 524288,
    "attention_bias": True,
    "attention_out_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "seed_oss"},
    "seed-oss-36b": SEED_OSS_36B,
    "all-biases-tied-mha": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 24,
        "attention_out_bias": True,
        "mlp_bias": True,
        "tie_word_embeddings": True,
    },
    "no-biases-null-head-dim": {
        **CAUSAL,
        "num_hidden_layers": 2,
        "hidden_size": 640,
        "num_attention_heads": 10,
        "num_key_value_heads": 2,
        "head_dim": None,
        "attention_bias": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_seed_oss_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_seed_oss_36b_size():
    assert expect_same(SEED_OSS_36B).total == 36_151_104_512


def test_every_seed_oss_class():
    small = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "head_dim": 16,
    }
    expect_all_classes(
        {"model_type": "seed_oss", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3}
    )


def test_seed_oss_cache():
    tiny = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "head_dim": 16,
    }
    expect_cache("seed_oss", {**tiny, "num_key_value_heads": 2}, "SeedOssForCausalLM")
