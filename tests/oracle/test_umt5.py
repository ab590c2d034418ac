import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_seq2seq_cache
from .oracle import expect_all_classes, expect_same
from .test_t5 import expect_checkpoint_head

GEN = ["UMT5ForConditionalGeneration"]

# Published UMT5 configs: the checkpoints store their own lm_head.weight (tie_word_embeddings false).
UNTIED = {
    # google/umt5-base, as mlx-speech's LongCat AudioDiT test quotes its text_encoder_config
    "umt5-base": {
        "model_type": "umt5",
        "architectures": GEN,
        "d_model": 768,
        "d_ff": 2048,
        "d_kv": 64,
        "num_heads": 12,
        "num_layers": 12,
        "num_decoder_layers": 12,
        "vocab_size": 256384,
        "tie_word_embeddings": False,
    },
    # google/umt5-xxl (the Wan 2.1 text encoder), as ComfyUI's umt5_config_xxl.json
    "umt5-xxl": {
        "model_type": "umt5",
        "architectures": GEN,
        "d_ff": 10240,
        "d_kv": 64,
        "d_model": 4096,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 24,
        "num_heads": 64,
        "num_layers": 24,
        "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128,
        "tie_word_embeddings": False,
        "vocab_size": 256384,
    },
}

SMALL = {"d_model": 64, "d_kv": 16, "d_ff": 96, "num_heads": 4, "num_layers": 3, "vocab_size": 300}

CONFIGS = {
    "defaults": {"model_type": "umt5"},
    "defaults-generation": {"model_type": "umt5", "architectures": GEN},
    "relu-asymmetric-buckets": {
        "model_type": "umt5",
        **SMALL,
        "feed_forward_proj": "relu",
        "num_decoder_layers": 2,
        "relative_attention_num_buckets": 40,
        "architectures": GEN,
    },
    "one-layer": {"model_type": "umt5", **SMALL, "num_layers": 1, "architectures": GEN},
    "encoder-only": {"model_type": "umt5", **SMALL, "architectures": ["UMT5EncoderModel"]},
    "encoder-only-xxl": {**UNTIED["umt5-xxl"], "architectures": ["UMT5EncoderModel"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_umt5_matches_transformers(name):
    assert not expect_same(CONFIGS[name]).notes


@pytest.mark.parametrize("name", UNTIED)
def test_umt5_untied_head_follows_the_checkpoint(name):
    expect_checkpoint_head(UNTIED[name])


def test_every_block_has_its_own_relative_bias():
    # One (buckets × heads) table per self-attention: 3 encoder + 2 decoder blocks, none in cross-attention.
    raw = {"model_type": "umt5", **SMALL, "num_decoder_layers": 2}
    umt5, mt5 = from_config(raw, "test"), from_config({**raw, "model_type": "mt5"}, "test")
    assert umt5.total - mt5.total == (5 - 2) * 32 * 4


def test_every_umt5_class():
    expect_all_classes({"model_type": "umt5", **SMALL, "num_labels": 3})


def test_umt5_cache():
    fields = {"model_type": "umt5", **SMALL, "num_decoder_layers": 2}
    fields.pop("vocab_size")
    for dtype in ("fp32", "bf16"):
        expect_seq2seq_cache("umt5", fields, "UMT5ForConditionalGeneration", dtype=dtype)


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "umt5"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_umt5_catalog_entries_follow_the_checkpoint(entry):
    expect_checkpoint_head(entry.config)
