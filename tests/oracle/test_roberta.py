import pytest

from paramcount.frontends import catalog

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "roberta"},
    # FacebookAI/roberta-base
    "roberta-base": {
        "model_type": "roberta",
        "architectures": ["RobertaForMaskedLM"],
        "vocab_size": 50265,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
    },
    # FacebookAI/roberta-large
    "roberta-large": {
        "model_type": "roberta",
        "architectures": ["RobertaForMaskedLM"],
        "vocab_size": 50265,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
    },
    # distilbert/distilroberta-base: a RoBERTa with 6 layers
    "distilroberta-base": {
        "model_type": "roberta",
        "architectures": ["RobertaForMaskedLM"],
        "num_hidden_layers": 6,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
    },
    # labels from id2label, as in cardiffnlp/twitter-roberta-base-sentiment (3 labels); 2 layers to stay small
    "sentiment-id2label": {
        "model_type": "roberta",
        "architectures": ["RobertaForSequenceClassification"],
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
        "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
        "num_hidden_layers": 2,
    },
    "untied-no-segments": {
        "model_type": "roberta",
        "architectures": ["RobertaForMaskedLM"],
        "tie_word_embeddings": False,
        "type_vocab_size": 0,
        "num_hidden_layers": 2,
        "hidden_size": 96,
        "num_attention_heads": 3,
        "intermediate_size": 200,
        "vocab_size": 1000,
    },
    "decoder-cross": {
        "model_type": "roberta",
        "architectures": ["RobertaForCausalLM"],
        "is_decoder": True,
        "add_cross_attention": True,
        "num_hidden_layers": 2,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_roberta_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_roberta_class():
    expect_all_classes(
        {
            "model_type": "roberta",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 5,
        }
    )


def test_roberta_base_total():
    # RobertaModel for roberta-base: the 124.6M figure the model card gives (pooler included).
    model = expect_same(CONFIGS["roberta-base"], "base")
    assert model.total == 124_645_632


# The bundled catalog's real config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "roberta"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_roberta_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
