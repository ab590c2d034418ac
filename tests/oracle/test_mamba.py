import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# state-spaces/mamba-2.8b-hf
MAMBA_2_8B = {"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": 2560,
              "num_hidden_layers": 64, "vocab_size": 50280, "state_size": 16, "expand": 2, "conv_kernel": 4,
              "time_step_rank": 160, "use_bias": False, "use_conv_bias": True, "tie_word_embeddings": True}  # fmt: skip
# state-spaces/mamba-130m-hf
MAMBA_130M = {**MAMBA_2_8B, "hidden_size": 768, "num_hidden_layers": 24, "time_step_rank": 48}
# mistralai/Mamba-Codestral-7B-v0.1 (Mamba2Config's defaults are its shape)
CODESTRAL = {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "hidden_size": 4096,
             "num_hidden_layers": 64, "num_heads": 128, "head_dim": 64, "n_groups": 8, "state_size": 128,
             "vocab_size": 32768, "expand": 2, "conv_kernel": 4, "tie_word_embeddings": False}  # fmt: skip
# AntonV/mamba2-130m-hf: one group, tied head
MAMBA2_130M = {**CODESTRAL, "hidden_size": 768, "num_hidden_layers": 24, "num_heads": 24, "n_groups": 1,
               "vocab_size": 50288, "tie_word_embeddings": True}  # fmt: skip

SMALL1 = {"model_type": "mamba", "hidden_size": 32, "num_hidden_layers": 2, "state_size": 4, "vocab_size": 64}
SMALL2 = {"model_type": "mamba2", "hidden_size": 32, "num_hidden_layers": 2, "num_heads": 8, "head_dim": 8,
          "n_groups": 2, "state_size": 4, "vocab_size": 64, "chunk_size": 4}  # fmt: skip

CONFIGS = {
    "mamba-defaults": {"model_type": "mamba"},
    "mamba-2.8b": MAMBA_2_8B,
    "mamba-130m": MAMBA_130M,
    "mamba-biased-untied-rank": {**SMALL1, "architectures": ["MambaForCausalLM"], "use_bias": True,
                                 "use_conv_bias": False, "time_step_rank": 5, "tie_word_embeddings": False},
    "mamba2-defaults": {"model_type": "mamba2"},
    "mamba-codestral-7b": CODESTRAL,
    "mamba2-130m": MAMBA2_130M,
    "mamba2-biased": {**SMALL2, "architectures": ["Mamba2ForCausalLM"], "use_bias": True, "use_conv_bias": False},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_mamba_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL1, SMALL2])
def test_every_class(raw):
    expect_all_classes(raw)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(("raw", "cls"), [(SMALL1, "MambaForCausalLM"), (SMALL2, "Mamba2ForCausalLM")])
def test_conv_and_ssm_states_equal_transformers_cache(raw, cls, dtype):
    expect_cache(raw["model_type"], raw, cls, dtype=dtype)


def test_published_sizes():
    """Mamba-2.8B and Mamba-Codestral-7B as their names round them."""
    assert from_config(MAMBA_2_8B, "t").total == 2_768_345_600
    assert from_config(CODESTRAL, "t").total == 7_285_403_648


def test_heads_must_cover_the_inner_width():
    with pytest.raises(ParamcountError, match="num_heads"):
        from_config({**SMALL2, "num_heads": 3}, "t")
