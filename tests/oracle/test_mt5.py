import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_class, expect_same
from .test_t5 import expect_checkpoint_head

GEN = ["MT5ForConditionalGeneration"]

# Published mT5 configs: tie_word_embeddings false, and the checkpoints store lm_head.weight.
UNTIED = {
    # google/mt5-small: 300,176,768 parameters
    "mt5-small": {
        "model_type": "mt5",
        "architectures": GEN,
        "d_ff": 1024,
        "d_kv": 64,
        "d_model": 512,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 8,
        "num_heads": 6,
        "num_layers": 8,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "tokenizer_class": "T5Tokenizer",
        "vocab_size": 250112,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "decoder_start_token_id": 0,
    },
    # google/mt5-base: 582,401,280
    "mt5-base": {
        "model_type": "mt5",
        "architectures": GEN,
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 768,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 12,
        "num_heads": 12,
        "num_layers": 12,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "vocab_size": 250112,
    },
}

PUBLISHED = {"mt5-small": 300_176_768, "mt5-base": 582_401_280}

SMALL = {"d_model": 64, "d_kv": 16, "d_ff": 96, "num_heads": 4, "num_layers": 2, "vocab_size": 300}

CONFIGS = {
    # MT5Config's own defaults (gated GELU, 250k vocabulary, 8 layers of 6 heads), head tied
    "defaults": {"model_type": "mt5"},
    "defaults-generation": {"model_type": "mt5", "architectures": GEN},
    "relu-asymmetric": {
        "model_type": "mt5",
        **SMALL,
        "feed_forward_proj": "relu",
        "num_decoder_layers": 3,
        "architectures": GEN,
    },
    "encoder-only": {"model_type": "mt5", **SMALL, "architectures": ["MT5EncoderModel"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mt5_matches_transformers(name):
    assert not expect_same(CONFIGS[name]).notes


@pytest.mark.parametrize("name", UNTIED)
def test_mt5_untied_head_follows_the_checkpoint(name):
    expect_checkpoint_head(UNTIED[name])
    assert from_config(UNTIED[name], "test").total == PUBLISHED[name]


def test_mt5_untied_other_classes_match():
    raw = {"model_type": "mt5", **SMALL, "tie_word_embeddings": False, "num_labels": 3}
    for cls in ("MT5Model", "MT5ForSequenceClassification", "MT5ForTokenClassification", "MT5ForQuestionAnswering"):
        expect_class(raw, cls)


def test_every_mt5_class():
    expect_all_classes({"model_type": "mt5", **SMALL, "num_labels": 4})
