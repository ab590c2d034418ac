import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# google/vit-base-patch16-224 (its 1000 ImageNet labels stand as num_labels)
VIT_BASE = {
    "model_type": "vit",
    "architectures": ["ViTForImageClassification"],
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "image_size": 224,
    "patch_size": 16,
    "num_channels": 3,
    "qkv_bias": True,
    "num_labels": 1000,
}
# google/vit-large-patch32-384
VIT_LARGE_32_384 = {
    **VIT_BASE,
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
    "image_size": 384,
    "patch_size": 32,
}
# google/vit-base-patch16-224-in21k: the backbone with its pooler
VIT_IN21K = {**VIT_BASE, "architectures": ["ViTModel"], "num_labels": 2}

SMALL = {"model_type": "vit", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 96, "image_size": 32, "patch_size": 8, "num_labels": 5}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "vit"},
    "vit-base-patch16-224": VIT_BASE,
    "vit-large-patch32-384": VIT_LARGE_32_384,
    "vit-base-in21k": VIT_IN21K,
    "rectangular-no-qkv-bias-pooler-width": {
        **SMALL,
        "architectures": ["ViTModel"],
        "image_size": [48, 32],
        "patch_size": [16, 8],
        "qkv_bias": False,
        "pooler_output_size": 40,
        "num_channels": 1,
    },
    "no-labels": {**SMALL, "architectures": ["ViTForImageClassification"], "num_labels": 0},
    "masked-image-modeling": {**SMALL, "architectures": ["ViTForMaskedImageModeling"], "encoder_stride": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_vit_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_vit_class():
    expect_all_classes(SMALL)


def test_published_sizes():
    """The model cards' 86.6M (ViT-B/16, ImageNet head) and the position table of 197 = 14² + 1."""
    model = from_config(VIT_BASE, "test")
    assert model.total == 86_567_656
    names = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert names["vit.embeddings.position_embeddings"] == (1, 197, 768)
    assert names["vit.embeddings.patch_embeddings.projection.weight"] == (768, 3, 16, 16)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"patch_size": 300}, "patch_size"),
        ({"image_size": [224, "x"]}, "image_size"),
        ({"num_attention_heads": 7}, "num_attention_heads"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({"model_type": "vit", **fields}, "test")
