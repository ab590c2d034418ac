import pytest

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "glm4", "architectures": ["Glm4ForCausalLM"]}

# THUDM/GLM-4-9B-0414: q/k/v biases, GQA 32/2, head_dim 128, partial rotary 0.5
GLM4_9B = {
    **CAUSAL,
    "vocab_size": 151552,
    "hidden_size": 4096,
    "intermediate_size": 13696,
    "num_hidden_layers": 40,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "partial_rotary_factor": 0.5,
    "attention_bias": True,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "glm4"},
    "glm-4-9b-0414": GLM4_9B,
    # THUDM/GLM-4-32B-0414: 61 layers, GQA 48/2
    "glm-4-32b-0414": {
        **GLM4_9B,
        "hidden_size": 6144,
        "intermediate_size": 23040,
        "num_hidden_layers": 61,
        "num_attention_heads": 48,
        "num_key_value_heads": 2,
    },
    "no-bias-tied-odd-head-dim": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "attention_bias": False,
        "pad_token_id": 0,
        "tie_word_embeddings": True,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_glm4_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_glm4_class():
    small = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "head_dim": 16,
    }
    expect_all_classes(
        {
            "model_type": "glm4",
            **small,
            "num_key_value_heads": 2,
            "vocab_size": 1000,
            "num_labels": 3,
            "pad_token_id": 0,
        }
    )


def test_glm4_cache():
    tiny = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "head_dim": 16,
    }
    expect_cache("glm4", {**tiny, "num_key_value_heads": 2, "pad_token_id": 0}, "Glm4ForCausalLM")
