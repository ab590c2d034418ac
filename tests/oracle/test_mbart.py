import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_seq2seq_cache
from .oracle import expect_all_classes, expect_same

LARGE = {
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "scale_embedding": True,
    "pad_token_id": 1,
}
# Published configs (the shape fields as a model-zoo listing of the mBART checkpoints quotes them).
REAL = {
    # facebook/mbart-large-en-ro
    "mbart-large-en-ro": {
        "model_type": "mbart",
        "architectures": ["MBartForConditionalGeneration"],
        **LARGE,
        "vocab_size": 250027,
    },
    # facebook/mbart-large-50-many-to-many-mmt (mbart-large-50 has the same shapes)
    "mbart-large-50": {
        "model_type": "mbart",
        "architectures": ["MBartForConditionalGeneration"],
        **LARGE,
        "vocab_size": 250054,
        "activation_function": "relu",
    },
}
SMALL = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 3,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 80,
    "max_position_embeddings": 32,
    "vocab_size": 300,
}
CONFIGS = {
    "defaults": {"model_type": "mbart"},
    **REAL,
    "untied": {"model_type": "mbart", **SMALL, "tie_word_embeddings": False},
    "untied-generation": {
        "model_type": "mbart",
        **SMALL,
        "tie_word_embeddings": False,
        "architectures": ["MBartForConditionalGeneration"],
    },
    "causal-lm": {"model_type": "mbart", **SMALL, "architectures": ["MBartForCausalLM"]},
    "labels-from-id2label": {
        "model_type": "mbart",
        **SMALL,
        "architectures": ["MBartForSequenceClassification"],
        "id2label": {"0": "a", "1": "b", "2": "c", "3": "d"},
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mbart_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mbart_class():
    expect_all_classes({"model_type": "mbart", **SMALL})


def test_final_layer_norms_are_mbarts_delta_over_bart():
    raw = {"model_type": "mbart", **SMALL}
    mbart, bart = from_config(raw, "test"), from_config({**raw, "model_type": "bart"}, "test")
    assert mbart.total - bart.total == 2 * 2 * 64  # weight and bias of one LayerNorm per stack


def test_mbart_cache():
    for dtype in ("fp32", "bf16"):
        expect_seq2seq_cache("mbart", {**SMALL, "vocab_size": 64}, "MBartForConditionalGeneration", dtype=dtype)


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "mbart"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_mbart_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
