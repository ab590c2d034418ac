import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = resources.files("paramcount") / "catalog" / "zai-org--GLM-5.json"
GLM_5 = json.loads(CATALOG.read_text(encoding="utf-8"))["config"]
SMALL = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 160,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "index_topk": 4,
}
TYPED = {"model_type": "glm_moe_dsa", **SMALL}
SHARED = ["full", "full", "shared", "shared", "full", "shared"]

CONFIGS = {
    "defaults": {"model_type": "glm_moe_dsa"},
    "glm-5": GLM_5,
    # GLM-5.2-style shared indexer selection (index_topk_freq 4, index_skip_topk_offset 3) at GLM-5's shapes
    "glm-5-shared-topk": {**GLM_5, "index_topk_freq": 4, "index_skip_topk_offset": 3},
    "small": TYPED,
    "small-indexer-types": {**TYPED, "indexer_types": SHARED},
    "small-pattern": {**TYPED, "index_topk_pattern": "FFSFSS"},
    "small-freq-offset": {**TYPED, "index_topk_freq": 2, "index_skip_topk_offset": 1},
    "small-biased-tied-mlp-types": {
        **TYPED,
        "attention_bias": True,
        "tie_word_embeddings": True,
        "n_shared_experts": 2,
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse", "dense"],
    },
    "small-alias": {**{k: v for k, v in TYPED.items() if k != "n_routed_experts"}, "num_local_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_glm_moe_dsa_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_glm_5_totals():
    model = expect_same(GLM_5)  # announced as "744B total, 40B active"
    assert (model.total, model.active_total) == (743_911_199_232, 41_784_709_632)
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 3), (3, 75)]
    assert any("model.layers.78" in n and "9,952,920,320" in n for n in model.notes)


def test_glm_5_shared_topk_drops_indexers():
    shared = from_config({**GLM_5, "index_topk_freq": 4, "index_skip_topk_offset": 3}, "t")
    full = from_config(GLM_5, "t")
    per_indexer = 32 * 128 * 2048 + 6144 * 128 + 2 * 128 + 6144 * 32
    # layers 0-2 and every 4th from 6 keep theirs: 3 + 18 of 78
    assert full.total - shared.total == (78 - 21) * per_indexer


def test_glm_moe_dsa_errors():
    with pytest.raises(ParamcountError, match="q_lora_rank"):
        from_config({**TYPED, "q_lora_rank": None}, "t")
    with pytest.raises(ParamcountError, match="indexer_types"):
        from_config({**TYPED, "indexer_types": ["full"] * 5}, "t")
    with pytest.raises(ParamcountError, match="indexer_types"):
        from_config({**TYPED, "indexer_types": ["full"] * 5 + ["none"]}, "t")
    with pytest.raises(ParamcountError, match="index_topk_pattern"):
        from_config({**TYPED, "index_topk_pattern": "FFSXSS"}, "t")
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**TYPED, "num_experts_per_tok": 9}, "t")


def test_every_glm_moe_dsa_class():
    expect_all_classes(TYPED)


@pytest.mark.parametrize("schedule", [{}, {"indexer_types": SHARED}])
def test_glm_moe_dsa_cache(schedule):
    """The latent in every layer, indexer keys only where a layer runs its own indexer."""
    tiny = {**SMALL, **schedule}
    expect_cache("glm_moe_dsa", tiny, "GlmMoeDsaForCausalLM", tokens=9, batch=2)
    expect_cache("glm_moe_dsa", tiny, "GlmMoeDsaForCausalLM", tokens=9, batch=2, dtype="bf16")
