import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "mistral", "architectures": ["MistralForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "mistral"},
    # mistralai/Mistral-7B-v0.1
    "mistral-7b-v0.1": {
        **CAUSAL,
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
        "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False,
    },
    # mistralai/Mistral-7B-v0.3: the larger v3 vocabulary, no sliding window
    "mistral-7b-v0.3": {
        **CAUSAL,
        "vocab_size": 32768,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "sliding_window": None,
        "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False,
    },
    # mistralai/Mistral-Nemo-Base-2407: head_dim 128 with h/a = 160
    "mistral-nemo-explicit-head-dim": {
        **CAUSAL,
        "vocab_size": 131072,
        "hidden_size": 5120,
        "intermediate_size": 14336,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "sliding_window": None,
    },
    "mqa-tied": {
        **CAUSAL,
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 6,
        "num_key_value_heads": 1,
        "tie_word_embeddings": True,
    },
    "mha": {
        "model_type": "mistral",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 500,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mistral_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mistral_class():
    expect_all_classes(
        {
            "model_type": "mistral",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )


def test_kv_heads_must_divide_heads():
    with pytest.raises(ParamcountError, match="num_key_value_heads"):
        from_config({"model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 6}, "test")
