import pytest

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "bert"},
    "bert-base-chinese": {"model_type": "bert", "vocab_size": 21128, "architectures": ["BertForMaskedLM"]},
    "bert-large-uncased": {
        "model_type": "bert",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "architectures": ["BertForMaskedLM"],
    },
    "untied-one-type": {
        "model_type": "bert",
        "tie_word_embeddings": False,
        "type_vocab_size": 1,
        "num_hidden_layers": 2,
    },
    "decoder-cross": {
        "model_type": "bert",
        "is_decoder": True,
        "add_cross_attention": True,
        "num_hidden_layers": 2,
        "architectures": ["BertLMHeadModel"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_bert_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_bert_class():
    expect_all_classes({"model_type": "bert", "num_hidden_layers": 2, "num_labels": 5})
