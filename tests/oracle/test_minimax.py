import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# MiniMaxAI/MiniMax-Text-01 (and MiniMax-M1, same shapes): every 8th layer softmax attention.
ATTN_TYPE_LIST = [0, 0, 0, 0, 0, 0, 0, 1] * 10
MINIMAX_TEXT_01 = {
    "model_type": "minimax",
    "architectures": ["MiniMaxForCausalLM"],
    "head_dim": 128,
    "hidden_size": 6144,
    "intermediate_size": 9216,
    "num_attention_heads": 64,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 80,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "layer_types": ["full_attention" if t else "linear_attention" for t in ATTN_TYPE_LIST],
    "postnorm": True,
    "rotary_dim": 64,
    "shared_intermediate_size": 0,
    "tie_word_embeddings": False,
    "vocab_size": 200064,
}
# The checkpoint's own config.json says the schedule as attn_type_list, which transformers ignores.
MINIMAX_TEXT_01_AS_PUBLISHED = {
    **{k: v for k, v in MINIMAX_TEXT_01.items() if k != "layer_types"},
    "attn_type_list": ATTN_TYPE_LIST,
}

TINY = {
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "block_size": 4,
}
SMALL = {"model_type": "minimax", **TINY, "num_labels": 3}
CAUSAL = {**SMALL, "architectures": ["MiniMaxForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "minimax"},
    "minimax-text-01": MINIMAX_TEXT_01,
    "minimax-text-01-attn-type-list": MINIMAX_TEXT_01_AS_PUBLISHED,
    "tied-mha-no-head-dim": {**CAUSAL, "tie_word_embeddings": True, "num_key_value_heads": 4, "head_dim": None},
    "explicit-types-experts-by-alias": {
        **CAUSAL,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"] * 2,
        "num_local_experts": 6,
        "num_experts_per_tok": 3,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_minimax_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_minimax_class():
    expect_all_classes(SMALL)


def test_minimax_text_01_total_and_active():
    """456B total and 45.9B activated, as MiniMax states them (its active figure leaves out the
    embedding and the head: 2 × 200,064 × 6,144 = 2,458,386,432)."""
    model = from_config(MINIMAX_TEXT_01, "test")
    assert (model.total, model.active_total) == (456_089_655_296, 48_403_306_496)
    assert model.active_total - 2 * 200_064 * 6_144 == 45_944_920_064


def test_attn_type_list_is_noted_not_followed():
    model = from_config(MINIMAX_TEXT_01_AS_PUBLISHED, "test")
    assert model.total == 451_937_048_576  # transformers' alternation: 40 softmax layers
    assert any("attn_type_list is not read by transformers" in n for n in model.notes)
    assert not from_config(MINIMAX_TEXT_01, "test").notes


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_minimax_cache_equals_transformers(dtype):
    """Softmax layers' keys and values plus each lightning layer's heads × d × d state."""
    expect_cache("minimax", TINY, "MiniMaxForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
        ({"num_key_value_heads": 5}, "num_key_value_heads"),
        ({"layer_types": ["sliding_attention"] * 32}, "layer_types"),
        ({"layer_types": ["full_attention"]}, "layer_types"),
    ],
)
def test_impossible_minimax_configs_are_refused(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "minimax", **fields}, "test")
