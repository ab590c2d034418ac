import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# openai/clip-vit-base-patch32 (its config.json carries the towers as text_config/vision_config)
CLIP_B32 = {
    "model_type": "clip",
    "architectures": ["CLIPModel"],
    "projection_dim": 512,
    "text_config": {"hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8,
                    "num_hidden_layers": 12, "max_position_embeddings": 77, "vocab_size": 49408},
    "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
                      "num_hidden_layers": 12, "image_size": 224, "patch_size": 32},
}  # fmt: skip
# openai/clip-vit-large-patch14-336: projection 768, vision 1024 × 24 layers at 336 px
CLIP_L14_336 = {
    **CLIP_B32,
    "projection_dim": 768,
    "text_config": {**CLIP_B32["text_config"], "hidden_size": 768, "intermediate_size": 3072,
                    "num_attention_heads": 12, "projection_dim": 768},
    "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                      "num_hidden_layers": 24, "image_size": 336, "patch_size": 14, "projection_dim": 768},
}  # fmt: skip
# the older config.json layout with *_config_dict (openai/clip-vit-large-patch14 has both)
LEGACY = {**CLIP_B32, "text_config": None, "text_config_dict": {"hidden_size": 256, "num_attention_heads": 4}}

SMALL = {
    "model_type": "clip",
    "projection_dim": 24,
    "num_labels": 3,
    "text_config": {"hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_hidden_layers": 2,
                    "vocab_size": 100, "max_position_embeddings": 16},
    "vision_config": {"hidden_size": 40, "intermediate_size": 56, "num_attention_heads": 4, "num_hidden_layers": 3,
                      "image_size": 32, "patch_size": 8, "num_channels": 1},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "clip"},
    "clip-vit-base-patch32": CLIP_B32,
    "clip-vit-large-patch14-336": CLIP_L14_336,
    "legacy-text-config-dict": LEGACY,
    "image-classification": {**SMALL, "architectures": ["CLIPForImageClassification"]},
    "text-tower": {"model_type": "clip_text_model", **CLIP_B32["text_config"]},
    "vision-tower-with-projection": {
        "model_type": "clip_vision_model",
        "architectures": ["CLIPVisionModelWithProjection"],
        **CLIP_L14_336["vision_config"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_clip_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize(
    "raw",
    [
        SMALL,
        {"model_type": "clip_text_model", **SMALL["text_config"]},
        {"model_type": "clip_vision_model", **SMALL["vision_config"]},
    ],
)
def test_every_clip_class(raw):
    expect_all_classes(raw)


def test_towers_add_up_to_the_whole():
    """CLIP ViT-B/32: 151,277,313, the figure the CLIP repository's model list prints rounded (151M)."""
    model = from_config(CLIP_B32, "test")
    towers = model.towers()
    assert model.total == 151_277_313 == sum(towers.values())
    assert towers == {"vision_encoder": 87_456_000, "text_encoder": 63_165_952, "projector": 655_360, "other": 1}


def test_a_tower_config_error_names_the_nested_field():
    from paramcount.errors import ParamcountError

    with pytest.raises(
        ParamcountError, match=r"vision_config\.hidden_size: 40 is not divisible by num_attention_heads"
    ):
        from_config({**SMALL, "vision_config": {**SMALL["vision_config"], "num_attention_heads": 3}}, "test")
