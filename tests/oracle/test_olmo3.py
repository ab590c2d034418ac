import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"]}
PATTERN = ["sliding_attention"] * 3 + ["full_attention"]

# allenai/Olmo-3-1025-7B: three sliding layers to one full, MHA
OLMO3_7B = {
    **CAUSAL,
    "vocab_size": 100278,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 65536,
    "sliding_window": 4096,
    "layer_types": PATTERN * 8,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "olmo3"},
    "olmo-3-7b": OLMO3_7B,
    # the 32B shapes: GQA 40/8
    "olmo-3-32b": {
        **OLMO3_7B,
        "hidden_size": 5120,
        "intermediate_size": 27648,
        "num_hidden_layers": 64,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "layer_types": PATTERN * 16,
    },
    "no-layer-types-gqa-bias-tied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 5,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_olmo3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_olmo3_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes({"model_type": "olmo3", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3})


def test_olmo3_refuses_a_short_layer_types():
    with pytest.raises(ParamcountError, match="layer_types"):
        from_config({**CAUSAL, "num_hidden_layers": 3, "layer_types": PATTERN}, "t")


TINY = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "pad_token_id": 0,
}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "fields",
    [
        {"num_hidden_layers": 6, "sliding_window": 4},  # built: layer 3 full
        {"num_hidden_layers": 5, "sliding_window": None},  # no window: every layer keeps all
        {
            "num_hidden_layers": 3,
            "sliding_window": 5,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        },
        {"num_hidden_layers": 2},  # the class window, 4096, exceeds the prompt
    ],
)
def test_olmo3_cache(fields, dtype):
    expect_cache("olmo3", {**TINY, **fields}, "Olmo3ForCausalLM", dtype=dtype)
