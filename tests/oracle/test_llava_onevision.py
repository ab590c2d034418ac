"""LLaVA-OneVision against transformers 5.23 on the meta device: every class, the towers summing
to the whole, the cache the language model's.

The "-like" configurations take the shapes of llava-hf/llava-onevision-qwen2-0.5b-ov-hf and
-7b-ov-hf (SigLIP-SO400M without its last layer; Qwen2-0.5B / Qwen2-7B); the catalog's published
0.5B, 7B and 72B OneVision configs are held to transformers in every class.
"""

import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

SIGLIP = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304, "patch_size": 14}
SIGLIP |= {"image_size": 384, "num_hidden_layers": 26, "num_attention_heads": 16, "vision_use_head": False}
OV_7B_LIKE = {
    "model_type": "llava_onevision",
    "vision_config": SIGLIP,
    "text_config": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152128},
}  # fmt: skip
OV_05B_LIKE = {
    "model_type": "llava_onevision",
    "vision_config": SIGLIP,
    "text_config": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                    "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                    "tie_word_embeddings": True},
    "tie_word_embeddings": True,
}  # fmt: skip
SMALL = {
    "model_type": "llava_onevision",
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 16, "intermediate_size": 24, "patch_size": 4,
                      "image_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2},
    "text_config": {"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64},
}  # fmt: skip
CONFIGS = {
    "defaults": {"model_type": "llava_onevision"},
    "ov-7b-like": OV_7B_LIKE,
    "ov-0.5b-like-tied": OV_05B_LIKE,
    # the -hf releases' way: the tie in the text config only, the composite's own false
    "tie-from-the-text-config": {
        **OV_05B_LIKE,
        "architectures": ["LlavaOnevisionForConditionalGeneration"],
        "tie_word_embeddings": False,
    },
    "two-feature-layers-no-bias": {**OV_7B_LIKE, "vision_feature_layer": [-2, -1], "multimodal_projector_bias": False},
    "small": SMALL,
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


# The bundled catalog's published config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "llava_onevision"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    m = from_config(entry.config, entry.id)
    assert sum(m.towers().values()) == m.total
    text = entry.config["text_config"]
    tied = entry.config.get("tie_word_embeddings") or text.get("tie_word_embeddings", False)
    assert m.total - m.backbone_total == (0 if tied else text["vocab_size"] * text["hidden_size"])


def test_towers_sum_to_the_whole():
    m = from_config(OV_7B_LIKE, "t")
    towers = m.towers()
    assert set(towers) == {"vision_encoder", "projector", "language_model"}
    assert sum(towers.values()) == m.total
    assert towers["projector"] == 1152 * 3584 + 3584 + 3584 * 3584 + 3584 + 3584  # + image_newline


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_cache_is_the_language_models(dtype):
    fields = {k: v for k, v in SMALL.items() if k != "model_type"} | {"image_token_index": 60, "video_token_index": 61}
    expect_cache("llava_onevision", fields, "LlavaOnevisionForConditionalGeneration", dtype=dtype)
