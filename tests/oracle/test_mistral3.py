import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# The Mistral Small 3.1 24B shape (mistralai/Mistral-Small-3.1-24B-Instruct-2503), with its LM head untied
PIXTRAL_1540 = {"model_type": "pixtral", "hidden_size": 1024, "image_size": 1540, "intermediate_size": 4096,
                "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14, "head_dim": 64}  # fmt: skip
MISTRAL_SMALL_31 = {
    "model_type": "mistral3",
    "architectures": ["Mistral3ForConditionalGeneration"],
    "multimodal_projector_bias": False,
    "spatial_merge_size": 2,
    "tie_word_embeddings": False,
    "vision_feature_layer": -1,
    "text_config": {"model_type": "mistral", "head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768,
                    "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
                    "num_key_value_heads": 8, "sliding_window": None, "vocab_size": 131072},
    "vision_config": PIXTRAL_1540,
}  # fmt: skip

SMALL = {
    "model_type": "mistral3",
    "text_config": {"model_type": "mistral", "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2, "vocab_size": 300},
    "vision_config": {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 40, "num_attention_heads": 4,
                      "num_hidden_layers": 2, "image_size": 64, "patch_size": 8},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "mistral3"},
    "mistral-small-3.1-shape": MISTRAL_SMALL_31,
    "two-feature-layers-biased-merge-3": {
        **SMALL,
        "architectures": ["Mistral3ForConditionalGeneration"],
        "vision_feature_layer": [-1, -3],
        "multimodal_projector_bias": True,
        "spatial_merge_size": 3,
    },
    "qwen2-language-model": {
        **SMALL,
        "architectures": ["Mistral3ForConditionalGeneration"],
        "text_config": {**SMALL["text_config"], "model_type": "qwen2"},
    },
    "pixtral-defaults": {"model_type": "pixtral"},
    "pixtral-1540": PIXTRAL_1540,
    "pixtral-oblong-patch": {**SMALL["vision_config"], "patch_size": [8, 4], "num_channels": 1},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mistral3_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL, SMALL["vision_config"]])
def test_every_mistral3_class(raw):
    expect_all_classes(raw)


def test_towers_are_their_families_and_add_up():
    model = from_config(MISTRAL_SMALL_31, "test")
    towers = model.towers()
    assert model.total == sum(towers.values()) == 24_011_361_280
    assert towers["vision_encoder"] == from_config(PIXTRAL_1540, "test").total
    assert towers["projector"] == 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120
    mistral = from_config(
        {**MISTRAL_SMALL_31["text_config"], "tie_word_embeddings": False}, "test", model_class="MistralForCausalLM"
    )
    assert towers["language_model"] == mistral.total


def test_pixtral_refuses_heads_that_do_not_divide():
    from paramcount.errors import ParamcountError

    with pytest.raises(ParamcountError, match=r"hidden_size: 32 is not divisible by num_attention_heads"):
        from_config({**SMALL["vision_config"], "num_attention_heads": 5}, "test")


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64, "sliding_window": 4},
            "image_token_index": 5}  # fmt: skip
    expect_cache("mistral3", tiny, "Mistral3ForConditionalGeneration")
