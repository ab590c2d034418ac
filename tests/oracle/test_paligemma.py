import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# google/paligemma-3b-pt-224: SigLIP So400m/14 without its head, Gemma-2B with a 257,216-token vocabulary
PALIGEMMA_3B_224 = {
    "model_type": "paligemma",
    "architectures": ["PaliGemmaForConditionalGeneration"],
    "hidden_size": 2048,
    "projection_dim": 2048,
    "text_config": {"hidden_size": 2048, "intermediate_size": 16384, "model_type": "gemma", "num_attention_heads": 8,
                    "num_hidden_layers": 18, "num_image_tokens": 256, "num_key_value_heads": 1, "vocab_size": 257216},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                      "num_attention_heads": 16, "num_hidden_layers": 27, "num_image_tokens": 256, "patch_size": 14,
                      "projection_dim": 2048, "projector_hidden_act": "gelu_fast", "vision_use_head": False},
}  # fmt: skip
# google/paligemma2-3b-pt-448: Gemma 2 2B (26 layers, 2304 wide) at 448 px
PALIGEMMA2_3B_448 = {
    **PALIGEMMA_3B_224,
    "projection_dim": 2304,
    "hidden_size": 2304,
    "text_config": {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_attention_heads": 8,
                    "num_hidden_layers": 26, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 257216,
                    "query_pre_attn_scalar": 256, "sliding_window": 4096},
    "vision_config": {**PALIGEMMA_3B_224["vision_config"], "image_size": 448, "projection_dim": 2304},
}  # fmt: skip

SMALL = {
    "model_type": "paligemma",
    "projection_dim": 48,
    "text_config": {"model_type": "gemma", "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 1, "head_dim": 12, "num_hidden_layers": 2, "vocab_size": 300},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 40,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "image_size": 32, "patch_size": 8},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "paligemma"},
    "paligemma-3b-pt-224": PALIGEMMA_3B_224,
    "paligemma2-3b-pt-448": PALIGEMMA2_3B_448,
    "untied-head-projection-wider": {
        **SMALL,
        "architectures": ["PaliGemmaForConditionalGeneration"],
        "tie_word_embeddings": False,
        "projection_dim": 56,
    },
    "vision-head-kept": {**SMALL, "vision_config": {**SMALL["vision_config"], "vision_use_head": True}},
    "text-config-absent": {
        "model_type": "paligemma",
        "architectures": ["PaliGemmaForConditionalGeneration"],
        "vision_config": SMALL["vision_config"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_paligemma_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_paligemma_class():
    expect_all_classes(SMALL)


def test_towers_are_their_families_and_add_up():
    """2,923,466,480: keras-hub's pali_gemma_3b_224 prints 2,923,335,408 with a 257,152-token
    vocabulary, 64 rows × 2,048 fewer."""
    model = from_config(PALIGEMMA_3B_224, "test")
    towers = model.towers()
    assert model.total == 2_923_466_480 == sum(towers.values())
    assert model.total - 64 * 2048 == 2_923_335_408
    assert towers["projector"] == 1152 * 2048 + 2048
    gemma = from_config({**PALIGEMMA_3B_224["text_config"], "model_type": "gemma"}, "test", model_class="GemmaModel")
    assert towers["language_model"] == gemma.total
    siglip = from_config(PALIGEMMA_3B_224["vision_config"], "test")
    assert towers["vision_encoder"] == siglip.total


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64}, "image_token_index": 5}
    expect_cache("paligemma", tiny, "PaliGemmaForConditionalGeneration")
    expect_cache("paligemma", tiny, "PaliGemmaForConditionalGeneration", dtype="bf16")
