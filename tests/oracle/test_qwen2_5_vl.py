import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# Qwen/Qwen2.5-VL-7B-Instruct: flat, a SwiGLU/RMSNorm vision tower 1280 wide merged into 3584
QWEN25_VL_7B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_window_layers": 28, "sliding_window": 32768,
    "use_sliding_window": False, "tie_word_embeddings": False, "max_position_embeddings": 128000,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
                      "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2},
}  # fmt: skip
# Qwen/Qwen2.5-VL-3B-Instruct: 2048 wide, 36 layers, the LM head tied
QWEN25_VL_3B = {
    **QWEN25_VL_7B,
    "hidden_size": 2048, "intermediate_size": 11008, "num_attention_heads": 16, "num_hidden_layers": 36,
    "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True, "max_window_layers": 70,
    "vision_config": {**QWEN25_VL_7B["vision_config"], "out_hidden_size": 2048},
}  # fmt: skip

SMALL = {
    "model_type": "qwen2_5_vl",
    "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 48, "intermediate_size": 64,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3, "vocab_size": 300,
                    "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 2]}},
    "vision_config": {"depth": 2, "hidden_size": 32, "intermediate_size": 40, "num_heads": 4, "patch_size": 4,
                      "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 48},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "qwen2_5_vl"},
    "qwen2.5-vl-7b-instruct": QWEN25_VL_7B,
    "qwen2.5-vl-3b-instruct": QWEN25_VL_3B,
    "nested-untied": {**SMALL, "architectures": ["Qwen2_5_VLForConditionalGeneration"]},
    "tie-in-text-merge-1": {
        **SMALL,
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "text_config": {**SMALL["text_config"], "tie_word_embeddings": True},
        "vision_config": {**SMALL["vision_config"], "spatial_merge_size": 1, "temporal_patch_size": 1},
    },
    "text-model": {**SMALL["text_config"], "head_dim": 20},
    "text-model-defaults": {"model_type": "qwen2_5_vl_text"},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen2_5_vl_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL, SMALL["text_config"]])
def test_every_qwen2_5_vl_class(raw):
    expect_all_classes(raw)


def test_towers_add_up():
    """Qwen2.5-VL-7B: 8,292,166,656 (its language model is Qwen2-VL-7B's)."""
    model = from_config(QWEN25_VL_7B, "test")
    towers = model.towers()
    assert model.total == sum(towers.values()) == 8_292_166_656
    assert towers["projector"] == 1280 + 5120 * 5120 + 5120 + 5120 * 3584 + 3584  # an RMSNorm: no bias
    qwen2_vl = from_config(
        {**QWEN25_VL_7B, "model_type": "qwen2_vl", "vision_config": None},
        "test",
        model_class="Qwen2VLForConditionalGeneration",
    )
    assert towers["language_model"] == qwen2_vl.towers()["language_model"]


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    text = {**SMALL["text_config"], "vocab_size": 64, "use_sliding_window": True, "sliding_window": 4,
            "max_window_layers": 2}  # fmt: skip
    tiny = {**SMALL, "text_config": text, "image_token_id": 5, "video_token_id": 6, "vision_start_token_id": 7,
            "vision_end_token_id": 8}  # fmt: skip
    expect_cache("qwen2_5_vl", tiny, "Qwen2_5_VLForConditionalGeneration")
    expect_cache("qwen2_5_vl", tiny, "Qwen2_5_VLForConditionalGeneration", dtype="bf16")
