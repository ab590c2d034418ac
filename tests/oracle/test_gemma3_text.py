import pytest

from .oracle import expect_all_classes, expect_same

# google/gemma-3-1b-it (a text-only checkpoint: model_type gemma3_text)
GEMMA3_1B = {
    "model_type": "gemma3_text",
    "architectures": ["Gemma3ForCausalLM"],
    "vocab_size": 262144,
    "hidden_size": 1152,
    "intermediate_size": 6912,
    "num_hidden_layers": 26,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 32768,
    "query_pre_attn_scalar": 256,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
    "rope_theta": 1000000,
    "rope_local_base_freq": 10000,
    "rope_scaling": None,
    "attn_logit_softcapping": None,
    "final_logit_softcapping": None,
    "rms_norm_eps": 1e-6,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "eos_token_id": [1, 106],
    "pad_token_id": 0,
    "cache_implementation": "hybrid",
}
# The text_config of google/gemma-3-4b-it, -12b-it and -27b-it as their config.json states it (the other fields
# are Gemma3TextConfig defaults, vocab_size 262208 among them); the multimodal model holds this as language_model.
TEXT_4B = {
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "num_hidden_layers": 34,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024,
}
TEXT_12B = {
    "model_type": "gemma3_text",
    "hidden_size": 3840,
    "intermediate_size": 15360,
    "num_attention_heads": 16,
    "num_hidden_layers": 48,
    "num_key_value_heads": 8,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024,
}
TEXT_27B = {
    "model_type": "gemma3_text",
    "head_dim": 128,
    "hidden_size": 5376,
    "intermediate_size": 21504,
    "num_attention_heads": 32,
    "num_hidden_layers": 62,
    "num_key_value_heads": 16,
    "query_pre_attn_scalar": 168,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024,
}

CONFIGS = {
    "defaults": {"model_type": "gemma3_text"},
    "gemma-3-1b-it": GEMMA3_1B,
    "gemma-3-4b-text": TEXT_4B,
    "gemma-3-12b-text": {**TEXT_12B, "architectures": ["Gemma3ForCausalLM"]},
    "gemma-3-27b-text": {**TEXT_27B, "architectures": ["Gemma3ForCausalLM"]},
    "untied-biased-layer-types": {
        "model_type": "gemma3_text",
        "architectures": ["Gemma3ForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 40,
        "attention_bias": True,
        "tie_word_embeddings": False,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gemma3_text_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_gemma3_1b_published_size():
    assert expect_same(GEMMA3_1B).total == 999_885_952  # "1B"


def test_every_gemma3_text_class():
    expect_all_classes(
        {
            "model_type": "gemma3_text",
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
