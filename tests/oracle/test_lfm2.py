import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# LiquidAI/LFM2-1.2B config.json (shape fields, its older names included)
LFM2_1_2B = {"model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"], "block_auto_adjust_ff_dim": True,
             "block_dim": 2048, "block_ff_dim": 12288, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256,
             "conv_L_cache": 3, "conv_bias": False, "conv_dim": 2048, "full_attn_idxs": [2, 5, 8, 10, 12, 14],
             "hidden_size": 2048, "num_attention_heads": 32, "num_heads": 32, "num_hidden_layers": 16,
             "num_key_value_heads": 8, "tie_embedding": True, "vocab_size": 65536}  # fmt: skip
# LiquidAI/LFM2-2.6B config.json (shape fields): its MLP takes intermediate_size as it is
# (block_auto_adjust_ff_dim false; with it on the model would count 1.9B, not 2.6B)
LFM2_2_6B = {"model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"], "hidden_size": 2048,
             "num_hidden_layers": 30, "num_attention_heads": 32, "num_key_value_heads": 8,
             "intermediate_size": 10752, "block_auto_adjust_ff_dim": False, "vocab_size": 65536,
             "tie_embedding": True, "conv_L_cache": 3,
             "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv",
                             "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv", "conv",
                             "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv", "conv",
                             "full_attention", "conv", "conv", "full_attention", "conv", "conv"]}  # fmt: skip

SMALL = {"model_type": "lfm2", "hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 4,
         "num_attention_heads": 4, "num_key_value_heads": 2, "block_multiple_of": 16, "conv_L_cache": 3,
         "layer_types": ["conv", "full_attention", "conv", "conv"], "vocab_size": 64}  # fmt: skip
CAUSAL = {**SMALL, "architectures": ["Lfm2ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "lfm2"},
    "lfm2-1.2b": LFM2_1_2B,
    "lfm2-2.6b": LFM2_2_6B,
    "small": CAUSAL,
    "biased-untied-multiplier-head-dim": {**CAUSAL, "conv_bias": True, "tie_word_embeddings": False,
                                          "block_ffn_dim_multiplier": 1.3, "head_dim": 12},
    "no-adjust": {**CAUSAL, "block_auto_adjust_ff_dim": False},
    "old-names-win": {**CAUSAL, "block_ff_dim": 60, "tie_embedding": False, "tie_word_embeddings": True},
    "full-attn-idxs": {**{k: v for k, v in CAUSAL.items() if k != "layer_types"}, "full_attn_idxs": [0, 3, 9]},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_lfm2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_published_sizes():
    """LFM2-1.2B and LFM2-2.6B as their names round them; the MLP is 8192 wide, not block_ff_dim's 12288."""
    assert from_config(LFM2_1_2B, "t").total == 1_170_340_608
    assert from_config(LFM2_2_6B, "t").total == 2_569_272_320


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("lfm2", SMALL, "Lfm2ForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"layer_types": ["conv", "mamba", "conv", "conv"]}, "layer_types"),
        ({"layer_types": ["conv"]}, "layer_types"),
        ({"layer_types": None, "full_attn_idxs": "all"}, "full_attn_idxs"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"block_ffn_dim_multiplier": None}, "block_ffn_dim_multiplier"),
        ({"block_ffn_dim_multiplier": 0.001}, "block_ffn_dim_multiplier"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
