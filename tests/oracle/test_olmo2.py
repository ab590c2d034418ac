import pytest

from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"]}

# allenai/OLMo-2-1124-7B
OLMO2_7B = {
    **CAUSAL,
    "vocab_size": 100352,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "attention_bias": False,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "olmo2"},
    "olmo-2-7b": OLMO2_7B,
    # allenai/OLMo-2-1124-13B
    "olmo-2-13b": {
        **OLMO2_7B,
        "hidden_size": 5120,
        "intermediate_size": 13824,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 40,
    },
    # allenai/OLMo-2-0425-1B
    "olmo-2-1b": {
        **OLMO2_7B,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
    },
    # the q/k norms span heads × head_dim, so GQA and an explicit head_dim change their widths
    "gqa-head-dim-bias-tied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 24,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_olmo2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_olmo2_norms_follow_the_sublayers():
    model = from_config(CONFIGS["gqa-head-dim-bias-tied"], "t")
    names = {leaf.name: tuple(int(d) for d in leaf.shape) for leaf in model.tensors()}
    assert names["model.layers.0.self_attn.q_norm.weight"] == (96,)
    assert names["model.layers.0.self_attn.k_norm.weight"] == (48,)
    assert "model.layers.0.input_layernorm.weight" not in names


def test_every_olmo2_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes({"model_type": "olmo2", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3})


def test_olmo2_cache():
    tiny = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
    expect_cache("olmo2", {**tiny, "num_key_value_heads": 2, "pad_token_id": 0}, "Olmo2ForCausalLM")
