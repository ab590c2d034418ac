"""Gemma 4 text against transformers 5.23 on the meta device, and its cache against a real one.

The catalog's published Gemma 4 configs (31B and E2B instruct) are held in every class in
test_gemma4.py; the configurations below take the shapes public inference engines quote for the
released sizes (an E2B-like model with per-layer embeddings and KV sharing, a 31B-like dense one
with k = v global layers and fewer global KV heads, a 26B-A4B-like mixture of experts) at a few
layers, plus every switch alone.
"""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_cache import kv_cache

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

FULL, SLIDING = "full_attention", "sliding_attention"
E2B_LIKE = {
    "model_type": "gemma4_text",
    "hidden_size": 1536,
    "num_hidden_layers": 35,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "intermediate_size": 6144,
    "num_kv_shared_layers": 20,
    "use_double_wide_mlp": True,
    "global_head_dim": 512,
}
DENSE_LIKE = {
    "model_type": "gemma4_text",
    "hidden_size": 5376,
    "num_hidden_layers": 12,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "num_global_key_value_heads": 4,
    "attention_k_eq_v": True,
    "intermediate_size": 21504,
    "hidden_size_per_layer_input": 0,
    "tie_word_embeddings": False,
}
MOE_LIKE = {
    "model_type": "gemma4_text",
    "hidden_size": 2816,
    "num_hidden_layers": 6,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "num_global_key_value_heads": 2,
    "attention_k_eq_v": True,
    "enable_moe_block": True,
    "num_experts": 128,
    "top_k_experts": 8,
    "moe_intermediate_size": 704,
    "intermediate_size": 2112,
    "hidden_size_per_layer_input": 0,
}
SMALL = {
    "model_type": "gemma4_text",
    "vocab_size": 64,
    "vocab_size_per_layer_input": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "global_head_dim": 16,
    "hidden_size_per_layer_input": 4,
    "sliding_window": 4,
    "layer_types": [SLIDING, SLIDING, FULL, SLIDING, SLIDING, FULL],
}
CONFIGS = {
    "defaults": {"model_type": "gemma4_text"},
    "e2b-like": E2B_LIKE,
    "dense-like": DENSE_LIKE,
    "moe-like": MOE_LIKE,
    "small": SMALL,
    "kv-shared-double-mlp": {**SMALL, "num_kv_shared_layers": 3, "use_double_wide_mlp": True},
    "k-eq-v-global-kv": {**SMALL, "attention_k_eq_v": True, "num_global_key_value_heads": 1},
    "global-kv-without-k-eq-v": {**SMALL, "num_global_key_value_heads": 1},  # ignored then
    "per-layer-config": {
        **SMALL,
        "per_layer_config": {
            "2": {"head_dim": 12, "num_key_value_heads": 1},
            "5": {"head_dim": 12, "num_key_value_heads": 1},
        },
    },
    "last-forced-full": {**SMALL, "layer_types": [SLIDING] * 6},
    "no-ple-biases": {**SMALL, "hidden_size_per_layer_input": 0, "attention_bias": True},
    "bidirectional": {**SMALL, "use_bidirectional_attention": "all"},
    "moe-small": {**SMALL, "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 8},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_gemma4_text_equals_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("name", ["small", "moe-small", "kv-shared-double-mlp"])
def test_every_gemma4_text_class(name):
    expect_all_classes(CONFIGS[name])


def test_moe_active_per_token():
    """The dense MLP always runs; k of E experts; the router's scales are all used."""
    m = from_config(MOE_LIKE, "t")
    e, k, h, i_e, n = 128, 8, 2816, 704, 6
    assert m.total - m.active_total == n * (e - k) * 3 * h * i_e


@pytest.mark.parametrize(
    "name",
    ["small", "kv-shared-double-mlp", "k-eq-v-global-kv", "per-layer-config", "moe-small", "bidirectional"],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gemma4_text_cache_equals_transformers(name, dtype):
    """Sliding layers keep W−1 tokens, global ones every token with their own head shape; the
    KV-shared layers keep nothing."""
    fields = {k: v for k, v in CONFIGS[name].items() if k != "model_type"}
    expect_cache("gemma4_text", fields, "Gemma4ForCausalLM", tokens=9, dtype=dtype)


def test_shared_layers_keep_no_cache_and_say_so():
    m = from_config(E2B_LIKE, "t")
    cache = kv_cache(m, 4096)
    assert sum(r.kind.layers for r in cache.layers) == 15
    assert any("20 KV-shared layers keep no cache" in n for n in cache.notes)
    assert any("last 20 layers reuse" in n for n in m.notes)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"layer_types": [SLIDING] * 5}, "layer_types"),
        ({"num_kv_shared_layers": 7}, "num_kv_shared_layers"),
        ({"num_kv_shared_layers": 4}, "num_kv_shared_layers"),  # the producers hold no full layer
        ({"per_layer_config": {"2": {"head_dim": 12}}}, "per_layer_config"),  # full layers differ
        ({"per_layer_config": {"2": {"intermediate_size": 12}}}, "per_layer_config.2"),
        ({"per_layer_config": {"9": {"head_dim": 12}}}, "per_layer_config.9"),
        ({"enable_moe_block": True}, "num_experts"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ],
)
def test_impossible_configs_are_refused(change, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **change}, "t")
    assert e.value.field == field
