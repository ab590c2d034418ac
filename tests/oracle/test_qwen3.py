import pytest

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "qwen3"},
    # Qwen/Qwen3-0.6B: head_dim 128 though h/a = 64, tied head
    "qwen3-0.6b": {
        **CAUSAL,
        "vocab_size": 151936,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_bias": False,
        "max_position_embeddings": 40960,
        "max_window_layers": 28,
        "tie_word_embeddings": True,
    },
    # Qwen/Qwen3-8B
    "qwen3-8b": {
        **CAUSAL,
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_bias": False,
        "max_position_embeddings": 40960,
        "max_window_layers": 36,
        "tie_word_embeddings": False,
    },
    # Qwen/Qwen3-32B: head_dim 128 though h/a = 80
    "qwen3-32b": {
        **CAUSAL,
        "vocab_size": 151936,
        "hidden_size": 5120,
        "intermediate_size": 25600,
        "num_hidden_layers": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_bias": False,
        "max_position_embeddings": 40960,
        "max_window_layers": 64,
        "tie_word_embeddings": False,
    },
    "attention-bias-mqa-odd-head-dim": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "attention_bias": True,
    },
    "null-kv-heads-means-mha": {
        "model_type": "qwen3",
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": None,
        "head_dim": 16,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen3_class():
    expect_all_classes(
        {
            "model_type": "qwen3",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )
