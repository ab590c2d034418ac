import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SMALL = {"model_type": "mpt", "d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 1000, "max_seq_len": 64}

MOSAIC = {
    "model_type": "mpt",
    "architectures": ["MPTForCausalLM"],
    "expansion_ratio": 4,
    "no_bias": True,
    "learned_pos_emb": True,
    "vocab_size": 50432,
    "attn_config": {"alibi": True, "attn_type": "multihead_attention", "qk_ln": False, "clip_qkv": None},
}

CONFIGS = {
    "defaults": {"model_type": "mpt"},
    # mosaicml/mpt-7b (config.json)
    "mpt-7b": {**MOSAIC, "d_model": 4096, "n_heads": 32, "n_layers": 32, "max_seq_len": 2048},
    # mosaicml/mpt-30b (config.json)
    "mpt-30b": {**MOSAIC, "d_model": 7168, "n_heads": 64, "n_layers": 48, "max_seq_len": 8192},
    "untied-clip": {**SMALL, "tie_word_embeddings": False, "attn_config": {"clip_qkv": 6.0, "alibi_bias_max": 16}},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mpt_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mpt_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_mpt_cache():
    expect_cache("mpt", SMALL, "MptForCausalLM")


def test_mpt_notes_fields_transformers_ignores():
    odd = {**SMALL, "expansion_ratio": 8, "no_bias": False, "attn_config": {"attn_type": "multiquery_attention"}}
    said = " ".join(from_config(odd, "test").notes)
    assert "expansion_ratio 8" in said and "no_bias" in said and "multiquery_attention" in said
    assert not from_config(SMALL, "test").notes


@pytest.mark.parametrize(("fields", "field"), [({"d_model": 65}, "n_heads"), ({"attn_config": 3}, "attn_config")])
def test_mpt_refuses(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "test")


def test_mosaicmls_own_class_casing_names_the_transformers_class():
    """MPT's config.json names MPTForCausalLM; transformers' class is MptForCausalLM."""
    model = from_config({"model_type": "mpt", "architectures": ["MPTForCausalLM"], "n_layers": 2}, "t")
    assert model.class_name == "MptForCausalLM" and not any("not modelled" in n for n in model.notes)
