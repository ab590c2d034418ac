import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# google/siglip-base-patch16-224: the config classes' defaults (transformers names it their reference)
SIGLIP_B16 = {
    "model_type": "siglip",
    "architectures": ["SiglipModel"],
    "text_config": {"model_type": "siglip_text_model"},
    "vision_config": {"model_type": "siglip_vision_model"},
}
# google/siglip-large-patch16-256: 1024 wide, 24 layers, 256 px
SIGLIP_L16_256 = {
    **SIGLIP_B16,
    "text_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                    "num_hidden_layers": 24},
    "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                      "num_hidden_layers": 24, "image_size": 256},
}  # fmt: skip
# the so400m shape (1152 wide, 4304 inner, 27 layers, 14-pixel patches at 384 px)
SO400M = {
    **SIGLIP_B16,
    "text_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16,
                    "num_hidden_layers": 27},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16,
                      "num_hidden_layers": 27, "image_size": 384, "patch_size": 14},
}  # fmt: skip

SMALL = {
    "model_type": "siglip",
    "num_labels": 3,
    "text_config": {"hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_hidden_layers": 2,
                    "vocab_size": 100, "max_position_embeddings": 16, "projection_size": 24},
    "vision_config": {"hidden_size": 40, "intermediate_size": 56, "num_attention_heads": 4, "num_hidden_layers": 3,
                      "image_size": 30, "patch_size": 7, "num_channels": 1},
}  # fmt: skip
SMALL2 = {
    "model_type": "siglip2",
    "num_labels": 3,
    "text_config": SMALL["text_config"],
    "vision_config": {**{k: v for k, v in SMALL["vision_config"].items() if k != "image_size"}, "num_patches": 20},
}

CONFIGS = {
    "defaults": {"model_type": "siglip"},
    "siglip-base-patch16-224": SIGLIP_B16,
    "siglip-large-patch16-256": SIGLIP_L16_256,
    "so400m-shape": SO400M,
    "no-vision-head": {**SMALL, "vision_config": {**SMALL["vision_config"], "vision_use_head": False}},
    "image-classification": {**SMALL, "architectures": ["SiglipForImageClassification"]},
    "no-labels": {**SMALL, "num_labels": 0, "architectures": ["SiglipForImageClassification"]},
    "text-tower": {"model_type": "siglip_text_model", **SO400M["text_config"]},
    "vision-tower": {"model_type": "siglip_vision_model", **SO400M["vision_config"]},
    "siglip2-defaults": {"model_type": "siglip2"},
    # google/siglip2-base-patch16-naflex: Gemma's 256k vocabulary, 256 positions
    "siglip2-base-naflex": {
        "model_type": "siglip2",
        "text_config": {"vocab_size": 256000},
        "vision_config": {"num_patches": 256},
    },
    "siglip2-so400m-shape": {
        "model_type": "siglip2",
        "text_config": {**SO400M["text_config"], "vocab_size": 256000},
        "vision_config": {
            **{k: v for k, v in SO400M["vision_config"].items() if k != "image_size"},
            "num_patches": 729,
        },
    },
    "siglip2-no-head-classifier": {
        **SMALL2,
        "architectures": ["Siglip2ForImageClassification"],
        "vision_config": {**SMALL2["vision_config"], "vision_use_head": False},
    },
    "siglip2-vision-tower": {"model_type": "siglip2_vision_model", **SMALL2["vision_config"]},
    "siglip2-text-tower": {"model_type": "siglip2_text_model", **SMALL2["text_config"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_siglip_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize(
    "raw",
    [
        SMALL,
        {"model_type": "siglip_text_model", **SMALL["text_config"]},
        {"model_type": "siglip_vision_model", **SMALL["vision_config"]},
        SMALL2,
        {"model_type": "siglip2_text_model", **SMALL2["text_config"]},
        {"model_type": "siglip2_vision_model", **SMALL2["vision_config"]},
    ],
)
def test_every_siglip_class(raw):
    expect_all_classes(raw)


def test_towers_add_up_to_the_whole():
    model = from_config(SIGLIP_B16, "test")
    towers = model.towers()
    assert model.total == sum(towers.values())
    assert towers["other"] == 2  # logit_scale and logit_bias
    vision = from_config({"model_type": "siglip_vision_model"}, "test")
    text = from_config({"model_type": "siglip_text_model"}, "test")
    assert towers == {"vision_encoder": vision.total, "text_encoder": text.total, "other": 2}


def test_encoders_keep_no_cache():
    from paramcount.arch import family
    from paramcount.arch.config import Cfg

    for model_type in ("siglip", "siglip_vision_model", "siglip2", "siglip2_text_model"):
        fam = family(model_type)
        assert fam.cache_layout(Cfg({}, fam.defaults), model_type, fam.backbone, "")[0] == []


def test_impossible_towers_are_one_line():
    with pytest.raises(ParamcountError, match=r"vision_config\.hidden_size: 40 is not divisible"):
        from_config({**SMALL, "vision_config": {**SMALL["vision_config"], "num_attention_heads": 3}}, "test")
    with pytest.raises(ParamcountError, match=r"vision_config\.patch_size: a 64-pixel patch does not fit"):
        from_config({**SMALL, "vision_config": {**SMALL["vision_config"], "patch_size": 64}}, "test")
