import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_class, expect_same

CONFIGS = {
    "defaults": {"model_type": "distilbert"},
    # distilbert/distilbert-base-uncased (its file says dim/n_layers/n_heads/hidden_dim)
    "distilbert-base-uncased": {
        "model_type": "distilbert",
        "architectures": ["DistilBertForMaskedLM"],
        "vocab_size": 30522,
        "dim": 768,
        "n_layers": 6,
        "n_heads": 12,
        "hidden_dim": 3072,
        "max_position_embeddings": 512,
        "sinusoidal_pos_embds": False,
        "tie_weights_": True,
    },
    # distilbert/distilbert-base-multilingual-cased
    "distilbert-base-multilingual-cased": {
        "model_type": "distilbert",
        "architectures": ["DistilBertForMaskedLM"],
        "vocab_size": 119547,
        "dim": 768,
        "n_layers": 6,
        "n_heads": 12,
        "hidden_dim": 3072,
        "max_position_embeddings": 512,
        "sinusoidal_pos_embds": False,
    },
    # distilbert/distilbert-base-uncased-finetuned-sst-2-english: 2 labels from id2label
    "distilbert-sst2": {
        "model_type": "distilbert",
        "architectures": ["DistilBertForSequenceClassification"],
        "vocab_size": 30522,
        "dim": 768,
        "n_layers": 6,
        "n_heads": 12,
        "hidden_dim": 3072,
        "max_position_embeddings": 512,
        "id2label": {"0": "NEGATIVE", "1": "POSITIVE"},
    },
    "standard-names-sinusoidal-untied": {
        "model_type": "distilbert",
        "architectures": ["DistilBertForMaskedLM"],
        "hidden_size": 128,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "hidden_dim": 300,
        "sinusoidal_pos_embds": True,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_distilbert_matches_transformers(name):
    expect_same(CONFIGS[name])


SMALL = {"model_type": "distilbert", "n_layers": 2, "dim": 64, "n_heads": 4, "hidden_dim": 128, "vocab_size": 1000}


def test_every_distilbert_class():
    expect_all_classes(SMALL)


@pytest.mark.parametrize("cls", ["DistilBertForSequenceClassification", "DistilBertForTokenClassification"])
def test_distilbert_label_heads(cls):
    expect_class({**SMALL, "num_labels": 5}, cls)


def test_distilbert_qa_needs_two_labels():
    # transformers raises ValueError for DistilBertForQuestionAnswering with num_labels != 2.
    with pytest.raises(ParamcountError, match="num_labels"):
        from_config({**SMALL, "num_labels": 3}, "test", model_class="DistilBertForQuestionAnswering")


def test_distilbert_base_total():
    # DistilBertModel for distilbert-base-uncased: the 66M of the paper.
    model = expect_same(CONFIGS["distilbert-base-uncased"], "base")
    assert model.total == 66_362_880


def test_sinusoidal_positions_are_counted_and_said():
    model = from_config(CONFIGS["standard-names-sinusoidal-untied"], "test")
    assert any(leaf.name == "distilbert.embeddings.position_embeddings.weight" for leaf in model.tensors())
    assert any("sinusoidal" in n for n in model.notes)


# The bundled catalog's real config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "distilbert"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_distilbert_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
