import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# facebook/dinov2-base
DINOV2_BASE = {
    "model_type": "dinov2",
    "architectures": ["Dinov2Model"],
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "mlp_ratio": 4,
    "image_size": 518,
    "patch_size": 14,
    "num_channels": 3,
    "qkv_bias": True,
    "layerscale_value": 1.0,
    "use_swiglu_ffn": False,
}
# facebook/dinov2-giant: SwiGLU feed-forward
DINOV2_GIANT = {**DINOV2_BASE, "hidden_size": 1536, "num_hidden_layers": 40, "num_attention_heads": 24,
                "use_swiglu_ffn": True}  # fmt: skip
# facebook/dinov2-small-imagenet1k-1-layer: a linear head on class + mean patch token
DINOV2_SMALL_IN1K = {**DINOV2_BASE, "architectures": ["Dinov2ForImageClassification"], "hidden_size": 384,
                     "num_attention_heads": 6, "num_labels": 1000}  # fmt: skip

SMALL = {"model_type": "dinov2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "image_size": 28, "patch_size": 7, "num_labels": 3}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "dinov2"},
    "dinov2-base": DINOV2_BASE,
    "dinov2-giant": DINOV2_GIANT,
    "dinov2-small-imagenet1k": DINOV2_SMALL_IN1K,
    "no-mask-token-ratio-3-swiglu": {**SMALL, "use_mask_token": False, "mlp_ratio": 3, "use_swiglu_ffn": True},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_dinov2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_dinov2_class():
    expect_all_classes(SMALL)


@pytest.mark.parametrize(("raw", "total"), [(DINOV2_BASE, 86_580_480), (DINOV2_GIANT, 1_136_480_768)])
def test_published_sizes(raw, total):
    """The model pages: 86.6M (base) and 1.14B (giant)."""
    assert from_config(raw, "test").total == total
