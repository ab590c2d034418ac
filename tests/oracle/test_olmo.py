import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "olmo", "architectures": ["OlmoForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "olmo"},
    # allenai/OLMo-1B-hf: tied head
    "olmo-1b": {
        **CAUSAL,
        "vocab_size": 50304,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "max_position_embeddings": 2048,
        "attention_bias": False,
        "clip_qkv": None,
        "tie_word_embeddings": True,
    },
    # allenai/OLMo-7B-hf
    "olmo-7b": {
        **CAUSAL,
        "vocab_size": 50304,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 2048,
        "attention_bias": False,
        "clip_qkv": None,
        "tie_word_embeddings": False,
    },
    "clip-qkv-bias-gqa": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "attention_bias": True,
        "clip_qkv": 8.0,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_olmo_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_olmo_class():
    expect_all_classes(
        {
            "model_type": "olmo",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )


def test_olmo_layer_norms_have_no_parameters():
    model = from_config(CONFIGS["olmo-1b"], "test")
    assert "norms" not in model.components()
    assert model.total == 1_176_764_416  # the model card's 1.18B
