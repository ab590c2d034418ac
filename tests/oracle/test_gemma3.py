import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

SO400M_896 = {
    "hidden_size": 1152,
    "image_size": 896,
    "intermediate_size": 4304,
    "model_type": "siglip_vision_model",
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "patch_size": 14,
    "vision_use_head": False,
}
# google/gemma-3-4b-it
GEMMA3_4B = {
    "model_type": "gemma3",
    "architectures": ["Gemma3ForConditionalGeneration"],
    "mm_tokens_per_image": 256,
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": SO400M_896,
}  # fmt: skip
# google/gemma-3-27b-it: 62 layers of 32 query / 16 KV heads of 128
GEMMA3_27B = {
    **GEMMA3_4B,
    "text_config": {"hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text", "head_dim": 128,
                    "num_attention_heads": 32, "num_key_value_heads": 16, "num_hidden_layers": 62,
                    "query_pre_attn_scalar": 168, "sliding_window": 1024},
}  # fmt: skip
# google/gemma-3-12b-it
GEMMA3_12B = {
    **GEMMA3_4B,
    "text_config": {"hidden_size": 3840, "intermediate_size": 15360, "model_type": "gemma3_text",
                    "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 48,
                    "sliding_window": 1024},
}  # fmt: skip

SMALL = {
    "model_type": "gemma3",
    "mm_tokens_per_image": 4,
    "num_labels": 3,
    "text_config": {"model_type": "gemma3_text", "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 12, "num_hidden_layers": 3, "vocab_size": 300,
                    "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 40,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "image_size": 32, "patch_size": 8,
                      "vision_use_head": False},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "gemma3"},
    "gemma-3-4b-it": GEMMA3_4B,
    "gemma-3-12b-it": GEMMA3_12B,
    "gemma-3-27b-it": GEMMA3_27B,
    "untied": {**SMALL, "architectures": ["Gemma3ForConditionalGeneration"], "tie_word_embeddings": False},
    "sequence-classification": {**SMALL, "architectures": ["Gemma3ForSequenceClassification"]},
    "vision-head-kept": {**SMALL, "vision_config": {**SMALL["vision_config"], "vision_use_head": True}},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gemma3_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_gemma3_class():
    expect_all_classes(SMALL)


def test_towers_are_their_families_and_add_up():
    model = from_config(GEMMA3_4B, "test")
    towers = model.towers()
    assert model.total == 4_300_079_472 == sum(towers.values())
    assert towers["projector"] == 1152 * 2560 + 1152  # the projection matrix and the RMSNorm
    text = from_config(GEMMA3_4B["text_config"], "test", model_class="Gemma3TextModel")
    assert towers["language_model"] == text.total
    assert towers["vision_encoder"] == from_config(SO400M_896, "test").total
    assert from_config(GEMMA3_27B, "test").total == 27_432_406_640


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64}, "image_token_index": 5}
    expect_cache("gemma3", tiny, "Gemma3ForConditionalGeneration")
    expect_cache("gemma3", tiny, "Gemma3ForConditionalGeneration", dtype="bf16")
