import pytest

from .oracle import expect_all_classes, expect_same

# microsoft/Phi-3-mini-4k-instruct
PHI3_MINI = {
    "model_type": "phi3",
    "architectures": ["Phi3ForCausalLM"],
    "vocab_size": 32064,
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "hidden_act": "silu",
    "max_position_embeddings": 4096,
    "original_max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "sliding_window": 2047,
    "tie_word_embeddings": False,
    "attention_dropout": 0.0,
    "embd_pdrop": 0.0,
    "resid_pdrop": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 32000,
    "pad_token_id": 32000,
}
# microsoft/Phi-3-medium-4k-instruct: grouped-query attention, 40 heads over 10 KV heads.
PHI3_MEDIUM = {
    **PHI3_MINI,
    "hidden_size": 5120,
    "intermediate_size": 17920,
    "num_hidden_layers": 40,
    "num_attention_heads": 40,
    "num_key_value_heads": 10,
}
# microsoft/Phi-3.5-mini-instruct: Phi-3-mini's shapes at 128k context. Its longrope rope_scaling (two
# 48-entry factor lists) changes no parameter and is left out here.
PHI35_MINI = {**PHI3_MINI, "max_position_embeddings": 131072, "sliding_window": 262144}
# microsoft/Phi-4-mini-instruct (model_type phi3): 200k vocabulary, GQA 24/8, tied head, partial rotary.
PHI4_MINI = {
    "model_type": "phi3",
    "architectures": ["Phi3ForCausalLM"],
    "vocab_size": 200064,
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096,
    "partial_rotary_factor": 0.75,
    "tie_word_embeddings": True,
    "rms_norm_eps": 1e-5,
    "bos_token_id": 199999,
    "eos_token_id": 199999,
    "pad_token_id": 199999,
}

CONFIGS = {
    "defaults": {"model_type": "phi3"},
    "phi-3-mini-4k": PHI3_MINI,
    "phi-3-medium-4k": PHI3_MEDIUM,
    "phi-3.5-mini": PHI35_MINI,
    "phi-4-mini-tied": PHI4_MINI,
    # head_dim is no Phi3Config field, but the attention uses one a file sets.
    "mqa-explicit-head-dim": {
        "model_type": "phi3",
        "architectures": ["Phi3ForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 40,
        "pad_token_id": 0,
        "eos_token_id": 1,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_phi3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_phi3_published_sizes():
    assert expect_same(PHI3_MINI).total == 3_821_079_552  # "3.8B"
    assert round(expect_same(PHI3_MEDIUM).total / 1e9) == 14  # "14B"
    assert round(expect_same(PHI4_MINI).total / 1e9, 1) == 3.8  # "3.8B"


def test_every_phi3_class():
    expect_all_classes(
        {
            "model_type": "phi3",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
            "pad_token_id": 0,
            "eos_token_id": 1,
        }
    )
