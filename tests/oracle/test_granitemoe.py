import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# ibm-granite/granite-3.1-3b-a800m-instruct config.json (shape fields)
GRANITE_3B_A800M = {"model_type": "granitemoe", "architectures": ["GraniteMoeForCausalLM"], "hidden_size": 1536,
                    "intermediate_size": 512, "max_position_embeddings": 131072, "num_attention_heads": 24,
                    "num_experts_per_tok": 8, "num_hidden_layers": 32, "num_key_value_heads": 8,
                    "num_local_experts": 40, "rope_theta": 10000000.0, "tie_word_embeddings": True,
                    "vocab_size": 49155}  # fmt: skip
# ibm-granite/granite-3.0-1b-a400m-base config.json (shape fields)
GRANITE_1B_A400M = {**GRANITE_3B_A800M, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                    "num_local_experts": 32, "max_position_embeddings": 4096, "rope_theta": 10000.0}  # fmt: skip

SMALL = {"model_type": "granitemoe", "hidden_size": 32, "intermediate_size": 24, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
         "vocab_size": 64}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "granitemoe"},
    "granite-3.1-3b-a800m": GRANITE_3B_A800M,
    "granite-3.0-1b-a400m": GRANITE_1B_A400M,
    "biased-untied-head-dim": {**SMALL, "architectures": ["GraniteMoeForCausalLM"], "attention_bias": True,
                               "head_dim": 12, "tie_word_embeddings": False},
    "mha-one-expert": {**SMALL, "num_key_value_heads": None, "num_local_experts": 1, "num_experts_per_tok": 1},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_granitemoe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_total_and_active_per_token():
    """3.3B total and 0.9B active (the name rounds it to 800M): 8 of 40 experts per token."""
    m = from_config(GRANITE_3B_A800M, "t")
    assert (m.total, m.active_total) == (3_298_793_472, 882_874_368)
    assert m.total - m.active_total == 32 * 32 * 3 * 1536 * 512  # 32 layers × 32 idle experts


def test_checkpoint_names():
    """Checkpoints keep ParallelExperts' input_linear/output_linear and router.layer."""
    names = {
        leaf.name for leaf in from_config(SMALL, "t", model_class="GraniteMoeForCausalLM").tensors(checkpoint=True)
    }
    assert "model.layers.1.block_sparse_moe.input_linear.weight" in names
    assert "model.layers.1.block_sparse_moe.output_linear.weight" in names
    assert "model.layers.1.block_sparse_moe.router.layer.weight" in names


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("granitemoe", SMALL, "GraniteMoeForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"num_experts_per_tok": 5}, "num_experts_per_tok"), ({"num_key_value_heads": 3}, "num_key_value_heads")],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
