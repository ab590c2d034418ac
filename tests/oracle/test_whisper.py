import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_cache import kv_cache
from paramcount.memory.context.kv_layout import attention_layout

from ..cache_oracle import expect_cache, expect_seq2seq_cache
from .oracle import expect_all_classes, expect_class, expect_same

GEN = ["WhisperForConditionalGeneration"]
# Count-relevant fields of the published config.json files (with some they carry besides).
REAL = {
    # openai/whisper-large-v3: 128 mel bins, one more token than v2
    "whisper-large-v3": {
        "model_type": "whisper",
        "architectures": GEN,
        "d_model": 1280,
        "encoder_layers": 32,
        "decoder_layers": 32,
        "encoder_attention_heads": 20,
        "decoder_attention_heads": 20,
        "encoder_ffn_dim": 5120,
        "decoder_ffn_dim": 5120,
        "num_hidden_layers": 32,
        "num_mel_bins": 128,
        "max_source_positions": 1500,
        "max_target_positions": 448,
        "vocab_size": 51866,
        "pad_token_id": 50256,
        "bos_token_id": 50257,
        "eos_token_id": 50257,
        "decoder_start_token_id": 50258,
        "scale_embedding": False,
        "use_weighted_layer_sum": False,
        "classifier_proj_size": 256,
    },
    # openai/whisper-small
    "whisper-small": {
        "model_type": "whisper",
        "architectures": GEN,
        "d_model": 768,
        "encoder_layers": 12,
        "decoder_layers": 12,
        "encoder_attention_heads": 12,
        "decoder_attention_heads": 12,
        "encoder_ffn_dim": 3072,
        "decoder_ffn_dim": 3072,
        "num_hidden_layers": 12,
        "num_mel_bins": 80,
        "max_source_positions": 1500,
        "max_target_positions": 448,
        "vocab_size": 51865,
        "pad_token_id": 50257,
        "scale_embedding": False,
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
    "num_mel_bins": 16,
    "max_source_positions": 5,
    "max_target_positions": 24,
    "vocab_size": 300,
    "pad_token_id": 0,
}
ODD = {
    "defaults": {"model_type": "whisper"},
    "untied-generation": {"model_type": "whisper", **SMALL, "tie_word_embeddings": False, "architectures": GEN},
    "causal-lm": {"model_type": "whisper", **SMALL, "architectures": ["WhisperForCausalLM"]},
    "causal-lm-untied": {
        "model_type": "whisper",
        **SMALL,
        "tie_word_embeddings": False,
        "architectures": ["WhisperForCausalLM"],
    },
    "audio-classification-weighted": {
        "model_type": "whisper",
        **SMALL,
        "use_weighted_layer_sum": True,
        "classifier_proj_size": 40,
        "num_labels": 7,
        "architectures": ["WhisperForAudioClassification"],
    },
    # the attribute_map names for d_model, encoder_attention_heads and encoder_layers
    "standard-names": {
        "model_type": "whisper",
        "hidden_size": 48,
        "num_attention_heads": 3,
        "num_hidden_layers": 1,
        "decoder_attention_heads": 6,
        "decoder_layers": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 40,
        "vocab_size": 100,
        "pad_token_id": 1,
        "architectures": GEN,
    },
}


@pytest.mark.parametrize("name", [*REAL, *ODD])
def test_whisper_matches_transformers(name):
    expect_same({**REAL, **ODD}[name])


def test_every_whisper_class():
    expect_all_classes({"model_type": "whisper", **SMALL, "num_labels": 4})
    expect_all_classes({"model_type": "whisper", **SMALL, "tie_word_embeddings": False, "use_weighted_layer_sum": True})


def test_front_end_keys_and_ties():
    model = expect_class({"model_type": "whisper", **SMALL}, GEN[0])
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert shapes["model.encoder.conv1.weight"] == (64, 16, 3)
    assert shapes["model.encoder.conv2.weight"] == (64, 64, 3)
    assert shapes["model.encoder.embed_positions.weight"] == (5, 64)
    assert shapes["model.decoder.embed_positions.weight"] == (24, 64)
    assert "model.encoder.layers.0.self_attn.k_proj.bias" not in shapes
    assert {name: target for name, target, _ in model.ties()} == {
        "proj_out.weight": "model.decoder.embed_tokens.weight"
    }


def test_towers_sum_to_the_whole():
    model = from_config(REAL["whisper-large-v3"], "test")
    towers = model.towers()
    assert set(towers) == {"audio_encoder", "language_model"}
    assert sum(towers.values()) == model.total
    untied = from_config({"model_type": "whisper", **SMALL, "tie_word_embeddings": False}, "test", model_class=GEN[0])
    assert sum(untied.towers().values()) == untied.total
    classifier = from_config({"model_type": "whisper", **SMALL}, "test", model_class="WhisperForAudioClassification")
    assert set(classifier.towers()) == {"audio_encoder", "other"}
    assert sum(classifier.towers().values()) == classifier.total


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_whisper_cache(dtype):
    # the encoder output is max_source_positions frames: the cross-attention cache holds that many
    fields = {**SMALL, "vocab_size": 64}
    expect_seq2seq_cache("whisper", fields, GEN[0], source=SMALL["max_source_positions"], dtype=dtype)
    expect_cache("whisper", fields, "WhisperForCausalLM", dtype=dtype)


def test_cache_notes_and_the_classifier_keeps_none():
    layout = attention_layout(from_config(REAL["whisper-large-v3"], "test"))
    assert [(k.attention, k.layers, k.kv_heads, k.key_dim) for k in layout.kinds] == [
        ("full", 32, 20, 64),
        ("cross", 32, 20, 64),
    ]
    assert [k.source for k in layout.kinds] == [None, 1500]
    assert any("holds 1,500 tokens whatever the context" in n for n in layout.notes)
    # without --encoder-length the cross-attention holds the encoder's 1,500 frames, not the context
    model = from_config(REAL["whisper-large-v3"], "test")
    assert kv_cache(model, 448).encoder_length == 1500
    assert kv_cache(model, 448).bytes == kv_cache(model, 448, encoder_length=1500).bytes
    classifier = from_config({"model_type": "whisper", **SMALL}, "test", model_class="WhisperForAudioClassification")
    assert not attention_layout(classifier).kinds


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"decoder_attention_heads": 3}, "d_model"),
        ({"encoder_attention_heads": 5}, "d_model"),
        ({"pad_token_id": 300}, "pad_token_id"),
        ({"num_mel_bins": 0}, "num_mel_bins"),
    ],
)
def test_impossible_configs_are_refused(change, field):
    with pytest.raises(ParamcountError) as err:
        from_config({"model_type": "whisper", **SMALL, **change}, "test")
    assert err.value.field == field


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "whisper"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_whisper_catalog_entries_match_transformers(entry):
    expect_same(entry.config)


@pytest.mark.parametrize("cls", [*GEN, "WhisperForAudioClassification"])
def test_a_checkpoint_maps_onto_the_tree(tmp_path, cls):
    from ..ckpt import build, save, state, total, write_config

    raw = {"model_type": "whisper", **SMALL, "architectures": [cls]}
    model = build(raw)
    save(tmp_path / "model.safetensors", state(model))
    write_config(tmp_path, raw)
    counted = paramcount.load(tmp_path)
    assert counted.class_name == cls and counted.total == total(model)
    assert counted.checkpoint.differences == ()
