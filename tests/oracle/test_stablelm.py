import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "stablelm", "architectures": ["StableLmForCausalLM"]}

# stabilityai/stablelm-2-1_6b: q/k/v biases, sequential residual, untied head
STABLELM2_1_6B = {
    **CAUSAL,
    "vocab_size": 100352,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "partial_rotary_factor": 0.25,
    "use_qkv_bias": True,
    "qk_layernorm": False,
    "use_parallel_residual": False,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "stablelm"},
    "stablelm-2-1.6b": STABLELM2_1_6B,
    # stabilityai/stablelm-2-12b: per-head q/k LayerNorms, parallel residual, GQA 32/8
    "stablelm-2-12b": {
        **STABLELM2_1_6B,
        "hidden_size": 5120,
        "intermediate_size": 13824,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "use_qkv_bias": False,
        "qk_layernorm": True,
        "use_parallel_residual": True,
    },
    # stabilityai/stablelm-3b-4e1t
    "stablelm-3b-4e1t": {
        **CAUSAL,
        "vocab_size": 50304,
        "hidden_size": 2560,
        "intermediate_size": 6912,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "use_qkv_bias": False,
        "tie_word_embeddings": False,
    },
    "qk-layernorm-sequential-tied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "use_qkv_bias": True,
        "qk_layernorm": True,
        "tie_word_embeddings": True,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_stablelm_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_stablelm_2_1_6b_size():
    assert expect_same(STABLELM2_1_6B).total == 1_644_515_328


def test_stablelm_per_head_norms_are_counted_once():
    model = from_config(CONFIGS["stablelm-2-12b"], "t")
    q = [t for t in model.tensors() if ".layers.0.self_attn.q_layernorm." in t.name]
    assert len(q) == 32 and all(tuple(int(d) for d in t.shape) == (160,) for t in q)
    assert not any("post_attention_layernorm" in t.name for t in model.tensors())


def test_every_stablelm_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {
            "model_type": "stablelm",
            **small,
            "num_key_value_heads": 2,
            "qk_layernorm": True,
            "vocab_size": 1000,
            "num_labels": 3,
        }
    )


def test_stablelm_refuses_what_transformers_refuses():
    with pytest.raises(ParamcountError, match="hidden_size"):
        from_config({**CAUSAL, "hidden_size": 100, "num_attention_heads": 8, "num_key_value_heads": 8}, "t")
    with pytest.raises(ParamcountError, match="num_key_value_heads"):
        from_config({**CAUSAL, "num_key_value_heads": None}, "t")


def test_stablelm_cache():
    tiny = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
    expect_cache("stablelm", {**tiny, "num_key_value_heads": 2, "qk_layernorm": True}, "StableLmForCausalLM")
