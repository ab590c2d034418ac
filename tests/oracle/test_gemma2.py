import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# google/gemma-2-2b
GEMMA2_2B = {
    "model_type": "gemma2",
    "architectures": ["Gemma2ForCausalLM"],
    "vocab_size": 256000,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 8192,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0,
    "cache_implementation": "hybrid",
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
}
# google/gemma-2-9b
GEMMA2_9B = {
    **GEMMA2_2B,
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_hidden_layers": 42,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
}
# google/gemma-2-27b: head_dim 128 and query_pre_attn_scalar 144 (= h / heads).
GEMMA2_27B = {
    **GEMMA2_2B,
    "hidden_size": 4608,
    "intermediate_size": 36864,
    "num_hidden_layers": 46,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "head_dim": 128,
    "query_pre_attn_scalar": 144,
}

CONFIGS = {
    "defaults": {"model_type": "gemma2"},
    "gemma-2-2b": GEMMA2_2B,
    "gemma-2-9b": GEMMA2_9B,
    "gemma-2-27b": GEMMA2_27B,
    "untied-biased-mqa-layer-types": {
        "model_type": "gemma2",
        "architectures": ["Gemma2ForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 96,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 40,
        "attention_bias": True,
        "tie_word_embeddings": False,
        "layer_types": ["full_attention", "sliding_attention", "full_attention"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gemma2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_gemma2_published_sizes():
    # 2.61B, 9.24B and 27.2B on the model cards.
    assert expect_same(GEMMA2_2B).total == 2_614_341_888
    assert expect_same(GEMMA2_9B).total == 9_241_705_984
    assert expect_same(GEMMA2_27B).total == 27_227_128_320


def test_gemma2_refuses_what_transformers_refuses():
    with pytest.raises(ParamcountError, match="hidden_size"):
        from_config({"model_type": "gemma2", "hidden_size": 100, "num_attention_heads": 8}, "t")
    with pytest.raises(ParamcountError, match="layer_types"):
        from_config({"model_type": "gemma2", "num_hidden_layers": 2, "layer_types": ["full_attention"]}, "t")


def test_every_gemma2_class():
    expect_all_classes(
        {
            "model_type": "gemma2",
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
