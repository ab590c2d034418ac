import json
from pathlib import Path

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = Path(__file__).parents[2] / "src" / "paramcount" / "catalog"
# zai-org/GLM-4.7-Flash, the catalog's copy of its published config.json
GLM_4_7_FLASH = json.loads((CATALOG / "zai-org--GLM-4.7-Flash.json").read_text())["config"]

SMALL = {
    "model_type": "glm4_moe_lite",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 6,
    "num_experts_per_tok": 2,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
}

CONFIGS = {
    "defaults": {"model_type": "glm4_moe_lite"},
    "glm-4.7-flash": GLM_4_7_FLASH,
    "small": SMALL,
    # first_k_dense_replace is not read: layer 0 alone stays dense
    "small-first-k-ignored": {**SMALL, "first_k_dense_replace": 3},
    "small-layer-types": {**SMALL, "mlp_layer_types": ["sparse", "dense", "dense", "sparse"]},
    "small-q-lora-null-biased-tied-two-shared": {
        **SMALL,
        "q_lora_rank": None,
        "attention_bias": True,
        "tie_word_embeddings": True,
        "n_shared_experts": 2,
    },
    "small-num-local-experts": {**{k: v for k, v in SMALL.items() if k != "n_routed_experts"}, "num_local_experts": 5},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_glm4_moe_lite_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_glm4_moe_lite_class():
    expect_all_classes(SMALL)


def test_glm_4_7_flash_totals_rows_and_runs():
    model = from_config(GLM_4_7_FLASH, "t")
    assert model.total == 29_943_390_976  # transformers' count (the catalog note)
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 1), (1, 46)]
    h, e, i_e = 2048, 64, 1536
    assert model.total - model.active_total == 46 * (e - 4) * 3 * h * i_e
    rows = model.components()
    assert rows["embeddings"] == rows["output_head"] == 154880 * h


def test_glm_4_7_flash_mtp_note_is_the_checkpoint_difference():
    """The checkpoint's 31,221,488,576 (its 48 safetensors files) less transformers'
    29,943,390,976 is the MTP layer with its own embedding and head, and 47 routers' 64
    correction biases (buffers, the MTP layer's router among them): the note's figure is the
    layer's parameters."""
    model = from_config(GLM_4_7_FLASH, "t")
    note = next(n for n in model.notes if "multi-token-prediction" in n)
    assert "model.layers.47" in note
    assert f"{31_221_488_576 - 29_943_390_976 - 47 * 64:,} parameters" in note
    assert any("e_score_correction_bias" in n for n in model.notes)


def test_glm4_moe_lite_first_k_note():
    assert any("first_k_dense_replace = 3" in n for n in from_config({**SMALL, "first_k_dense_replace": 3}, "t").notes)
    assert not any("first_k_dense_replace" in n for n in from_config(GLM_4_7_FLASH, "t").notes)


def test_glm4_moe_lite_checkpoint_names():
    model = from_config(SMALL, "t", model_class="Glm4MoeLiteForCausalLM")
    names = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.3.mlp.experts.5.down_proj.weight" in names
    assert "model.layers.1.mlp.shared_experts.up_proj.weight" in names
    assert "model.layers.0.mlp.gate_proj.weight" in names
    assert "model.layers.2.self_attn.kv_b_proj.weight" in names
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_experts_per_tok": 7}, "num_experts_per_tok"),
        ({"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types"),
        ({"mlp_layer_types": ["dense", "moe", "sparse", "sparse"]}, "mlp_layer_types"),
    ],
)
def test_glm4_moe_lite_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_glm4_moe_lite_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("glm4_moe_lite", tiny, "Glm4MoeLiteForCausalLM", dtype=dtype)
