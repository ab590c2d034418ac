import pytest

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "gpt2": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
    "gpt2-xl": {
        "model_type": "gpt2",
        "n_embd": 1600,
        "n_head": 25,
        "n_layer": 48,
        "architectures": ["GPT2LMHeadModel"],
    },
    "n_inner-untied": {
        "model_type": "gpt2",
        "n_inner": 1000,
        "n_layer": 2,
        "tie_word_embeddings": False,
        "architectures": ["GPT2LMHeadModel"],
    },
    "cross-attention": {"model_type": "gpt2", "add_cross_attention": True, "n_layer": 2},
    "standard-names": {
        "model_type": "gpt2",
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_hidden_layers": 3,
        "max_position_embeddings": 128,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gpt2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gpt2_class():
    expect_all_classes({"model_type": "gpt2", "n_layer": 2, "num_labels": 3})
