import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# text_config of Qwen/Qwen3.5-27B (its shape fields)
QWEN3_5_27B = {
    "model_type": "qwen3_5_text",
    "architectures": ["Qwen3_5ForCausalLM"],
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_value_head_dim": 128,
    "num_attention_heads": 24,
    "num_hidden_layers": 64,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
    "vocab_size": 248320,
}

TINY = {
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 12,
    "linear_conv_kernel_dim": 3,
}
SMALL = {"model_type": "qwen3_5_text", **TINY, "num_labels": 3}
CAUSAL = {**SMALL, "architectures": ["Qwen3_5ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "qwen3_5_text"},
    "qwen3.5-27b": QWEN3_5_27B,
    "tied-interval-2-biased": {
        **CAUSAL,
        "tie_word_embeddings": True,
        "full_attention_interval": 2,
        "attention_bias": True,
    },
    "explicit-layer-types": {
        **CAUSAL,
        "layer_types": ["full_attention", "full_attention", "linear_attention", "full_attention", "linear_attention"],
        "linear_num_key_heads": 4,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen3_5_text_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen3_5_text_class():
    expect_all_classes(SMALL)


def test_qwen3_5_27b_total():
    """The text tower of Qwen3.5-27B (its vision tower is not part of the text model)."""
    model = from_config(QWEN3_5_27B, "test")
    assert model.total == model.active_total == 26_895_998_464


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_qwen3_5_text_cache_equals_transformers(dtype):
    expect_cache("qwen3_5_text", TINY, "Qwen3_5ForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"linear_num_value_heads": 24, "linear_num_key_heads": 16}, "linear_num_value_heads"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"layer_types": ["full_attention"]}, "layer_types"),
    ],
)
def test_impossible_qwen3_5_text_configs_are_refused(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "qwen3_5_text", **fields}, "test")


def test_qwen3_5_mtp_layer_is_noted_with_its_size():
    model = from_config(QWEN3_5_27B, "test")
    full = next(g for g in model.layers() if g.first == 3).each  # a full-attention layer
    said = " ".join(model.notes)
    assert f"mtp.*, {full + 2 * 5120 * 5120 + 3 * 5120:,} parameters" in said
    twice = " ".join(from_config({**QWEN3_5_27B, "mtp_num_hidden_layers": 2}, "test").notes)
    assert f"2 multi-token-prediction layer(s) (mtp.*, {2 * (full + 2 * 5120 * 5120 + 3 * 5120):,}" in twice
