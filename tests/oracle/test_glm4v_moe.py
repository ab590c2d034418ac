import json
from pathlib import Path

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = Path(__file__).parents[2] / "src" / "paramcount" / "catalog"
# zai-org/GLM-4.5V, the catalog's copy of its published config.json
GLM_4_5V = json.loads((CATALOG / "zai-org--GLM-4.5V.json").read_text())["config"]

TEXT = {
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 80,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "n_routed_experts": 6,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
}
VISION = {
    "depth": 2,
    "hidden_size": 32,
    "num_heads": 2,
    "image_size": 56,
    "patch_size": 14,
    "out_hidden_size": 48,
    "intermediate_size": 40,
}
SMALL = {
    "model_type": "glm4v_moe",
    "architectures": ["Glm4vMoeForConditionalGeneration"],
    "text_config": TEXT,
    "vision_config": VISION,
}

CONFIGS = {
    "defaults": {"model_type": "glm4v_moe"},
    "glm-4.5v": GLM_4_5V,
    "small": SMALL,
    # q/k/v unbiased, a head_dim of the file's, the vision qkv biased, the model type of the
    # nested configs ignored, the head tied through the text config (pre-v5 saves)
    "small-variants": {
        **SMALL,
        "text_config": {
            **TEXT,
            "model_type": "glm4v_moe",
            "attention_bias": False,
            "head_dim": 24,
            "use_qk_norm": True,
            "tie_word_embeddings": True,
        },
        "vision_config": {**VISION, "model_type": "glm4v_moe", "attention_bias": True, "spatial_merge_size": 1},
    },
    "small-all-moe-no-shared": {**SMALL, "text_config": {**TEXT, "first_k_dense_replace": 0, "n_shared_experts": 0}},
    "text-model": {"model_type": "glm4v_moe_text", **TEXT},
    "text-defaults": {"model_type": "glm4v_moe_text"},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_glm4v_moe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_glm4v_moe_class():
    expect_all_classes(SMALL)


def test_glm_4_5v_total_towers_and_active():
    """107,710,927,360 as transformers counts it; GLM-4.5-Air's decoder (its 106,852,245,504 less
    the 151,552-token vocabulary's two tables at the same size: the vocabularies match) plus the
    vision model."""
    model = from_config(GLM_4_5V, "t")
    assert model.counted_by == "paramcount"
    assert model.total == 107_710_927_360
    towers = model.towers()
    assert sum(towers.values()) == model.total
    assert towers["language_model"] == 106_852_245_504  # GLM-4.5-Air's count (tests/oracle/test_glm4_moe.py)
    assert towers["vision_encoder"] + towers["projector"] == model.total - 106_852_245_504
    assert model.total - model.active_total == 45 * (128 - 8) * 3 * 4096 * 1408
    assert any("e_score_correction_bias" in n for n in model.notes)


def test_glm4v_moe_checkpoint_names():
    model = from_config(SMALL, "t")
    names = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.language_model.layers.2.mlp.experts.5.down_proj.weight" in names
    assert "model.visual.blocks.1.attn.qkv.weight" in names
    assert "model.visual.downsample.weight" in names
    assert "lm_head.weight" in names


def test_glm4v_moe_refuses_impossible_configs():
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "text_config": {**TEXT, "num_experts_per_tok": 7}}, "t")
    assert e.value.field == "text_config.num_experts_per_tok"
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "vision_config": {**VISION, "image_size": [56, 56]}}, "t")
    assert e.value.field == "vision_config.image_size"


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_glm4v_moe_text_cache(dtype):
    # the rotary sections sized to the tiny heads (16 wide, half of them rotated)
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1], "partial_rotary_factor": 0.5}
    tiny = {**TEXT, "vocab_size": None, "rope_parameters": rope}
    expect_cache("glm4v_moe_text", tiny, "Glm4vMoeTextModel", dtype=dtype)
