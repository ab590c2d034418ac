import pytest

from .oracle import expect_all_classes, expect_same

CAUSAL = {
    "model_type": "phi",
    "architectures": ["PhiForCausalLM"],
    "vocab_size": 51200,
    "max_position_embeddings": 2048,
    "qk_layernorm": False,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "phi"},
    # microsoft/phi-1_5 (microsoft/phi-1 has the same dimensions)
    "phi-1_5": {
        **CAUSAL,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "num_key_value_heads": None,
        "partial_rotary_factor": 0.5,
    },
    # microsoft/phi-2
    "phi-2": {
        **CAUSAL,
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": None,
        "partial_rotary_factor": 0.4,
    },
    "qk-norm-gqa-tied": {
        "model_type": "phi",
        "architectures": ["PhiForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "qk_layernorm": True,
        "tie_word_embeddings": True,
    },
    # A head_dim attribute resizes the projections but not the Q/K norms (hidden/heads).
    "explicit-head-dim-qk-norm": {
        "model_type": "phi",
        "vocab_size": 1000,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "qk_layernorm": True,
    },
}

# Totals the hub reports for these checkpoints.
PUBLISHED = {"phi-1_5": 1_418_270_720, "phi-2": 2_779_683_840}


@pytest.mark.parametrize("name", CONFIGS)
def test_phi_matches_transformers(name):
    model = expect_same(CONFIGS[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


def test_every_phi_class():
    expect_all_classes(
        {
            "model_type": "phi",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
            "qk_layernorm": True,
        }
    )
