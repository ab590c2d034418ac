import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_seq2seq_cache
from .oracle import expect_all_classes, expect_same

GEN = ["M2M100ForConditionalGeneration"]
BASE = {
    "model_type": "m2m_100",
    "architectures": GEN,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "activation_function": "relu",
    "scale_embedding": True,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}
REAL = {
    # facebook/m2m100_418M, as an MLX seq2seq port's test quotes the release config
    "m2m100_418M": {**BASE, "vocab_size": 128112},
    # facebook/nllb-200-distilled-600M (a trimmed copy of its config.json in brolm's tests)
    "nllb-200-distilled-600M": {**BASE, "vocab_size": 256206, "max_position_embeddings": 1024},
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
    "defaults": {"model_type": "m2m_100"},
    **REAL,
    "untied": {"model_type": "m2m_100", **SMALL, "tie_word_embeddings": False, "architectures": GEN},
    "untied-backbone": {"model_type": "m2m_100", **SMALL, "tie_word_embeddings": False},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_m2m_100_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_m2m_100_class():
    expect_all_classes({"model_type": "m2m_100", **SMALL})


def test_sinusoidal_positions_are_buffers():
    # The position table is a buffer: the context length moves no parameter.
    short = from_config({"model_type": "m2m_100", **SMALL}, "test")
    long = from_config({"model_type": "m2m_100", **SMALL, "max_position_embeddings": 4096}, "test")
    assert short.total == long.total


def test_m2m_100_cache():
    for dtype in ("fp32", "bf16"):
        expect_seq2seq_cache("m2m_100", {**SMALL, "vocab_size": 64}, GEN[0], dtype=dtype)


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "m2m_100"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_m2m_100_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
