import pytest

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "starcoder2", "architectures": ["Starcoder2ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "starcoder2"},
    # bigcode/starcoder2-3b
    "starcoder2-3b": {
        **CAUSAL,
        "vocab_size": 49152,
        "hidden_size": 3072,
        "intermediate_size": 12288,
        "num_hidden_layers": 30,
        "num_attention_heads": 24,
        "num_key_value_heads": 2,
        "max_position_embeddings": 16384,
        "sliding_window": 4096,
        "use_bias": True,
        "norm_epsilon": 1e-05,
    },
    # bigcode/starcoder2-7b
    "starcoder2-7b": {
        **CAUSAL,
        "vocab_size": 49152,
        "hidden_size": 4608,
        "intermediate_size": 18432,
        "num_hidden_layers": 32,
        "num_attention_heads": 36,
        "num_key_value_heads": 4,
        "max_position_embeddings": 16384,
        "sliding_window": 4096,
        "use_bias": True,
    },
    # bigcode/starcoder2-15b
    "starcoder2-15b": {
        **CAUSAL,
        "vocab_size": 49152,
        "hidden_size": 6144,
        "intermediate_size": 24576,
        "num_hidden_layers": 40,
        "num_attention_heads": 48,
        "num_key_value_heads": 4,
        "max_position_embeddings": 16384,
        "sliding_window": 4096,
        "use_bias": True,
    },
    "no-bias-untied-explicit-head-dim": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "use_bias": False,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_starcoder2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_starcoder2_class():
    expect_all_classes(
        {
            "model_type": "starcoder2",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )
