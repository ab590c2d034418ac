import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_seq2seq_cache
from .oracle import expect_all_classes, expect_same

MT = ["MarianMTModel"]
# An OPUS-MT release config (Helsinki-NLP/opus-mt-en-de's shapes), as an MLX seq2seq port's test quotes it.
OPUS = {
    "model_type": "marian",
    "architectures": MT,
    "vocab_size": 58101,
    "d_model": 512,
    "encoder_layers": 6,
    "decoder_layers": 6,
    "encoder_attention_heads": 8,
    "decoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "decoder_ffn_dim": 2048,
    "activation_function": "swish",
    "scale_embedding": True,
    "pad_token_id": 58100,
    "eos_token_id": 0,
    "decoder_start_token_id": 58100,
    "max_position_embeddings": 512,
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
    "pad_token_id": 299,
}
SEPARATE = {**SMALL, "share_encoder_decoder_embeddings": False, "decoder_vocab_size": 200, "pad_token_id": 1}
CONFIGS = {
    "defaults": {"model_type": "marian"},
    "opus-mt": OPUS,
    # a big-transformer OPUS-MT shape (opus-mt-tc-big: 6+6 layers of width 1024, 16 heads, 4096)
    "opus-mt-big-shape": {
        **OPUS,
        "d_model": 1024,
        "encoder_attention_heads": 16,
        "decoder_attention_heads": 16,
        "encoder_ffn_dim": 4096,
        "decoder_ffn_dim": 4096,
        "max_position_embeddings": 1024,
    },
    "separate-vocabularies": {"model_type": "marian", **SEPARATE, "architectures": MT},
    "separate-vocabularies-backbone": {"model_type": "marian", **SEPARATE},
    "separate-untied": {"model_type": "marian", **SEPARATE, "tie_word_embeddings": False, "architectures": MT},
    "shared-untied": {"model_type": "marian", **SMALL, "tie_word_embeddings": False, "architectures": MT},
    "causal-lm": {"model_type": "marian", **SMALL, "architectures": ["MarianForCausalLM"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_marian_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_marian_class():
    expect_all_classes({"model_type": "marian", **SMALL})
    expect_all_classes({"model_type": "marian", **SEPARATE})


def test_frozen_positions_are_parameters_and_said():
    model = from_config(OPUS, "test")
    assert any("2 × " in n or "frozen sinusoidal" in n for n in model.notes)
    assert any(f"{2 * 512 * 512:,} frozen" in n for n in model.notes)


def test_impossible_vocabularies_are_refused():
    with pytest.raises(ParamcountError, match="decoder_vocab_size"):
        from_config({"model_type": "marian", **SMALL, "decoder_vocab_size": 200, "pad_token_id": 1}, "test")
    with pytest.raises(ParamcountError, match="pad_token_id"):
        from_config({"model_type": "marian", **SEPARATE, "pad_token_id": 250}, "test")


def test_marian_cache():
    fields = {**SMALL, "vocab_size": 64, "pad_token_id": 63}
    for dtype in ("fp32", "bf16"):
        expect_seq2seq_cache("marian", fields, "MarianMTModel", dtype=dtype)


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "marian"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_marian_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
