import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "exaone4", "architectures": ["Exaone4ForCausalLM"]}
PATTERN = ["sliding_attention"] * 3 + ["full_attention"]

# LGAI-EXAONE/EXAONE-4.0-32B: three sliding layers to one global ("LLLG"), GQA 40/8
EXAONE4_32B = {
    **CAUSAL,
    "vocab_size": 102400,
    "hidden_size": 5120,
    "intermediate_size": 27392,
    "num_hidden_layers": 64,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "sliding_window": 4096,
    "sliding_window_pattern": "LLLG",
    "layer_types": PATTERN * 16,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "exaone4"},
    "exaone-4.0-32b": EXAONE4_32B,
    # LGAI-EXAONE/EXAONE-4.0-1.2B shapes: head_dim 64 = h/a, tied head
    "exaone-4.0-1.2b": {
        **CAUSAL,
        "vocab_size": 102400,
        "hidden_size": 2048,
        "intermediate_size": 4096,
        "num_hidden_layers": 30,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 65536,
        "sliding_window_pattern": "LLLG",
        "layer_types": ["full_attention"] * 30,
        "tie_word_embeddings": True,
    },
    "built-pattern-mqa-odd-head-dim": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 5,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 24,
        "sliding_window_pattern": 2,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_exaone4_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_exaone4_32b_without_embeddings():
    # the model card's "30.95B without embeddings" (token embeddings and head: 2 × 102400 × 5120)
    model = expect_same(EXAONE4_32B)
    assert model.total - 2 * 102400 * 5120 == 30_954_640_384


def test_every_exaone4_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {"model_type": "exaone4", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3}
    )


def test_exaone4_refuses_what_transformers_refuses():
    with pytest.raises(ParamcountError, match="layer_types"):
        from_config({**CAUSAL, "num_hidden_layers": 2, "layer_types": PATTERN}, "t")
    with pytest.raises(ParamcountError, match="num_key_value_heads"):
        from_config({**CAUSAL, "num_key_value_heads": None}, "t")


TINY = {"hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "fields",
    [
        {"num_hidden_layers": 5, "sliding_window": 4},  # the class pattern 4: layer 3 global
        {"num_hidden_layers": 5, "sliding_window": None},  # no window: every layer keeps all
        {"num_hidden_layers": 5, "sliding_window": 3, "sliding_window_pattern": 2},
        {"num_hidden_layers": 4, "sliding_window": 4, "sliding_window_pattern": "LLLG", "layer_types": PATTERN},
        {"num_hidden_layers": 2, "sliding_window": None, "layer_types": ["full_attention"] * 2},
    ],
)
def test_exaone4_cache(fields, dtype):
    expect_cache("exaone4", {**TINY, **fields}, "Exaone4ForCausalLM", dtype=dtype)
