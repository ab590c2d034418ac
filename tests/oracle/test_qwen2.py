import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "qwen2"},
    # Qwen/Qwen2.5-0.5B: tied head, 2 KV heads
    "qwen2.5-0.5b": {
        **CAUSAL,
        "vocab_size": 151936,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "max_window_layers": 24,
        "sliding_window": 32768,
        "use_sliding_window": False,
        "tie_word_embeddings": True,
    },
    # Qwen/Qwen2.5-7B
    "qwen2.5-7b": {
        **CAUSAL,
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "max_position_embeddings": 131072,
        "max_window_layers": 28,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "tie_word_embeddings": False,
    },
    # Qwen/Qwen2.5-72B
    "qwen2.5-72b": {
        **CAUSAL,
        "vocab_size": 152064,
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "max_window_layers": 80,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "tie_word_embeddings": False,
    },
    "null-kv-heads-means-mha": {
        "model_type": "qwen2",
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 6,
        "num_key_value_heads": None,
        "vocab_size": 500,
    },
    "explicit-head-dim-sliding": {
        **CAUSAL,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "vocab_size": 500,
        "use_sliding_window": True,
        "max_window_layers": 1,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen2_class():
    expect_all_classes(
        {
            "model_type": "qwen2",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )


def test_qwen2_5_7b_is_7_61b():
    """The model card: 7.61B parameters."""
    assert from_config(CONFIGS["qwen2.5-7b"], "test").total == 7_615_616_512
