import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# ai21labs/AI21-Jamba-1.5-Mini config.json (Jamba-v0.1 has the same shape fields)
JAMBA_MINI = {"model_type": "jamba", "architectures": ["JambaForCausalLM"], "attn_layer_offset": 4,
              "attn_layer_period": 8, "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_size": 4096,
              "intermediate_size": 14336, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_state": 16,
              "mamba_dt_rank": 256, "mamba_expand": 2, "mamba_proj_bias": False, "num_attention_heads": 32,
              "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
              "tie_word_embeddings": False, "vocab_size": 65536}  # fmt: skip
# ai21labs/AI21-Jamba-1.5-Large as the Jamba-1.5 paper gives it: 9 blocks of 8 layers, h = 8192,
# 64 heads over 8 K/V heads, 16 experts (top 2)
JAMBA_LARGE = {**JAMBA_MINI, "hidden_size": 8192, "num_hidden_layers": 72, "num_attention_heads": 64,
               "intermediate_size": 24576, "mamba_dt_rank": 512}  # fmt: skip

SMALL = {"model_type": "jamba", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 5,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
         "attn_layer_period": 3, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 0,
         "mamba_d_state": 4, "mamba_d_conv": 3, "mamba_dt_rank": 5, "vocab_size": 64, "num_labels": 3}  # fmt: skip
CAUSAL = {**SMALL, "architectures": ["JambaForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "jamba"},
    "jamba-1.5-mini": JAMBA_MINI,
    "jamba-1.5-large": JAMBA_LARGE,
    "small-schedule": CAUSAL,
    "biased-tied-auto-rank-head-dim": {**CAUSAL, "mamba_proj_bias": True, "mamba_conv_bias": False,
                                       "mamba_dt_rank": "auto", "tie_word_embeddings": True, "head_dim": 12},
    "one-expert-is-dense": {**CAUSAL, "num_experts": 1, "num_experts_per_tok": 1},
    "num-local-experts-alias": {**{k: v for k, v in CAUSAL.items() if k != "num_experts"}, "num_local_experts": 3},
    "all-attention": {**CAUSAL, "attn_layer_period": 1, "attn_layer_offset": 0},
    "classifier": {**SMALL, "architectures": ["JambaForSequenceClassification"]},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_jamba_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_total_and_active_per_token():
    """52B and 12B active (Mini), 398B and 94B active (Large), as AI21 rounds them."""
    mini, large = from_config(JAMBA_MINI, "t"), from_config(JAMBA_LARGE, "t")
    assert (mini.total, mini.active_total) == (51_570_323_328, 12_110_311_296)
    assert (large.total, large.active_total) == (398_555_145_696, 94_149_338_592)
    # active = total less the 14 idle experts of each of the 16 MoE layers (3 × 4096 × 14336 each)
    assert mini.total - mini.active_total == 16 * 14 * 3 * 4096 * 14336


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("jamba", SMALL, "JambaForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"attn_layer_offset": 3}, "attn_layer_offset"),
        ({"expert_layer_offset": 2}, "expert_layer_offset"),
        ({"num_experts_per_tok": 5}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
