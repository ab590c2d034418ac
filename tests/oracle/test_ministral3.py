import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "ministral3", "architectures": ["Ministral3ForCausalLM"]}

# the text model (text_config) of mistralai/Ministral-3-8B-Instruct-2512
MINISTRAL3_8B = {
    **CAUSAL,
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 34,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": False,
}

CONFIGS = {
    "defaults": {"model_type": "ministral3"},
    "ministral-3-8b": MINISTRAL3_8B,
    # the text model of mistralai/Ministral-3-3B-Instruct-2512: tied head
    "ministral-3-3b": {
        **MINISTRAL3_8B,
        "hidden_size": 3072,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "tie_word_embeddings": True,
    },
    # the text model of mistralai/Ministral-3-14B-Instruct-2512
    "ministral-3-14b": {**MINISTRAL3_8B, "hidden_size": 5120, "intermediate_size": 16384, "num_hidden_layers": 40},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_ministral3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_ministral3_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {"model_type": "ministral3", **small, "num_key_value_heads": 2, "vocab_size": 1000, "num_labels": 3}
    )


def test_ministral3_refuses_null_where_transformers_types_an_int():
    for field in ("head_dim", "num_key_value_heads"):
        with pytest.raises(ParamcountError, match=field):
            from_config({**CAUSAL, field: None}, "t")


@pytest.mark.parametrize(
    "fields", [{}, {"sliding_window": 4}, {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 3}]
)
def test_ministral3_cache(fields):
    tiny = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "head_dim": 16,
    }
    expect_cache("ministral3", {**tiny, "num_key_value_heads": 2, **fields}, "Ministral3ForCausalLM")
