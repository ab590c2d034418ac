import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# Qwen/Qwen2-VL-7B-Instruct: a flat config.json (the language model's fields at the top level)
QWEN2_VL_7B = {
    "architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_window_layers": 28, "sliding_window": 32768,
    "use_sliding_window": False, "tie_word_embeddings": False, "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3,
                      "hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14,
                      "temporal_patch_size": 2},
}  # fmt: skip
# Qwen/Qwen2-VL-2B-Instruct: 1536 wide, a 151,936-token vocabulary, the LM head tied
QWEN2_VL_2B = {
    **QWEN2_VL_7B,
    "hidden_size": 1536, "intermediate_size": 8960, "num_attention_heads": 12, "num_key_value_heads": 2,
    "vocab_size": 151936, "tie_word_embeddings": True, "max_window_layers": 28,
    "vision_config": {**QWEN2_VL_7B["vision_config"], "hidden_size": 1536},
}  # fmt: skip

SMALL = {
    "model_type": "qwen2_vl",
    "text_config": {"model_type": "qwen2_vl_text", "hidden_size": 48, "intermediate_size": 64,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3, "vocab_size": 300},
    "vision_config": {"depth": 2, "embed_dim": 32, "hidden_size": 48, "num_heads": 4, "patch_size": 4,
                      "temporal_patch_size": 2, "spatial_merge_size": 2, "mlp_ratio": 2},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "qwen2_vl"},
    "qwen2-vl-7b-instruct": QWEN2_VL_7B,
    "qwen2-vl-2b-instruct": QWEN2_VL_2B,
    "nested-text-config": {**SMALL, "architectures": ["Qwen2VLForConditionalGeneration"]},
    # pre-v5 saves: the vision config named the composite's type, the tie kept in the text config
    "old-vision-type-tie-in-text": {
        **SMALL,
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "vision_config": {**SMALL["vision_config"], "model_type": "qwen2_vl"},
        "text_config": {**SMALL["text_config"], "tie_word_embeddings": True},
    },
    "head-dim-ignored-odd-merge": {
        **SMALL,
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "text_config": {**SMALL["text_config"], "head_dim": 20},
        "vision_config": {
            "embed_dim": 32,
            "hidden_size": 48,
            "patch_size": 4,
            "spatial_merge_size": 3,
            "mlp_ratio": 3,
            "in_channels": 1,
            "num_attention_heads": 8,
            "num_hidden_layers": 1,
        },
    },
    "text-model": {**SMALL["text_config"], "head_dim": 20},
    "text-model-defaults": {"model_type": "qwen2_vl_text"},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen2_vl_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL, SMALL["text_config"]])
def test_every_qwen2_vl_class(raw):
    expect_all_classes(raw)


def test_towers_add_up():
    """Qwen2-VL-7B: 8,291,375,616; the merger (the projector) sits inside the vision model."""
    model = from_config(QWEN2_VL_7B, "test")
    towers = model.towers()
    assert model.total == sum(towers.values()) == 8_291_375_616
    assert towers["projector"] == 1280 + 1280 + 5120 * 5120 + 5120 + 5120 * 3584 + 3584
    text = from_config({**QWEN2_VL_7B, "model_type": "qwen2_vl_text"}, "test")
    assert towers["language_model"] == text.total + 152064 * 3584  # and the untied LM head


def test_impossible_vision_heads_are_one_line():
    with pytest.raises(ParamcountError, match=r"vision_config\.embed_dim: 32 is not divisible by num_heads"):
        from_config({**SMALL, "vision_config": {**SMALL["vision_config"], "num_heads": 5}}, "test")


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    text = {**SMALL["text_config"], "vocab_size": 64, "use_sliding_window": True, "sliding_window": 4,
            "max_window_layers": 1, "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 2]}}  # fmt: skip
    tiny = {**SMALL, "text_config": text, "image_token_id": 5, "video_token_id": 6, "vision_start_token_id": 7,
            "vision_end_token_id": 8}  # fmt: skip
    expect_cache("qwen2_vl", tiny, "Qwen2VLForConditionalGeneration")
    expect_cache("qwen2_vl_text", text, "Qwen2VLTextModel")
