"""Llama 4 (the composite) and its image encoder against transformers 5.23 on the meta device;
the towers sum to the whole; the cache is the language model's, held to a real one.

The Scout-like composite takes its text config from the catalog's Llama-4-Scout entry and the
vision shapes public loaders quote for Scout (not confirmed from the published config.json)."""

import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SCOUT_TEXT = json.loads(
    (resources.files("paramcount") / "catalog" / "meta-llama--Llama-4-Scout-17B-16E.json").read_text(encoding="utf-8")
)["config"]
VISION_LIKE = {"hidden_size": 1408, "num_hidden_layers": 34, "num_attention_heads": 16, "intermediate_size": 5632}
VISION_LIKE |= {"vision_output_dim": 4096, "image_size": 336, "patch_size": 14}
SCOUT_LIKE = {
    "model_type": "llama4",
    "text_config": {k: v for k, v in SCOUT_TEXT.items() if k not in ("model_type", "architectures")},
    "vision_config": VISION_LIKE,
}
TINY_TEXT = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "intermediate_size_mlp": 64}
TINY_TEXT |= {"num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
TINY_TEXT |= {"num_local_experts": 4, "num_experts_per_tok": 1, "attention_chunk_size": 4, "pad_token_id": 0}
TINY_VISION = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24}
TINY_VISION |= {"vision_output_dim": 32, "image_size": 8, "patch_size": 4, "projector_input_dim": 32}
TINY_VISION |= {"projector_output_dim": 32}
SMALL = {"model_type": "llama4", "text_config": TINY_TEXT, "vision_config": TINY_VISION}
CONFIGS = {
    "defaults": {"model_type": "llama4"},
    "vision-defaults": {"model_type": "llama4_vision_model"},
    "scout-like": SCOUT_LIKE,
    "small": SMALL,
    "small-tied-text": {**SMALL, "text_config": {**TINY_TEXT, "tie_word_embeddings": True}},
    "small-composite-tie-ignored": {**SMALL, "tie_word_embeddings": True},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)
    expect_all_classes({"model_type": "llama4_vision_model", **TINY_VISION})


def test_towers_and_active():
    m = from_config(SCOUT_LIKE, "t")
    towers = m.towers()
    assert set(towers) == {"vision_encoder", "projector", "language_model"}
    assert sum(towers.values()) == m.total
    text = from_config(SCOUT_TEXT, "t")
    assert towers["language_model"] == text.total  # the catalog's text-only count is the language model
    assert m.total - m.active_total == text.total - text.active_total


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_cache_is_the_language_models(dtype):
    fields = {k: v for k, v in SMALL.items() if k != "model_type"}
    expect_cache("llama4", fields, "Llama4ForConditionalGeneration", dtype=dtype)


def test_impossible_configs_are_refused():
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "vision_config": {**TINY_VISION, "num_attention_heads": 3}}, "t")
    assert e.value.field == "vision_config.hidden_size"
