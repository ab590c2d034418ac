"""Qwen3-VL, Qwen3-VL-MoE, Qwen3.5 and Qwen3.5-MoE (the composites) and Qwen3-VL's two text
models against transformers 5.23 on the meta device, every class; the towers sum to the whole;
the cache is the language model's, held to a real one.

The "-like" configurations take the shapes public configs quote for Qwen3-VL-8B and
Qwen3-VL-30B-A3B (the published config.json files are in the catalog, held to every class
below); the Qwen3.5 ones reuse the Qwen3.5 text configs of tests/oracle/test_qwen3_5_text.py and
test_qwen3_5_moe_text.py with the vision defaults.
"""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same
from .test_qwen3_5_moe_text import TINY as MOE35_TINY
from .test_qwen3_5_text import QWEN3_5_27B
from .test_qwen3_5_text import TINY as Q35_TINY

VISION = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "patch_size": 16}
VL_8B_LIKE = {
    "model_type": "qwen3_vl",
    "text_config": {
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
    },
    "vision_config": {**VISION, "out_hidden_size": 4096, "deepstack_visual_indexes": [8, 16, 24]},
}
VL_MOE_LIKE = {
    "model_type": "qwen3_vl_moe",
    "text_config": {
        "hidden_size": 2048,
        "num_hidden_layers": 8,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "moe_intermediate_size": 768,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "vocab_size": 151936,
    },
    "vision_config": {**VISION, "out_hidden_size": 2048},
}
TINY_VISION = {"depth": 2, "hidden_size": 16, "intermediate_size": 24, "num_heads": 2, "patch_size": 4}
TINY_VISION |= {"out_hidden_size": 32, "num_position_embeddings": 16, "deepstack_visual_indexes": [0, 1]}
TINY_TEXT = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3}
TINY_TEXT |= {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
SMALL = {
    "vl": {"model_type": "qwen3_vl", "text_config": TINY_TEXT, "vision_config": TINY_VISION},
    "vl-moe": {
        "model_type": "qwen3_vl_moe",
        "text_config": {**TINY_TEXT, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
        "vision_config": TINY_VISION,
    },
    "3.5": {
        "model_type": "qwen3_5",
        "text_config": Q35_TINY,
        "vision_config": {**TINY_VISION, "deepstack_visual_indexes": None},
    },
    "3.5-moe": {"model_type": "qwen3_5_moe", "text_config": MOE35_TINY, "vision_config": TINY_VISION},
}
CONFIGS = {
    "vl-defaults": {"model_type": "qwen3_vl"},
    "vl-moe-defaults": {"model_type": "qwen3_vl_moe"},
    "3.5-defaults": {"model_type": "qwen3_5"},
    "3.5-moe-defaults": {"model_type": "qwen3_5_moe"},
    "vl-text-defaults": {"model_type": "qwen3_vl_text"},
    "vl-moe-text-defaults": {"model_type": "qwen3_vl_moe_text"},
    "vl-8b-like": VL_8B_LIKE,
    "vl-8b-like-tied": {**VL_8B_LIKE, "tie_word_embeddings": True},
    "vl-no-deepstack": {**VL_8B_LIKE, "vision_config": {**VL_8B_LIKE["vision_config"], "deepstack_visual_indexes": []}},
    "vl-moe-like": VL_MOE_LIKE,
    "vl-moe-like-dense-layers": {
        **VL_MOE_LIKE,
        "text_config": {**VL_MOE_LIKE["text_config"], "mlp_only_layers": [0, 3], "intermediate_size": 512},
    },
    "3.5-27b-text": {
        "model_type": "qwen3_5",
        "text_config": {k: v for k, v in QWEN3_5_27B.items() if k not in ("model_type", "architectures")},
    },
    **{f"small-{k}": v for k, v in SMALL.items()},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_class(name):
    expect_all_classes({**SMALL[name], "num_labels": 3})


@pytest.mark.parametrize("name", sorted(SMALL))
def test_towers_sum_to_the_whole(name):
    m = from_config(SMALL[name], "t", model_class=f"{'base'}")
    towers = m.towers()
    assert set(towers) == {"vision_encoder", "projector", "language_model"}
    assert sum(towers.values()) == m.total
    g = from_config(SMALL[name], "t")
    assert sum(g.towers().values()) == g.total


def test_moe_active_per_token():
    m = from_config(VL_MOE_LIKE, "t")
    e, k, h, i, n = 128, 8, 2048, 768, 8
    assert m.total - m.active_total == n * (e - k) * 3 * h * i


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_cache_is_the_language_models(name, dtype):
    cfg = {k: v for k, v in SMALL[name].items() if k != "model_type"}
    cfg |= {"image_token_id": 60, "video_token_id": 61, "vision_start_token_id": 62, "vision_end_token_id": 63}
    cls = {"vl": "Qwen3VL", "vl-moe": "Qwen3VLMoe", "3.5": "Qwen3_5", "3.5-moe": "Qwen3_5Moe"}[name]
    expect_cache(SMALL[name]["model_type"], cfg, f"{cls}ForConditionalGeneration", dtype=dtype)


def test_impossible_configs_are_refused():
    with pytest.raises(ParamcountError) as e:
        from_config({**VL_8B_LIKE, "vision_config": {**VISION, "num_heads": 5}}, "t")
    assert e.value.field == "vision_config.hidden_size"
    with pytest.raises(ParamcountError) as e:
        from_config({**VL_8B_LIKE, "vision_config": {**VISION, "deepstack_visual_indexes": "8"}}, "t")
    assert e.value.field == "vision_config.deepstack_visual_indexes"


# The bundled catalog's real config.json files of these composites (Qwen3-VL 4B/8B, 30B-A3B, Qwen3.6-35B-A3B).
COMPOSITES = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") in COMPOSITES]


def test_the_catalog_has_these_composites():
    assert {e.config["model_type"] for e in CATALOG} >= {"qwen3_vl", "qwen3_vl_moe", "qwen3_5_moe"}


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_catalog_entries_match_transformers_in_every_class(entry):
    expect_all_classes(entry.config)
    m = from_config(entry.config, entry.id)
    assert sum(m.towers().values()) == m.total
