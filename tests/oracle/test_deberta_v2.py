import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_layout import attention_layout

from .oracle import expect_all_classes, expect_class, expect_same

V3 = {
    "model_type": "deberta-v2",
    "max_position_embeddings": 512,
    "relative_attention": True,
    "position_buckets": 256,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
    "pos_att_type": "p2c|c2p",
    "max_relative_positions": -1,
    "position_biased_input": False,
    "type_vocab_size": 0,
    "vocab_size": 128100,
}
# Count-relevant fields of the published config.json files.
REAL = {
    "deberta-v3-base": {
        **V3,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
    },
    # a classifier fine-tuned from microsoft/deberta-v3-large keeps its config (pos_att_type as a list)
    "deberta-v3-large-cola": {
        **V3,
        "architectures": ["DebertaV2ForSequenceClassification"],
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "pos_att_type": ["p2c", "c2p"],
        "pooler_hidden_size": 1024,
        "id2label": {"0": "unacceptable", "1": "acceptable"},
    },
    # microsoft/deberta-v2-xxlarge: a convolution after the first layer, 64-wide heads
    "deberta-v2-xxlarge": {
        **V3,
        "attention_head_size": 64,
        "conv_act": "gelu",
        "conv_kernel_size": 3,
        "hidden_size": 1536,
        "intermediate_size": 6144,
        "num_attention_heads": 24,
        "num_hidden_layers": 48,
        "pos_att_type": ["p2c", "c2p"],
        "pooler_hidden_size": 1536,
    },
}
SMALL = {
    "model_type": "deberta-v2",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 300,
}
TINY_V3 = {**SMALL, **{k: v for k, v in V3.items() if k != "vocab_size"}, "position_buckets": 16}
MLM = ["DebertaV2ForMaskedLM"]
ODD = {
    "defaults": {"model_type": "deberta-v2"},
    # DeBERTa-v2 style: absolute positions and segments, no relative attention
    "absolute-only": {**SMALL, "type_vocab_size": 2, "architectures": MLM},
    "own-position-projections": {**TINY_V3, "share_att_key": False, "architectures": MLM},
    "c2p-only-span": {
        **TINY_V3,
        "share_att_key": False,
        "pos_att_type": ["c2p"],
        "position_buckets": -1,
        "max_relative_positions": 7,
        "architectures": MLM,
    },
    "span-from-positions": {**TINY_V3, "position_buckets": 0, "norm_rel_ebd": "none", "architectures": MLM},
    "narrow-embeddings-untied": {
        **TINY_V3,
        "embedding_size": 32,
        "position_biased_input": True,
        "tie_word_embeddings": False,
        "architectures": MLM,
    },
    "non-legacy-head": {**TINY_V3, "legacy": False, "architectures": MLM},
    "grouped-conv": {**TINY_V3, "conv_kernel_size": 5, "conv_groups": 4, "architectures": MLM},
    "wide-heads-pooler": {
        **TINY_V3,
        "attention_head_size": 8,
        "pooler_hidden_size": 48,
        "num_labels": 3,
        "architectures": ["DebertaV2ForSequenceClassification"],
    },
}


@pytest.mark.parametrize("name", [*REAL, *ODD])
def test_deberta_v2_matches_transformers(name):
    expect_same({**REAL, **ODD}[name])


def test_every_deberta_v2_class():
    expect_all_classes({**SMALL, "num_labels": 5})
    expect_all_classes({**TINY_V3, "num_labels": 3, "share_att_key": False, "conv_kernel_size": 3})


def test_relative_table_and_shared_keys():
    model = expect_class({**TINY_V3, "architectures": MLM})
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert shapes["deberta.encoder.rel_embeddings.weight"] == (32, 64)
    assert "deberta.encoder.LayerNorm.weight" in shapes
    assert "deberta.embeddings.position_embeddings.weight" not in shapes
    assert not any("pos_key_proj" in name for name in shapes)
    assert {name: target for name, target, _ in model.ties()} == {
        "cls.predictions.decoder.weight": "deberta.embeddings.word_embeddings.weight",
        "cls.predictions.decoder.bias": "cls.predictions.bias",
    }


def test_an_encoder_keeps_no_cache():
    assert not attention_layout(from_config(REAL["deberta-v3-base"], "test")).kinds


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_attention_heads": 5}, "hidden_size"),
        ({"pad_token_id": 300}, "pad_token_id"),
        ({"pos_att_type": 3}, "pos_att_type"),
        ({"conv_kernel_size": 3, "conv_groups": 5}, "conv_groups"),
        ({"relative_attention": True, "position_buckets": "many"}, "position_buckets"),
    ],
)
def test_impossible_configs_are_refused(change, field):
    with pytest.raises(ParamcountError) as err:
        from_config({**SMALL, **change}, "test")
    assert err.value.field == field


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "deberta-v2"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_deberta_v2_catalog_entries_match_transformers(entry):
    expect_same(entry.config)


@pytest.mark.parametrize("cls", ["DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification"])
def test_a_checkpoint_maps_onto_the_tree(tmp_path, cls):
    from ..ckpt import build, save, state, total, write_config

    raw = {**TINY_V3, "architectures": [cls]}
    model = build(raw)
    save(tmp_path / "model.safetensors", state(model))
    write_config(tmp_path, raw)
    counted = paramcount.load(tmp_path)
    assert counted.class_name == cls and counted.total == total(model)
    assert counted.checkpoint.differences == ()
