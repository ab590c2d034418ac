import pytest

from .oracle import expect_all_classes, expect_same

# google/gemma-2b: multi-query attention (1 KV head), head_dim 256 with h = 2048.
GEMMA_2B = {
    "model_type": "gemma",
    "architectures": ["GemmaForCausalLM"],
    "vocab_size": 256000,
    "hidden_size": 2048,
    "intermediate_size": 16384,
    "num_hidden_layers": 18,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "hidden_act": "gelu",
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "attention_bias": False,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
}
# google/gemma-7b: 16 heads of 256 = 4096 wide attention on h = 3072.
GEMMA_7B = {
    **GEMMA_2B,
    "hidden_size": 3072,
    "intermediate_size": 24576,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
}

CONFIGS = {
    "defaults": {"model_type": "gemma"},
    "gemma-2b": GEMMA_2B,
    "gemma-7b": GEMMA_7B,
    "untied-biased-gqa": {
        "model_type": "gemma",
        "architectures": ["GemmaForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "head_dim": 40,
        "attention_bias": True,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gemma_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_gemma_published_sizes():
    # Google's model cards: 2.51B and 8.54B parameters (the head is the tied embedding).
    assert expect_same(GEMMA_2B).total == 2_506_172_416
    assert expect_same(GEMMA_7B).total == 8_537_680_896


def test_every_gemma_class():
    expect_all_classes(
        {
            "model_type": "gemma",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
        }
    )
