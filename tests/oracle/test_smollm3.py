import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "smollm3", "architectures": ["SmolLM3ForCausalLM"]}

# HuggingFaceTB/SmolLM3-3B: every 4th layer without rotary positions, tied head
SMOLLM3_3B = {
    **CAUSAL,
    "vocab_size": 128256,
    "hidden_size": 2048,
    "intermediate_size": 11008,
    "num_hidden_layers": 36,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "max_position_embeddings": 65536,
    "no_rope_layers": [1, 1, 1, 0] * 9,
    "no_rope_layer_interval": 4,
    "use_sliding_window": False,
    "sliding_window": None,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": True,
}

CONFIGS = {
    "defaults": {"model_type": "smollm3"},
    "smollm3-3b": SMOLLM3_3B,
    # transformers reads no_rope_layers no further than num_hidden_layers
    "longer-no-rope-list": {**SMOLLM3_3B, "num_hidden_layers": 3},
    "biases-head-dim-untied-sliding": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "attention_bias": True,
        "mlp_bias": True,
        "use_sliding_window": True,
        "sliding_window": 16,
        "pad_token_id": 0,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_smollm3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_smollm3_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {
            "model_type": "smollm3",
            **small,
            "num_key_value_heads": 2,
            "vocab_size": 1000,
            "num_labels": 3,
            "pad_token_id": 0,
        }
    )


def test_smollm3_refuses_a_short_no_rope_list():
    with pytest.raises(ParamcountError, match="no_rope_layers"):
        from_config({**CAUSAL, "num_hidden_layers": 4, "no_rope_layers": [1, 0]}, "t")


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
        {"num_hidden_layers": 5},  # no sliding window: every layer full
        {"num_hidden_layers": 5, "sliding_window": 4},  # a window without use_sliding_window: still full
        {"num_hidden_layers": 5, "use_sliding_window": True, "sliding_window": 4},  # the no-rope layer 3 slides
        {"num_hidden_layers": 5, "use_sliding_window": True, "sliding_window": 4, "no_rope_layer_interval": 2},
        {"num_hidden_layers": 3, "use_sliding_window": True, "sliding_window": 3, "no_rope_layers": [0, 1, 0]},
        {"num_hidden_layers": 2, "use_sliding_window": True, "sliding_window": 3, "no_rope_layers": [1, 0, 0, 1]},
        {"num_hidden_layers": 2, "sliding_window": 3, "layer_types": ["sliding_attention", "full_attention"]},
    ],
)
def test_smollm3_cache(fields, dtype):
    expect_cache("smollm3", {**TINY, **fields}, "SmolLM3ForCausalLM", dtype=dtype)
