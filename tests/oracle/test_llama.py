import pytest

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "llama"},
    "llama-2-7b": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32000},
    "llama-3-8b-gqa": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 128256,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
    },
    "llama-3.2-1b-tied": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 128256,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "tie_word_embeddings": True,
    },
    "biases-explicit-head-dim": {
        "model_type": "llama",
        "hidden_size": 96,
        "num_attention_heads": 4,
        "head_dim": 40,
        "num_key_value_heads": 1,
        "attention_bias": True,
        "mlp_bias": True,
        "num_hidden_layers": 2,
        "intermediate_size": 200,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_llama_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_llama_class():
    expect_all_classes(
        {
            "model_type": "llama",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )
