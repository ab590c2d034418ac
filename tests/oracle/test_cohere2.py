import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "cohere2", "architectures": ["Cohere2ForCausalLM"]}

# CohereLabs/c4ai-command-r7b-12-2024: three sliding layers to one global, GQA 32/8, tied head
COMMAND_R7B = {
    **CAUSAL,
    "vocab_size": 256000,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "logit_scale": 0.25,
    "sliding_window": 4096,
    "sliding_window_pattern": 4,
    "tie_word_embeddings": True,
}

CONFIGS = {
    "defaults": {"model_type": "cohere2"},
    "command-r7b": COMMAND_R7B,
    # CohereLabs/c4ai-command-a-03-2025
    "command-a": {
        **COMMAND_R7B,
        "hidden_size": 12288,
        "intermediate_size": 36864,
        "num_hidden_layers": 64,
        "num_attention_heads": 96,
        "num_key_value_heads": 8,
        "logit_scale": 0.25,
    },
    "head-dim-bias-untied-layer-types": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
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
def test_cohere2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_cohere2_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {"model_type": "cohere2", **small, "num_key_value_heads": 2, "vocab_size": 1000, "pad_token_id": 0}
    )


def test_cohere2_refuses_what_transformers_refuses():
    with pytest.raises(ParamcountError, match="layer_types"):
        from_config({**CAUSAL, "num_hidden_layers": 2, "layer_types": ["full_attention"]}, "t")
    with pytest.raises(ParamcountError, match="hidden_size"):
        from_config({**CAUSAL, "hidden_size": 100, "num_attention_heads": 8}, "t")


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
        {"num_hidden_layers": 5, "sliding_window": 4},  # the default period 4: layer 3 global
        {"num_hidden_layers": 5, "sliding_window": None},  # no window: every layer keeps all
        {"num_hidden_layers": 5, "sliding_window": 3, "sliding_window_pattern": 2},
        {
            "num_hidden_layers": 3,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        },
        {"num_hidden_layers": 2, "sliding_window": 4, "sliding_window_pattern": 1},  # every layer global
    ],
)
def test_cohere2_cache(fields, dtype):
    expect_cache("cohere2", {**TINY, **fields}, "Cohere2ForCausalLM", dtype=dtype)
