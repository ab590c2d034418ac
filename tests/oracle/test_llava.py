import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# llava-hf/llava-1.5-7b-hf: Vicuna-7B (Llama) with a 64-token-padded vocabulary, CLIP ViT-L/14 at 336 px
LLAVA_15_7B = {
    "model_type": "llava",
    "architectures": ["LlavaForConditionalGeneration"],
    "image_token_index": 32000,
    "projector_hidden_act": "gelu",
    "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096, "model_type": "llama",
                    "rms_norm_eps": 1e-05, "vocab_size": 32064},
    "tie_word_embeddings": False,
    "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                      "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24,
                      "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
    "vision_feature_layer": -2,
    "vision_feature_select_strategy": "default",
}  # fmt: skip
# llava-hf/llava-1.5-13b-hf: Vicuna-13B
LLAVA_15_13B = {
    **LLAVA_15_7B,
    "text_config": {**LLAVA_15_7B["text_config"], "hidden_size": 5120, "intermediate_size": 13824,
                    "num_attention_heads": 40, "num_hidden_layers": 40},
}  # fmt: skip
# llava-hf/bakLlava-v1-hf: a Mistral-7B language model
BAKLLAVA = {
    **LLAVA_15_7B,
    "text_config": {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "vocab_size": 32002,
                    "max_position_embeddings": 32768, "sliding_window": 4096, "num_key_value_heads": 8,
                    "intermediate_size": 14336},
}  # fmt: skip

SMALL = {
    "model_type": "llava",
    "text_config": {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 300, "tie_word_embeddings": True},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 40,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "image_size": 32, "patch_size": 8},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "llava"},
    "llava-1.5-7b": LLAVA_15_7B,
    "llava-1.5-13b": LLAVA_15_13B,
    "bakllava": BAKLLAVA,
    "two-feature-layers-no-projector-bias": {
        **SMALL,
        "vision_feature_layer": [-2, -1],
        "multimodal_projector_bias": False,
    },
    "tied-by-the-text-config": {**SMALL, "architectures": ["LlavaForConditionalGeneration"]},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_llava_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_llava_class():
    expect_all_classes(SMALL)


def test_towers_are_their_families_and_add_up():
    model = from_config(LLAVA_15_7B, "test")
    towers = model.towers()
    assert model.total == 7_063_427_072 == sum(towers.values())
    assert towers["vision_encoder"] == 303_507_456  # CLIP ViT-L/14-336's vision model
    assert towers["projector"] == 1024 * 4096 + 4096 + 4096 * 4096 + 4096
    llama = from_config({"model_type": "llama", "vocab_size": 32064}, "test", model_class="LlamaForCausalLM")
    assert towers["language_model"] == llama.total


def test_a_tower_without_a_native_family_is_one_line():
    with pytest.raises(ParamcountError, match=r"text_config\.model_type: model_type 'no_such' has no native"):
        from_config({**SMALL, "text_config": {"model_type": "no_such"}}, "test")


def test_a_tower_only_transformers_knows_sends_the_whole_model_to_the_fallback():
    raw = {**SMALL, "text_config": {"model_type": "persimmon", "hidden_size": 64, "num_attention_heads": 4,
                                    "num_hidden_layers": 1, "vocab_size": 300}}  # fmt: skip
    model = expect_same({**raw, "architectures": ["LlavaForConditionalGeneration"]})
    assert model.counted_by == "transformers"
    assert any("text_config.model_type" in n for n in model.notes)


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64}, "image_token_index": 5}
    expect_cache("llava", tiny, "LlavaForConditionalGeneration")
