import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = resources.files("paramcount") / "catalog" / "deepseek-ai--DeepSeek-V3.2-Exp.json"
DEEPSEEK_V32_EXP = json.loads(CATALOG.read_text(encoding="utf-8"))["config"]
SMALL = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 160,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
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
TYPED = {"model_type": "deepseek_v32", **SMALL}

CONFIGS = {
    "defaults": {"model_type": "deepseek_v32"},
    "deepseek-v3.2-exp": DEEPSEEK_V32_EXP,
    # DeepSeek-V3.2-Exp's shapes at 4 layers, as public test fixtures quote it
    "deepseek-v3.2-exp-4-layers": {**DEEPSEEK_V32_EXP, "num_hidden_layers": 4},
    "small": TYPED,
    "small-biased-tied-unshared": {**TYPED, "attention_bias": True, "tie_word_embeddings": True, "n_shared_experts": 0},
    "small-mlp-layer-types": {**TYPED, "mlp_layer_types": ["sparse", "dense", "dense", "sparse"]},
    "small-all-dense": {**TYPED, "first_k_dense_replace": 9},
    "small-layer-types-written-back": {**TYPED, "layer_types": ["indexed_attention"] * 4},
    "small-alias-num-experts": {**{k: v for k, v in TYPED.items() if k != "n_routed_experts"}, "num_experts": 6},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_deepseek_v32_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_deepseek_v32_exp_totals():
    model = expect_same(DEEPSEEK_V32_EXP)
    # DeepSeek-V3 (671,026,404,352) plus 61 indexers of 64·128·1536 + 7168·128 + 2·128 + 7168·64 each.
    assert model.total == 671_026_404_352 + 61 * (64 * 128 * 1536 + 7168 * 128 + 256 + 7168 * 64)
    assert model.active_total == 38_403_807_488
    notes = " ".join(model.notes)
    assert "model.layers.61" in notes and "11,624,027,392" in notes and "e_score_correction_bias" in notes


def test_deepseek_v32_indexer_names():
    names = {leaf.name for leaf in from_config(TYPED, "t").tensors()}
    for part in ("wq_b.weight", "wk.weight", "k_norm.weight", "k_norm.bias", "weights_proj.weight"):
        assert f"layers.3.self_attn.indexer.{part}" in names


def test_deepseek_v32_errors():
    with pytest.raises(ParamcountError, match="q_lora_rank"):
        from_config({**TYPED, "q_lora_rank": None}, "t")
    with pytest.raises(ParamcountError, match="mlp_layer_types"):
        from_config({**TYPED, "mlp_layer_types": ["dense", "sparse"]}, "t")
    with pytest.raises(ParamcountError, match="mlp_layer_types"):
        from_config({**TYPED, "mlp_layer_types": ["dense", "moe", "sparse", "sparse"]}, "t")
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**TYPED, "num_experts_per_tok": 9}, "t")


def test_every_deepseek_v32_class():
    expect_all_classes(TYPED)


def test_deepseek_v32_cache():
    """The MLA latent and the indexer keys of every layer, as DynamicIndexedLayer holds them."""
    expect_cache("deepseek_v32", SMALL, "DeepseekV32ForCausalLM", tokens=9, batch=2)
    expect_cache("deepseek_v32", SMALL, "DeepseekV32ForCausalLM", tokens=9, batch=2, dtype="bf16")
