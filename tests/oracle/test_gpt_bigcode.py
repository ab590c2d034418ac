import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SMALL = {"model_type": "gpt_bigcode", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 1000}

CONFIGS = {
    "defaults": {"model_type": "gpt_bigcode"},
    # bigcode/gpt_bigcode-santacoder (config.json)
    "santacoder": {
        "model_type": "gpt_bigcode",
        "architectures": ["GPTBigCodeForCausalLM"],
        "vocab_size": 49280,
        "n_positions": 2048,
        "n_embd": 2048,
        "n_layer": 24,
        "n_head": 16,
        "n_inner": 8192,
        "multi_query": True,
    },
    # bigcode/starcoder (config.json)
    "starcoder": {
        "model_type": "gpt_bigcode",
        "architectures": ["GPTBigCodeForCausalLM"],
        "vocab_size": 49152,
        "n_positions": 8192,
        "n_embd": 6144,
        "n_layer": 40,
        "n_head": 48,
        "n_inner": 24576,
        "multi_query": True,
    },
    "multi-head-untied": {**SMALL, "multi_query": False, "tie_word_embeddings": False, "n_inner": 100},
    "multi-head-cross-attention": {**SMALL, "multi_query": False, "add_cross_attention": True},
    "standard-names": {
        "model_type": "gpt_bigcode",
        "hidden_size": 96,
        "num_attention_heads": 3,
        "num_hidden_layers": 3,
        "max_position_embeddings": 64,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gpt_bigcode_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gpt_bigcode_class():
    expect_all_classes({**SMALL, "num_labels": 3})


@pytest.mark.parametrize("multi_query", [True, False])
def test_gpt_bigcode_cache(multi_query):
    expect_cache("gpt_bigcode", {**SMALL, "multi_query": multi_query}, "GPTBigCodeForCausalLM")


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"n_embd": 65}, "n_head"), ({"add_cross_attention": True}, "add_cross_attention")],
)
def test_gpt_bigcode_refuses(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "test")
