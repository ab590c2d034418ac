import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

# The Idefics3-8B shape: SigLIP So400m/14 at 364 px, pixel shuffle 2, a Llama 3 8B language model
IDEFICS3_8B = {
    "model_type": "idefics3",
    "architectures": ["Idefics3ForConditionalGeneration"],
    "scale_factor": 2,
    "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128259,
                    "max_position_embeddings": 131072},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16,
                      "num_hidden_layers": 27, "image_size": 364, "patch_size": 14},
}  # fmt: skip
# The SmolVLM-256M shape: a 768-wide 12-layer vision tower at 512 px, pixel shuffle 4, a 576-wide Llama
SMOLVLM_256M = {
    "model_type": "smolvlm",
    "architectures": ["SmolVLMForConditionalGeneration"],
    "scale_factor": 4,
    "tie_word_embeddings": False,
    "text_config": {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
                    "num_key_value_heads": 3, "num_hidden_layers": 30, "vocab_size": 49280},
    "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
                      "num_hidden_layers": 12, "image_size": 512, "patch_size": 16},
}  # fmt: skip

SMALL = {
    "model_type": "idefics3",
    "text_config": {"model_type": "llama", "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 300},
    "vision_config": {"hidden_size": 32, "intermediate_size": 40, "num_attention_heads": 4, "num_hidden_layers": 2,
                      "image_size": 32, "patch_size": 8},
}  # fmt: skip

CONFIGS = {
    "defaults": {"model_type": "idefics3"},
    "smolvlm-defaults": {"model_type": "smolvlm"},
    "idefics3-8b-shape": IDEFICS3_8B,
    "smolvlm-256m-shape": SMOLVLM_256M,
    "tied-scale-3-qwen2": {
        **SMALL,
        "architectures": ["Idefics3ForConditionalGeneration"],
        "tie_word_embeddings": True,
        "scale_factor": 3,
        "text_config": {**SMALL["text_config"], "model_type": "qwen2"},
    },
    "text-config-absent": {
        "model_type": "smolvlm",
        "architectures": ["SmolVLMForConditionalGeneration"],
        "vision_config": SMALL["vision_config"],
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_idefics3_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("raw", [SMALL, {**SMALL, "model_type": "smolvlm"}])
def test_every_idefics3_class(raw):
    expect_all_classes(raw)


def test_towers_are_their_families_and_add_up():
    model = from_config(SMOLVLM_256M, "test")
    towers = model.towers()
    assert model.total == sum(towers.values())
    assert towers["projector"] == 768 * 16 * 576  # pixel shuffle 4: 16 patches a token, no bias
    siglip = {"model_type": "siglip_vision_model", "vision_use_head": False, **SMOLVLM_256M["vision_config"]}
    vision = from_config(siglip, "test")
    assert towers["vision_encoder"] == vision.total  # SigLIP's tower without its head
    llama = from_config(SMOLVLM_256M["text_config"], "test", model_class="LlamaForCausalLM")
    assert towers["language_model"] == llama.total


def test_the_cache_is_the_language_models():
    from ..cache_oracle import expect_cache

    tiny = {**SMALL, "text_config": {**SMALL["text_config"], "vocab_size": 64}, "image_token_id": 5}
    expect_cache("idefics3", tiny, "Idefics3ForConditionalGeneration")
    expect_cache("smolvlm", {**tiny, "model_type": "smolvlm"}, "SmolVLMForConditionalGeneration")


# The bundled catalog's real config.json files of this family (SmolVLM Instruct, SmolVLM2 500M Video).
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") in ("idefics3", "smolvlm")]


def test_the_catalog_has_both_model_types():
    assert {e.config["model_type"] for e in CATALOG} == {"idefics3", "smolvlm"}


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    m = from_config(entry.config, entry.id)
    assert sum(m.towers().values()) == m.total
