import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SMALL = {
    "model_type": "llama4_text",
    "hidden_size": 64,
    "intermediate_size": 32,
    "intermediate_size_mlp": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1000,
    "num_local_experts": 4,
    "interleave_moe_layer_step": 2,
}

SCOUT = {
    "model_type": "llama4_text",
    "architectures": ["Llama4ForCausalLM"],
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 202048,
    "num_experts_per_tok": 1,
    "attention_chunk_size": 8192,
    "use_qk_norm": True,
}

CONFIGS = {
    "defaults": {"model_type": "llama4_text"},
    # meta-llama/Llama-4-Scout-17B-16E: text_config
    "scout": {**SCOUT, "num_local_experts": 16, "interleave_moe_layer_step": 1},
    # meta-llama/Llama-4-Maverick-17B-128E: text_config (MoE every second layer)
    "maverick": {**SCOUT, "num_local_experts": 128, "interleave_moe_layer_step": 2, "use_qk_norm": False},
    "explicit-moe-layers-tied": {**SMALL, "moe_layers": [0, 3], "tie_word_embeddings": True, "attention_bias": True},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_llama4_text_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_llama4_text_class():
    expect_all_classes(SMALL)


def test_llama4_text_total_and_active():
    m = from_config(CONFIGS["scout"], "test")
    h, i, e, layers = 5120, 8192, 16, 48
    expert = 3 * h * i
    assert m.total - m.active_total == layers * (e - 1) * expert


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"num_key_value_heads": 3}, "num_key_value_heads"), ({"interleave_moe_layer_step": 0}, "interleave")],
)
def test_llama4_text_refuses(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "test")


@pytest.mark.parametrize(
    "extra", [{"attention_chunk_size": 4}, {"attention_chunk_size": 4, "no_rope_layer_interval": 2}]
)
def test_llama4_text_cache(extra):
    expect_cache("llama4_text", {**SMALL, **extra}, "Llama4ForCausalLM")
