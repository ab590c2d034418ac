import pytest

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "ernie4_5", "architectures": ["Ernie4_5ForCausalLM"]}

# baidu/ERNIE-4.5-0.3B-PT: head_dim 128 with h/a = 64, GQA 16/2, tied head
ERNIE_03B = {
    **CAUSAL,
    "vocab_size": 103424,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 18,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "use_bias": False,
    "tie_word_embeddings": True,
}

CONFIGS = {
    "defaults": {"model_type": "ernie4_5"},
    "ernie-4.5-0.3b": ERNIE_03B,
    "biases-untied-null-head-dim": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": None,
        "use_bias": True,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_ernie4_5_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_ernie4_5_03b_size():
    assert expect_same(ERNIE_03B).total == 360_748_032  # the card's 0.36B


def test_every_ernie4_5_class():
    small = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "head_dim": 16,
    }
    expect_all_classes({"model_type": "ernie4_5", **small, "num_key_value_heads": 2, "vocab_size": 1000})


def test_ernie4_5_cache():
    tiny = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "head_dim": 16,
    }
    expect_cache("ernie4_5", {**tiny, "num_key_value_heads": 2}, "Ernie4_5ForCausalLM")
