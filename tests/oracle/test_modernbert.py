import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_layout import attention_layout

from .oracle import expect_all_classes, expect_class, expect_same

MLM = ["ModernBertForMaskedLM"]
COMMON = {
    "model_type": "modernbert",
    "architectures": MLM,
    "vocab_size": 50368,
    "max_position_embeddings": 8192,
    "global_attn_every_n_layers": 3,
    "local_attention": 128,
    "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0,
    "norm_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "decoder_bias": True,
    "classifier_bias": False,
    "classifier_pooling": "mean",
    "pad_token_id": 50283,
    "tie_word_embeddings": True,
}
# Count-relevant fields of the published config.json files.
REAL = {
    "ModernBERT-base": {
        **COMMON,
        "hidden_size": 768,
        "intermediate_size": 1152,
        "num_attention_heads": 12,
        "num_hidden_layers": 22,
    },
    "ModernBERT-large": {
        **COMMON,
        "hidden_size": 1024,
        "intermediate_size": 2624,
        "num_attention_heads": 16,
        "num_hidden_layers": 28,
    },
}
SMALL = {
    "model_type": "modernbert",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "vocab_size": 300,
    "pad_token_id": 0,
}
BIASES = {"norm_bias": True, "attention_bias": True, "mlp_bias": True, "classifier_bias": True}
ODD = {
    "defaults": {"model_type": "modernbert"},
    "all-biases-untied": {**SMALL, **BIASES, "tie_word_embeddings": False, "architectures": MLM},
    "no-decoder-bias": {**SMALL, "decoder_bias": False, "architectures": MLM},
    "one-layer": {**SMALL, "num_hidden_layers": 1, "architectures": MLM},
    "layer-types": {
        **SMALL,
        "layer_types": ["full_attention", "full_attention", "sliding_attention", "full_attention"],
        "architectures": MLM,
    },
    "every-layer-global": {
        **SMALL,
        "global_attn_every_n_layers": 1,
        "architectures": ["ModernBertForQuestionAnswering"],
    },
    "classifier": {
        **SMALL,
        **BIASES,
        "classifier_pooling": "cls",
        "num_labels": 7,
        "architectures": ["ModernBertForSequenceClassification"],
    },
}


@pytest.mark.parametrize("name", [*REAL, *ODD])
def test_modernbert_matches_transformers(name):
    expect_same({**REAL, **ODD}[name])


def test_every_modernbert_class():
    expect_all_classes({**SMALL, "num_labels": 5})
    expect_all_classes({**SMALL, **BIASES, "num_labels": 3, "tie_word_embeddings": False})


def test_layer_zero_has_no_attention_norm_and_global_layers_move_nothing():
    model = expect_class({**SMALL, "architectures": MLM})
    names = {leaf.name for leaf in model.tensors()}
    assert "model.layers.0.attn_norm.weight" not in names
    assert "model.layers.1.attn_norm.weight" in names
    assert "model.layers.0.mlp_norm.bias" not in names  # norm_bias false
    every = from_config({**SMALL, "global_attn_every_n_layers": 1}, "test")
    assert every.total == from_config(SMALL, "test").total


def test_an_encoder_keeps_no_cache():
    assert not attention_layout(from_config(REAL["ModernBERT-base"], "test")).kinds


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_attention_heads": 5}, "hidden_size"),
        ({"pad_token_id": 300}, "pad_token_id"),
        ({"global_attn_every_n_layers": 0}, "global_attn_every_n_layers"),
        ({"layer_types": ["full_attention"]}, "layer_types"),
    ],
)
def test_impossible_configs_are_refused(change, field):
    with pytest.raises(ParamcountError) as err:
        from_config({**SMALL, **change}, "test")
    assert err.value.field == field


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "modernbert"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_modernbert_catalog_entries_match_transformers(entry):
    expect_same(entry.config)


@pytest.mark.parametrize("cls", ["ModernBertForMaskedLM", "ModernBertForSequenceClassification"])
def test_a_checkpoint_maps_onto_the_tree(tmp_path, cls):
    from ..ckpt import build, save, state, total, write_config

    raw = {**SMALL, "architectures": [cls]}
    model = build(raw)
    save(tmp_path / "model.safetensors", state(model))
    write_config(tmp_path, raw)
    counted = paramcount.load(tmp_path)
    assert counted.class_name == cls and counted.total == total(model)
    assert counted.checkpoint.differences == ()
