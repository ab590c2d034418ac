import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

H_SMALL_TYPES = ["mamba"] * 5 + ["attention"] + (["mamba"] * 9 + ["attention"]) * 3 + ["mamba"] * 4
# ibm-granite/granite-4.0-h-small (shape fields of its config.json; attention at layers 5, 15, 25, 35)
H_SMALL = {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 4096,
           "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
           "num_experts_per_tok": 10, "shared_intermediate_size": 1536, "intermediate_size": 768,
           "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_n_heads": 128, "mamba_d_head": 64,
           "mamba_n_groups": 1, "mamba_conv_bias": True, "mamba_proj_bias": False, "attention_bias": False,
           "position_embedding_type": "nope", "tie_word_embeddings": True, "vocab_size": 100352,
           "layer_types": H_SMALL_TYPES}  # fmt: skip
# ibm-granite/granite-4.0-h-tiny config.json (shape fields), and its dense twin granite-4.0-h-1b
H_TINY = {**H_SMALL, "hidden_size": 1536, "num_attention_heads": 12, "num_key_value_heads": 4, "intermediate_size": 512,
          "shared_intermediate_size": 1024, "num_local_experts": 64, "num_experts_per_tok": 6, "mamba_n_heads": 48,
          "mamba_d_head": 64}  # fmt: skip
H_1B = {**H_TINY, "intermediate_size": 4096, "shared_intermediate_size": 4096, "num_local_experts": 0,
        "num_experts_per_tok": 0}  # fmt: skip

SMALL = {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 4096,
           "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
           "num_experts_per_tok": 10, "shared_intermediate_size": 1536, "intermediate_size": 768,
           "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_n_heads": 128, "mamba_d_head": 64,
           "mamba_n_groups": 1, "mamba_conv_bias": True, "mamba_proj_bias": False, "attention_bias": False,
           "position_embedding_type": "nope", "tie_word_embeddings": True, "vocab_size": 100352,
           "layer_types": H_SMALL_TYPES}  # fmt: skip
# ibm-granite/granite-4.0-micro: the same class with attention in every layer and no routed experts
MICRO = {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 2560,
         "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8, "num_local_experts": 0,
         "shared_intermediate_size": 8192, "intermediate_size": 8192, "mamba_d_state": 256, "mamba_n_heads": 128,
         "mamba_d_head": 32, "layer_types": ["attention"] * 40, "tie_word_embeddings": True,
         "vocab_size": 100352}  # fmt: skip

SMALL = {"model_type": "granitemoehybrid", "hidden_size": 32, "intermediate_size": 24, "num_hidden_layers": 4,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
         "shared_intermediate_size": 20, "mamba_n_heads": 8, "mamba_n_groups": 2, "mamba_d_state": 6,
         "mamba_d_conv": 3, "mamba_expand": 2, "layer_types": ["mamba", "attention", "mamba", "mamba"],
         "vocab_size": 64}  # fmt: skip
CAUSAL = {**SMALL, "architectures": ["GraniteMoeHybridForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "granitemoehybrid"},
    "granite-4.0-h-small": H_SMALL,
    "granite-4.0-h-tiny": H_TINY,
    "granite-4.0-h-1b-dense": H_1B,
    "small-hybrid": CAUSAL,
    "new-names-biased-untied": {**CAUSAL, "layer_types": ["linear_attention", "full_attention"] * 2,
                                "mamba_proj_bias": True, "mamba_conv_bias": False, "attention_bias": True,
                                "tie_word_embeddings": False, "mamba_d_head": 8},
    "dense-all-mamba": {**CAUSAL, "num_local_experts": 0, "layer_types": None},
    "layers-block-type-alias": {**{k: v for k, v in CAUSAL.items() if k != "layer_types"},
                                "layers_block_type": ["attention", "attention", "mamba", "attention"]},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_granitemoehybrid_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_total_and_active_per_token():
    """IBM rounds H-Small to 32B total, 9B active: 10 of 72 experts, the shared MLP always."""
    m = from_config(H_SMALL, "t")
    assert (m.total, m.active_total) == (32_207_337_984, 8_803_121_664)
    assert m.total - m.active_total == 40 * 62 * 3 * 4096 * 768  # 40 layers × 62 idle experts
    tiny, dense = from_config(H_TINY, "t"), from_config(H_1B, "t")
    assert (tiny.total, tiny.active_total) == (6_939_037_248, 1_465_470_528)  # "7B total, 1B active"
    assert dense.total == dense.active_total == 1_461_538_368


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("granitemoehybrid", SMALL, "GraniteMoeHybridForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"mamba_n_heads": 5}, "mamba_n_heads"),
        ({"mamba_d_head": 4}, "mamba_n_heads"),
        ({"mamba_n_groups": 3}, "mamba_n_groups"),
        ({"layer_types": ["mamba", "attention"]}, "layer_types"),
        ({"layer_types": ["mamba", "conv", "mamba", "mamba"]}, "layer_types"),
        ({"num_experts_per_tok": 5}, "num_experts_per_tok"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
