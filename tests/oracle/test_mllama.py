"""Llama 3.2 Vision (mllama) and its two towers against transformers 5.23 on the meta device,
every class; the towers sum to the whole; a text-only prompt's cache against a real one.

The "-like" configurations take the shapes of meta-llama/Llama-3.2-11B-Vision and -90B-Vision
as public loaders quote them; the catalog's Llama-3.2-90B-Vision-Instruct is the published
config.json, held to transformers in every class.
"""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_layout import attention_layout

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_class, expect_same

VISION = {"model_type": "mllama_vision_model", "image_size": 560, "vision_output_dim": 7680}
V11B_LIKE = {"model_type": "mllama", "vision_config": VISION, "text_config": {"model_type": "mllama_text_model"}}
V90B_LIKE = {
    "model_type": "mllama",
    "vision_config": VISION,
    "text_config": {"model_type": "mllama_text_model", "hidden_size": 8192, "num_hidden_layers": 100,
                    "num_attention_heads": 64, "intermediate_size": 28672,
                    "cross_attention_layers": [3 + 5 * i for i in range(20)]},
}  # fmt: skip
TINY_TEXT = {
    "model_type": "mllama_text_model",
    "vocab_size": 56,
    "hidden_size": 32,
    "num_hidden_layers": 4,
    "pad_token_id": 0,
}
TINY_TEXT |= {
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 48,
    "cross_attention_layers": [1],
}
TINY_VISION = {"model_type": "mllama_vision_model", "hidden_size": 16, "num_hidden_layers": 2, "num_global_layers": 1}
TINY_VISION |= {
    "attention_heads": 2,
    "intermediate_size": 24,
    "image_size": 8,
    "patch_size": 4,
    "vision_output_dim": 32,
}
SMALL = {"model_type": "mllama", "text_config": TINY_TEXT, "vision_config": TINY_VISION}
CONFIGS = {
    "defaults": {"model_type": "mllama"},
    "text-defaults": {"model_type": "mllama_text_model"},
    "vision-defaults": {"model_type": "mllama_vision_model"},
    "11b-like": V11B_LIKE,
    "90b-like": V90B_LIKE,
    "aspect-ratios-and-tiles": {
        **SMALL,
        "vision_config": {**TINY_VISION, "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]], "max_num_tiles": 2},
    },
    "no-cross-layers": {**SMALL, "text_config": {**TINY_TEXT, "cross_attention_layers": []}},
    "small": SMALL,
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("config", [SMALL, TINY_TEXT, TINY_VISION], ids=["mllama", "text", "vision"])
def test_every_class(config):
    expect_all_classes(config)


# The bundled catalog's published config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "mllama"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    m = from_config(entry.config, entry.id)
    assert sum(m.towers().values()) == m.total
    text = entry.config["text_config"]
    assert m.total - m.backbone_total == text["vocab_size"] * text["hidden_size"]  # the untied head


def test_towers_sum_to_the_whole():
    m = from_config(V11B_LIKE, "t", model_class="MllamaForConditionalGeneration")
    towers = m.towers()
    assert sum(towers.values()) == m.total
    assert towers["projector"] == 7680 * 4096 + 4096


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_text_only_prompts_cache(dtype):
    """The self-attention layers cache the text; the cross-attention layers hold nothing without
    an image (said in a note)."""
    fields = {k: v for k, v in TINY_TEXT.items() if k != "model_type"}
    expect_cache("mllama_text_model", fields, "MllamaForCausalLM", dtype=dtype)
    layout = attention_layout(from_config(V11B_LIKE, "t"))
    assert sum(k.layers for k in layout.kinds) == 32
    assert any("8 cross-attention layers cache an image" in n for n in layout.notes)


def test_impossible_configs_are_refused():
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "text_config": {**TINY_TEXT, "cross_attention_layers": "3"}}, "t")
    assert e.value.field == "text_config.cross_attention_layers"
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "vision_config": {**TINY_VISION, "attention_heads": 3}}, "t")
    assert e.value.field == "vision_config.hidden_size"


@pytest.mark.parametrize("name", ["defaults", "11b-like", "small"])
def test_the_causal_lm_of_an_mllama_config_is_its_language_model(name):
    """transformers builds MllamaForCausalLM from an mllama config's text config alone (issue
    20): tensor by tensor as transformers builds it, its backbone the text model."""
    m = expect_class(CONFIGS[name], "MllamaForCausalLM")
    text_config = CONFIGS[name].get("text_config") or {"model_type": "mllama_text_model"}
    text = from_config(text_config, "t", model_class="MllamaForCausalLM")
    assert (m.total, m.backbone_class, m.backbone_total) == (text.total, "MllamaTextModel", text.backbone_total)
    assert not m.towers() and any("language model alone" in n for n in m.notes)


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_the_causal_lm_of_a_published_config(entry):
    m = expect_class(entry.config, "MllamaForCausalLM")
    whole = from_config(entry.config, entry.id)
    assert m.total == whole.towers()["language_model"]  # the whole model's language tower, head included
