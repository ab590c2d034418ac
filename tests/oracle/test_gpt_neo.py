import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SMALL = {
    "model_type": "gpt_neo",
    "hidden_size": 64,
    "num_heads": 4,
    "num_layers": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 128,
    "attention_types": [[["global", "local"], 1]],
    "window_size": 4,
}

CONFIGS = {
    "defaults": {"model_type": "gpt_neo"},
    # EleutherAI/gpt-neo-1.3B (config.json)
    "gpt-neo-1.3B": {
        "model_type": "gpt_neo",
        "architectures": ["GPTNeoForCausalLM"],
        "vocab_size": 50257,
        "max_position_embeddings": 2048,
        "hidden_size": 2048,
        "num_layers": 24,
        "num_heads": 16,
        "attention_types": [[["global", "local"], 12]],
        "window_size": 256,
        "intermediate_size": None,
    },
    # EleutherAI/gpt-neo-125m (config.json)
    "gpt-neo-125m": {
        "model_type": "gpt_neo",
        "architectures": ["GPTNeoForCausalLM"],
        "vocab_size": 50257,
        "max_position_embeddings": 2048,
        "hidden_size": 768,
        "num_layers": 12,
        "num_heads": 12,
        "attention_types": [[["global", "local"], 6]],
        "window_size": 256,
    },
    "mixed-runs-untied-inner": {
        **SMALL,
        "num_layers": 5,
        "attention_types": [[["global"], 1], [["local", "local"], 2]],
        "intermediate_size": 100,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gpt_neo_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gpt_neo_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_gpt_neo_cache():
    expect_cache("gpt_neo", SMALL, "GPTNeoForCausalLM")


@pytest.mark.parametrize(
    "fields",
    [
        {"hidden_size": 65},
        {"num_layers": 3},
        {"attention_types": [[["global", "sparse"], 1]]},
        {"attention_types": "global"},
    ],
)
def test_gpt_neo_refuses(fields):
    field = "num_heads" if "hidden_size" in fields else "attention_types"
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "test")
