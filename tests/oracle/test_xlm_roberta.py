import pytest

from paramcount.frontends import catalog

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "xlm-roberta"},
    # FacebookAI/xlm-roberta-base
    "xlm-roberta-base": {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaForMaskedLM"],
        "vocab_size": 250002,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
    },
    # FacebookAI/xlm-roberta-large
    "xlm-roberta-large": {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaForMaskedLM"],
        "vocab_size": 250002,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
    },
    # sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2: a small XLM-R (384 wide, 12 layers)
    "multilingual-minilm-l12": {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaModel"],
        "vocab_size": 250037,
        "hidden_size": 384,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 1536,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    "untied-token-classifier": {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaForTokenClassification"],
        "num_labels": 9,
        "tie_word_embeddings": False,
        "num_hidden_layers": 2,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_xlm_roberta_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_xlm_roberta_class():
    expect_all_classes(
        {
            "model_type": "xlm-roberta",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
        }
    )


def test_xlm_roberta_large_total():
    # XLMRobertaModel for xlm-roberta-large: the familiar ~560M, pooler included.
    model = expect_same(CONFIGS["xlm-roberta-large"], "base")
    assert model.total == 559_890_432


# The bundled catalog's real config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "xlm-roberta"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_xlm_roberta_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
