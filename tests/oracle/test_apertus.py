import pytest

from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "apertus", "architectures": ["ApertusForCausalLM"]}

# swiss-ai/Apertus-8B-2509: xIELU MLP (up, down, two trainable scalars), GQA 32/8
APERTUS_8B = {
    **CAUSAL,
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 21504,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_act": "xielu",
    "max_position_embeddings": 65536,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "apertus"},
    "apertus-8b": APERTUS_8B,
    # swiss-ai/Apertus-70B-2509
    "apertus-70b": {
        **APERTUS_8B,
        "hidden_size": 8192,
        "intermediate_size": 43008,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
    },
    "relu2-bias-head-dim-tied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 24,
        "hidden_act": "relu2",
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_apertus_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_apertus_xielu_scalars_are_parameters():
    # two (1,)-shaped scalars a layer: 64 parameters in the 8B's 32 layers
    model = from_config(APERTUS_8B, "t")
    act = [t for t in model.tensors() if ".mlp.act_fn." in t.name]
    assert {t.name.rsplit(".", 1)[1] for t in act} == {"alpha_p", "alpha_n"}
    assert sum(t.count for t in act) == 64


def test_every_apertus_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {"model_type": "apertus", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3}
    )


def test_apertus_cache():
    tiny = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
    expect_cache("apertus", {**tiny, "num_key_value_heads": 2}, "ApertusForCausalLM")
