import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "bloom", "architectures": ["BloomForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "bloom"},
    # bigscience/bloom-560m
    "bloom-560m": {
        **CAUSAL,
        "vocab_size": 250880,
        "hidden_size": 1024,
        "n_layer": 24,
        "n_head": 16,
        "pretraining_tp": 1,
        "slow_but_exact": False,
    },
    # bigscience/bloom-7b1
    "bloom-7b1": {
        **CAUSAL,
        "vocab_size": 250880,
        "hidden_size": 4096,
        "n_layer": 30,
        "n_head": 32,
        "pretraining_tp": 1,
    },
    # Langboat/bloom-1b4-zh (bloom-1b7 with a pruned Chinese vocabulary), width given by the legacy n_embed
    "bloom-1b4-zh": {**CAUSAL, "vocab_size": 46145, "n_embed": 2048, "n_layer": 24, "n_head": 16},
    "untied-standard-names": {
        **CAUSAL,
        "vocab_size": 1000,
        "hidden_size": 96,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "tie_word_embeddings": False,
    },
    # n_embed wins over hidden_size in BloomConfig; the standard names win over n_layer / n_head.
    "n_embed-overrides": {
        **CAUSAL,
        "vocab_size": 1000,
        "hidden_size": 128,
        "n_embed": 64,
        "n_layer": 5,
        "num_hidden_layers": 2,
        "n_head": 8,
        "num_attention_heads": 4,
    },
}

# Totals published for these checkpoints (the hub's, and the seed article's for bloom-1b4-zh).
PUBLISHED = {"bloom-560m": 559_214_592, "bloom-7b1": 7_069_016_064, "bloom-1b4-zh": 1_303_111_680}


@pytest.mark.parametrize("name", CONFIGS)
def test_bloom_matches_transformers(name):
    model = expect_same(CONFIGS[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


@pytest.mark.parametrize("width", ["n_embed", "hidden_size"])
def test_bloom_1b4_zh_seed_total(width):
    raw = {**CAUSAL, "vocab_size": 46145, width: 2048, "n_layer": 24, "n_head": 16}
    model = from_config(raw, "Langboat/bloom-1b4-zh")
    assert model.class_name == "BloomForCausalLM"
    assert model.total == 1_303_111_680
    assert model.total_with_ties == 1_303_111_680 + 46145 * 2048  # the tied head counted again


def test_every_bloom_class():
    expect_all_classes(
        {"model_type": "bloom", "n_layer": 2, "hidden_size": 64, "n_head": 4, "vocab_size": 1000, "num_labels": 3}
    )
