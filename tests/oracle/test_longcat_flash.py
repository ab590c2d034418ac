import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = resources.files("paramcount") / "catalog" / "meituan-longcat--LongCat-Flash-Chat.json"
LONGCAT_FLASH_CHAT = json.loads(CATALOG.read_text(encoding="utf-8"))["config"]
SMALL = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "ffn_hidden_size": 96,
    "expert_ffn_hidden_size": 16,
    "num_layers": 2,
    "num_attention_heads": 4,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
    "n_routed_experts": 8,
    "zero_expert_num": 4,
    "moe_topk": 3,
}
TYPED = {"model_type": "longcat_flash", **SMALL}

CONFIGS = {
    "defaults": {"model_type": "longcat_flash"},
    "longcat-flash-chat": LONGCAT_FLASH_CHAT,
    "small": TYPED,
    "small-router-bias-biased-attention-tied": {
        **TYPED,
        "router_bias": True,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
    "small-qk-head-dim": {**TYPED, "qk_head_dim": 20},
    "small-no-zero-experts": {**TYPED, "zero_expert_num": 0},
    "small-only-zero-experts": {**TYPED, "n_routed_experts": 0},
    # num_hidden_layers sets num_layers to half of it, and wins over num_layers
    "small-num-hidden-layers": {**TYPED, "num_hidden_layers": 7, "num_layers": 5},
    # the attribute_map names win over the fields they map to
    "small-mapped-names": {**TYPED, "num_experts_per_tok": 2, "intermediate_size": 40, "moe_intermediate_size": 8},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_longcat_flash_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_longcat_flash_chat_totals():
    model = expect_same(LONGCAT_FLASH_CHAT)
    phantom = 28 * 256 * 2 * 2048 * 6144  # gate_up_proj rows transformers allocates for zero experts
    assert model.total == 741_053_585_408
    assert model.total - phantom == 560_664_958_976  # "560B total": what the checkpoint holds
    real = 28 * 512 * 3 * 2048 * 6144  # the checkpoint's per-expert tensors
    experts = sum(leaf.count for leaf in model.tensors() if ".experts." in leaf.name)
    assert experts - phantom == real
    # all 12 picks on real experts; the card's 31.3B excludes the 0.8B embedding
    assert model.active_total == 32_182_654_976
    assert round((model.active_total - 131072 * 6144) / 1e9, 1) == 31.4
    least = model.active_total - 12 * 3 * 2048 * 6144 * 28 - 131072 * 6144
    assert round(least / 1e9, 1) == 18.7  # the card's 18.6B
    notes = " ".join(model.notes)
    assert "zero-computation" in notes and "180,388,626,432" in notes and "e_score_correction_bias" in notes


def test_longcat_flash_names():
    names = {leaf.name for leaf in from_config(TYPED, "t").tensors()}
    for name in (
        "layers.1.self_attn.1.q_b_proj.weight",
        "layers.0.mlps.1.down_proj.weight",
        "layers.0.input_layernorm.1.weight",
        "layers.0.post_attention_layernorm.0.weight",
        "layers.0.mlp.router.classifier.weight",
        "layers.0.mlp.experts.gate_up_proj",
        "layers.0.mlp.experts.down_proj",
    ):
        assert name in names


def test_longcat_flash_active_with_few_zero_experts():
    """k real experts at most, never more than E (here k = 3 of E = 2 real + 4 zero)."""
    model = from_config({**TYPED, "n_routed_experts": 2}, "t")
    per_layer_experts = 2 * (2 * 16 * 64) + 2 * (64 * 16)  # all of gate_up's real rows and down_proj
    dense = model.total - 2 * (6 * 2 * 16 * 64 + 2 * 64 * 16)
    assert model.active_total == dense + 2 * per_layer_experts


def test_longcat_flash_errors():
    with pytest.raises(ParamcountError, match="q_lora_rank"):
        from_config({**TYPED, "q_lora_rank": None}, "t")
    with pytest.raises(ParamcountError, match="moe_topk"):
        from_config({**TYPED, "moe_topk": 13}, "t")
    with pytest.raises(ParamcountError, match="n_routed_experts"):
        from_config({**TYPED, "n_routed_experts": 0, "zero_expert_num": 0}, "t")
    with pytest.raises(ParamcountError, match="num_hidden_layers"):
        from_config({**TYPED, "num_hidden_layers": 1}, "t")


def test_every_longcat_flash_class():
    expect_all_classes(TYPED)


def test_longcat_flash_cache():
    """Two MLA latents per decoder layer (num_hidden_layers = 2 × num_layers cache entries)."""
    tiny = {**SMALL, "head_dim": 4}  # the rotary width, which LongCat reads from head_dim
    expect_cache("longcat_flash", tiny, "LongcatFlashForCausalLM", tokens=9, batch=2)
    expect_cache("longcat_flash", tiny, "LongcatFlashForCausalLM", tokens=9, batch=2, dtype="bf16")


def test_longcat_flash_layers_flag_counts_decoder_layers():
    from paramcount.frontends.dims import config

    raw = config("longcat_flash", {"layers": 3, "hidden": None})
    assert raw == {"model_type": "longcat_flash", "num_layers": 3}
    assert [(g.first, g.copies) for g in from_config({**raw, **SMALL, "num_layers": 3}, "t").layers()] == [(0, 3)]
