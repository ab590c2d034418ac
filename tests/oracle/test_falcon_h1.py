import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# tiiuae/Falcon-H1-7B-Instruct config.json (shape fields)
FALCON_H1_7B = {"model_type": "falcon_h1", "architectures": ["FalconH1ForCausalLM"], "hidden_size": 3072,
                "num_hidden_layers": 44, "num_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 128,
                "intermediate_size": 12288, "vocab_size": 130048, "tie_word_embeddings": False, "mamba_d_state": 256,
                "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_d_head": 128, "mamba_d_ssm": 3072,
                "mamba_expand": 2, "mamba_d_conv": 4, "mamba_chunk_size": 128}  # fmt: skip
# tiiuae/Falcon-H1-3B config.json (shape fields)
FALCON_H1_3B = {**FALCON_H1_7B, "hidden_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 10,
                "intermediate_size": 6144, "vocab_size": 65536, "mamba_n_heads": 32, "mamba_d_ssm": 4096}  # fmt: skip
# tiiuae/Falcon-H1-1.5B (shape fields)
FALCON_H1_1_5B = {**FALCON_H1_7B, "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 8,
                  "intermediate_size": 4608, "vocab_size": 65537, "mamba_n_heads": 48, "mamba_d_head": 64}  # fmt: skip

SMALL = {"model_type": "falcon_h1", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "mamba_d_ssm": 32, "mamba_n_heads": 4,
         "mamba_n_groups": 2, "mamba_d_state": 8, "mamba_d_conv": 3, "vocab_size": 64}  # fmt: skip
CAUSAL = {**SMALL, "architectures": ["FalconH1ForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "falcon_h1"},
    "falcon-h1-7b": FALCON_H1_7B,
    "falcon-h1-3b": FALCON_H1_3B,
    "falcon-h1-1.5b": FALCON_H1_1_5B,
    "small": CAUSAL,
    "gated-norm-biases-tied": {**CAUSAL, "mamba_rms_norm": True, "projectors_bias": True, "mamba_proj_bias": True,
                               "mamba_conv_bias": False, "attention_bias": True, "mlp_bias": True,
                               "tie_word_embeddings": True},
    "expand-width-no-head-dim": {**{k: v for k, v in CAUSAL.items() if k != "head_dim"}, "mamba_d_ssm": None,
                                 "mamba_expand": 1, "mamba_d_head": 8},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_falcon_h1_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_published_size():
    """Falcon-H1-7B as its name rounds it."""
    assert from_config(FALCON_H1_7B, "t").total == 7_585_513_568


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("falcon_h1", SMALL, "FalconH1ForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"mamba_n_heads": 5}, "mamba_n_heads"),
        ({"mamba_d_head": 16}, "mamba_n_heads"),
        ({"mamba_n_groups": 3}, "mamba_n_groups"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
