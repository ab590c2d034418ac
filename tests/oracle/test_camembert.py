import pytest

from paramcount.frontends import catalog
from paramcount.memory.context.kv_cache import kv_cache

from ..cache_oracle import build, expect_cache, forward, ours
from .oracle import expect_all_classes, expect_same

BASE = {
    "model_type": "camembert",
    "architectures": ["CamembertForMaskedLM"],
    "vocab_size": 32005,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 514,
    "type_vocab_size": 1,
    "layer_norm_eps": 1e-05,
}
CONFIGS = {
    "defaults": {"model_type": "camembert"},
    # almanach/camembert-base (its fine-tunes, e.g. TextToKids/CamemBERT-base-EmoTextToKids, quote it)
    "camembert-base": BASE,
    # almanach/camembert-large: RoBERTa-large shapes over the same 32,005-token vocabulary
    "camembert-large": {
        **BASE,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
    },
    "untied-sequence-classifier": {
        "model_type": "camembert",
        "architectures": ["CamembertForSequenceClassification"],
        "num_labels": 19,
        "tie_word_embeddings": False,
        "num_hidden_layers": 2,
    },
    "decoder-with-cross-attention": {
        "model_type": "camembert",
        "architectures": ["CamembertForCausalLM"],
        "is_decoder": True,
        "add_cross_attention": True,
        "num_hidden_layers": 2,
    },
}
SMALL = {
    "model_type": "camembert",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "num_labels": 3,
}


@pytest.mark.parametrize("name", CONFIGS)
def test_camembert_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_camembert_class():
    expect_all_classes(SMALL)


def test_camembert_cache():
    # An encoder: no cache unless it runs as a decoder.
    assert forward(build("camembert", SMALL, "CamembertModel"), tokens=9) is None
    assert kv_cache(ours("camembert", SMALL, "CamembertModel"), 9, batch=2).bytes == 0
    decoder = {**SMALL, "is_decoder": True}
    expect_cache("camembert", decoder, "CamembertForCausalLM", tokens=9, batch=2, dtype="fp32")
    expect_cache("camembert", decoder, "CamembertForCausalLM", tokens=9, batch=2, dtype="bf16")


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "camembert"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_camembert_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
