"""Gemma 4 (the composite) and its image and audio encoders against transformers 5.23 on the meta
device, every class; the towers sum to the whole; the cache is the language model's.

The towers are tested at their class defaults and at small and odd shapes, and the catalog's
published configs (gemma-4-31B-it without audio, gemma-4-E2B-it with both towers) in every class;
the language model's "-like" shapes are in test_gemma4_text.py.
"""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same
from .test_gemma4_text import MOE_LIKE
from .test_gemma4_text import SMALL as TEXT_SMALL

VISION = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
VISION |= {"head_dim": 16, "intermediate_size": 96, "patch_size": 8, "position_embedding_size": 32}
AUDIO = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "subsampling_conv_channels": [16, 8]}
AUDIO |= {"output_proj_dims": 48, "conv_kernel_size": 3}
TEXT = {k: v for k, v in TEXT_SMALL.items() if k != "model_type"}
SMALL = {"model_type": "gemma4", "text_config": TEXT, "vision_config": VISION, "audio_config": AUDIO}
CONFIGS = {
    "defaults": {"model_type": "gemma4"},
    "vision-defaults": {"model_type": "gemma4_vision"},
    "audio-defaults": {"model_type": "gemma4_audio"},
    "both-towers-at-defaults": {"model_type": "gemma4", "vision_config": {}, "audio_config": {}},
    "moe-with-vision": {
        "model_type": "gemma4",
        "text_config": {k: v for k, v in MOE_LIKE.items() if k != "model_type"},
        "vision_config": {},
    },
    "small": SMALL,
    "small-untied-vision-only": {**SMALL, "audio_config": None, "tie_word_embeddings": False},
    "small-audio-only": {**SMALL, "vision_config": None},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)
    expect_all_classes({"model_type": "gemma4_vision", **VISION})
    expect_all_classes({"model_type": "gemma4_audio", **AUDIO})


# The bundled catalog's published config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "gemma4"]


def test_the_catalog_has_a_model_with_audio_and_one_without():
    assert {e.config.get("audio_config") is None for e in CATALOG} == {True, False}


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    towers = from_config(entry.config, entry.id).towers()
    assert sum(towers.values()) == from_config(entry.config, entry.id).total
    assert ("audio_encoder" in towers) == (entry.config.get("audio_config") is not None)


def test_towers_sum_to_the_whole():
    m = from_config(CONFIGS["both-towers-at-defaults"], "t", model_class="Gemma4ForConditionalGeneration")
    towers = m.towers()
    assert set(towers) == {"vision_encoder", "audio_encoder", "language_model", "projector"}
    assert sum(towers.values()) == m.total
    assert towers["projector"] == 768 * 2304 + 1536 * 2304  # the two embedders


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_cache_is_the_language_models(dtype):
    fields = {"text_config": TEXT}
    expect_cache("gemma4", fields, "Gemma4ForConditionalGeneration", dtype=dtype)


def test_impossible_configs_are_refused():
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "audio_config": {**AUDIO, "subsampling_conv_channels": [16]}}, "t")
    assert e.value.field == "audio_config.subsampling_conv_channels"
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "vision_config": {**VISION, "num_key_value_heads": 3}}, "t")
    assert e.value.field == "vision_config.num_key_value_heads"
