import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# The InternVL3-1B shape: InternViT-300M at 448 px, pixel shuffle 2, a Qwen2.5-0.5B language model
INTERNVIT_300M = {"model_type": "internvl_vision", "hidden_size": 1024, "intermediate_size": 4096,
                  "num_attention_heads": 16, "num_hidden_layers": 24, "image_size": [448, 448],
                  "patch_size": [14, 14], "layer_scale_init_value": 0.1, "use_mean_pooling": True}  # fmt: skip
INTERNVL3_1B = {
    "model_type": "internvl",
    "architectures": ["InternVLForConditionalGeneration"],
    "downsample_ratio": 0.5,
    "text_config": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
                    "num_key_value_heads": 2, "num_hidden_layers": 24, "vocab_size": 151674,
                    "tie_word_embeddings": False},
    "vision_config": INTERNVIT_300M,
}  # fmt: skip
# An InternViT-6B-like tower: RMSNorms, q/k norms, biased q/k/v, a final LayerNorm
INTERNVIT_ODD = {
    **INTERNVIT_300M,
    **{"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_hidden_layers": 2},
    **{"image_size": [56, 42], "norm_type": "rms_norm", "use_qk_norm": True, "attention_bias": True},
    **{"use_mean_pooling": False, "use_mask_token": True},
}

SMALL = {
    "model_type": "internvl",
    "text_config": {"model_type": "qwen2", "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 300},
    "vision_config": {"model_type": "internvl_vision", "hidden_size": 32, "intermediate_size": 40,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "image_size": 32, "patch_size": 8},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "internvl"},
    "internvl3-1b-shape": INTERNVL3_1B,
    "untied-quarter-ratio-llama": {
        **SMALL,
        "architectures": ["InternVLForConditionalGeneration"],
        "tie_word_embeddings": False,
        "downsample_ratio": 0.25,
        "text_config": {**SMALL["text_config"], "model_type": "llama"},
    },
    "vision-defaults": {"model_type": "internvl_vision"},
    "vision-300m": INTERNVIT_300M,
    "vision-odd": INTERNVIT_ODD,
    "vision-no-positions": {**SMALL["vision_config"], "use_absolute_position_embeddings": False},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_internvl_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL, SMALL["vision_config"]])
def test_every_internvl_class(raw):
    expect_all_classes(raw)


def test_towers_are_their_families_and_add_up():
    model = from_config(INTERNVL3_1B, "test")
    towers = model.towers()
    assert model.total == sum(towers.values())
    assert towers["vision_encoder"] == from_config(INTERNVIT_300M, "test").total
    assert towers["projector"] == 2 * 4096 + 4096 * 896 + 896 + 896 * 896 + 896
    # the composite's tie_word_embeddings (true by default) ties the head whatever the text config says
    tied = {**INTERNVL3_1B["text_config"], "tie_word_embeddings": True}
    qwen2 = from_config(tied, "test", model_class="Qwen2ForCausalLM")
    assert towers["language_model"] == qwen2.total


# The bundled catalog's published config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "internvl"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    m = from_config(entry.config, entry.id)
    assert sum(m.towers().values()) == m.total


def test_a_file_without_tie_word_embeddings_is_tied_as_transformers_5_reads_it():
    """InternVL3-8B-hf's file sets no tie_word_embeddings; the catalog adds false, as the release
    stores its head, and without it transformers 5 ties the head (one vocabulary × width fewer)."""
    e = catalog.get("OpenGVLab/InternVL3-8B-hf")
    raw = {k: v for k, v in e.config.items() if k != "tie_word_embeddings"}
    expect_same(raw)
    text = raw["text_config"]
    assert from_config(e.config, e.id).total - from_config(raw, e.id).total == text["vocab_size"] * text["hidden_size"]


def test_bad_fields_are_one_line():
    with pytest.raises(ParamcountError, match=r"vision_config\.norm_type: expected one of layer_norm, rms_norm"):
        from_config({**SMALL, "vision_config": {**SMALL["vision_config"], "norm_type": "batch_norm"}}, "test")
    with pytest.raises(ParamcountError, match=r"downsample_ratio: 0 is out of range \(must be in 1/1024..1\)"):
        from_config({**SMALL, "downsample_ratio": 0}, "test")


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64}, "image_token_id": 5}
    expect_cache("internvl", tiny, "InternVLForConditionalGeneration")
