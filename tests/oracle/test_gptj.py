import pytest

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "gptj"},
    # EleutherAI/gpt-j-6b (the class defaults are its dimensions; the file spells them the GPT-2 way)
    "gpt-j-6b": {
        "model_type": "gptj",
        "architectures": ["GPTJForCausalLM"],
        "vocab_size": 50400,
        "n_embd": 4096,
        "n_layer": 28,
        "n_head": 16,
        "n_positions": 2048,
        "rotary_dim": 64,
        "n_inner": None,
        "tie_word_embeddings": False,
    },
    "n_inner-tied-standard-names": {
        "model_type": "gptj",
        "architectures": ["GPTJForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "n_inner": 200,
        "rotary_dim": 8,
        "tie_word_embeddings": True,
    },
    "full-rotary": {"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 1, "rotary_dim": 16, "vocab_size": 500},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gptj_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gptj_class():
    expect_all_classes(
        {"model_type": "gptj", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000, "num_labels": 3}
    )
