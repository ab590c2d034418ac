import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "granite", "architectures": ["GraniteForCausalLM"]}
MULTIPLIERS = {"attention_multiplier": 0.0078125, "embedding_multiplier": 12.0, "residual_multiplier": 0.22}

# ibm-granite/granite-3.3-8b-instruct: tied head, GQA 32/8
GRANITE_8B = {
    **CAUSAL,
    **MULTIPLIERS,
    "vocab_size": 49159,
    "hidden_size": 4096,
    "intermediate_size": 12800,
    "num_hidden_layers": 40,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "attention_bias": False,
    "mlp_bias": False,
    "logits_scaling": 16.0,
    "tie_word_embeddings": True,
}

CONFIGS = {
    "defaults": {"model_type": "granite"},
    "granite-3.3-8b": GRANITE_8B,
    # the 2B shapes of Granite 3.0/3.1 (vocabulary 49155)
    "granite-2b": {
        **GRANITE_8B,
        "vocab_size": 49155,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "attention_multiplier": 0.015625,
        "logits_scaling": 8.0,
    },
    "biases-explicit-head-dim-untied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "attention_bias": True,
        "mlp_bias": True,
        "tie_word_embeddings": False,
    },
    "null-kv-heads-means-mha": {
        **CAUSAL,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": None,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_granite_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_granite_8b_size():
    # 8.17B: what the Granite 3.3 8B model card rounds to
    assert expect_same(GRANITE_8B).total == 8_170_864_640


def test_every_granite_class():
    expect_all_classes(
        {
            "model_type": "granite",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 1000,
        }
    )


def test_granite_refuses_heads_that_do_not_divide():
    with pytest.raises(ParamcountError, match="num_key_value_heads"):
        from_config({**CAUSAL, "num_attention_heads": 32, "num_key_value_heads": 5}, "t")


def test_granite_cache():
    tiny = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
    expect_cache("granite", {**tiny, "num_key_value_heads": 2}, "GraniteForCausalLM")
