import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "albert"},
    # albert/albert-base-v2
    "albert-base-v2": {
        "model_type": "albert",
        "architectures": ["AlbertForMaskedLM"],
        "vocab_size": 30000,
        "embedding_size": 128,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "num_hidden_groups": 1,
        "inner_group_num": 1,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    # albert/albert-xxlarge-v2
    "albert-xxlarge-v2": {
        "model_type": "albert",
        "architectures": ["AlbertForMaskedLM"],
        "vocab_size": 30000,
        "embedding_size": 128,
        "hidden_size": 4096,
        "num_hidden_layers": 12,
        "num_attention_heads": 64,
        "intermediate_size": 16384,
        "num_hidden_groups": 1,
        "inner_group_num": 1,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    # albert/albert-large-v2
    "albert-large-v2": {
        "model_type": "albert",
        "architectures": ["AlbertForMaskedLM"],
        "vocab_size": 30000,
        "embedding_size": 128,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "num_hidden_groups": 1,
        "inner_group_num": 1,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    "groups-and-inner-layers": {
        "model_type": "albert",
        "architectures": ["AlbertForPreTraining"],
        "num_hidden_layers": 6,
        "num_hidden_groups": 3,
        "inner_group_num": 2,
        "hidden_size": 96,
        "num_attention_heads": 4,
        "intermediate_size": 200,
        "embedding_size": 32,
    },
    "more-groups-than-layers-untied": {
        "model_type": "albert",
        "architectures": ["AlbertForMaskedLM"],
        "num_hidden_layers": 2,
        "num_hidden_groups": 4,
        "tie_word_embeddings": False,
        "hidden_size": 64,
        "num_attention_heads": 2,
        "intermediate_size": 100,
        "embedding_size": 64,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_albert_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_albert_class():
    expect_all_classes(
        {
            "model_type": "albert",
            "num_hidden_layers": 4,
            "num_hidden_groups": 2,
            "inner_group_num": 2,
            "hidden_size": 64,
            "embedding_size": 16,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
        }
    )


def test_albert_sharing():
    # albert-base-v2: ~11.7M; depth does not change the count, groups do.
    base = expect_same(CONFIGS["albert-base-v2"], "base")
    assert base.total == 11_683_584
    deeper = from_config({**CONFIGS["albert-base-v2"], "num_hidden_layers": 48}, "test", model_class="base")
    assert deeper.total == base.total
    groups = from_config({**CONFIGS["albert-base-v2"], "num_hidden_groups": 12}, "test", model_class="base")
    layer = 4 * (768 * 768 + 768) + 4 * 768 + 2 * 768 * 3072 + 3072 + 768
    assert groups.total == base.total + 11 * layer
    assert [(g.path, g.copies) for g in groups.layers()] == [("encoder.albert_layer_groups", 12)]
    assert any("shared" in n for n in base.notes)


def test_albert_heads_must_divide_hidden():
    with pytest.raises(ParamcountError, match="not divisible"):
        from_config({"model_type": "albert", "hidden_size": 100, "num_attention_heads": 3}, "test")


# The bundled catalog's real config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "albert"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_albert_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
