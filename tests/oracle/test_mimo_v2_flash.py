import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same


def hybrid(n):
    return ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]


# XiaomiMiMo/MiMo-V2-Flash: the shapes transformers' MiMoV2FlashConfig documents for this
# checkpoint (its defaults), written out as layer_types / mlp_layer_types.
MIMO_V2_FLASH = {
    "model_type": "mimo_v2_flash",
    "architectures": ["MiMoV2FlashForCausalLM"],
    "vocab_size": 152576,
    "hidden_size": 4096,
    "intermediate_size": 16384,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "sliding_window": 129,
    "layer_types": hybrid(48),
    "mlp_layer_types": ["dense"] + ["sparse"] * 47,
}

SMALL = {
    "model_type": "mimo_v2_flash",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 80,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 7,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 24,
    "v_head_dim": 16,
    "n_routed_experts": 6,
    "num_experts_per_tok": 2,
}

CONFIGS = {
    "defaults": {"model_type": "mimo_v2_flash"},
    "mimo-v2-flash": MIMO_V2_FLASH,
    "small-default-patterns": SMALL,
    "biased-tied-explicit-types": {
        **SMALL,
        "attention_bias": True,
        "tie_word_embeddings": True,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"] * 2 + ["sliding_attention"] * 2,
        "mlp_layer_types": ["sparse", "dense", "dense", "sparse", "sparse", "dense", "sparse"],
    },
    "all-full-all-dense": {
        **SMALL,
        "layer_types": ["full_attention"] * 7,
        "mlp_layer_types": ["dense"] * 7,
    },
    # Xiaomi's own pattern fields are not read by transformers: the defaults hold
    "unread-xiaomi-fields": {**SMALL, "hybrid_layer_pattern": [1] * 7, "moe_layer_freq": [0] * 7},
    "num-local-experts-wins": {**SMALL, "num_local_experts": 4},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mimo_v2_flash_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mimo_v2_flash_class():
    expect_all_classes(SMALL)


def test_mimo_v2_flash_total_and_active():
    """The card: 309B total, 15B active (the checkpoint's multi-token-prediction layers aside)."""
    model = from_config(MIMO_V2_FLASH, "t")
    assert (model.total, model.active_total) == (308_778_768_832, 15_445_924_288)
    assert model.total - model.active_total == 47 * (256 - 8) * 3 * 4096 * 2048


def test_mimo_v2_flash_layers_differ_by_type():
    model = from_config(SMALL, "t", model_class="MiMoV2FlashForCausalLM")
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert "model.layers.0.self_attn.sinks" not in shapes  # full attention: no sink
    assert shapes["model.layers.1.self_attn.sinks"] == (4,)
    assert shapes["model.layers.1.self_attn.k_proj.weight"] == (2 * 24, 64)  # sliding: 2 × KV heads
    assert shapes["model.layers.5.self_attn.k_proj.weight"] == (24, 64)
    assert shapes["model.layers.5.self_attn.v_proj.weight"] == (16, 64)
    assert shapes["model.layers.5.self_attn.o_proj.weight"] == (64, 4 * 16)
    assert "model.layers.0.mlp.gate_proj.weight" in shapes and "model.layers.1.mlp.experts.gate_up_proj" in shapes
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 1), (1, 4), (5, 1), (6, 1)]


def test_mimo_v2_flash_notes():
    assert any("e_score_correction_bias" in n for n in from_config(SMALL, "t").notes)
    notes = from_config(CONFIGS["unread-xiaomi-fields"], "t").notes
    assert any("hybrid_layer_pattern" in n for n in notes)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_experts_per_tok": 7}, "num_experts_per_tok"),
        ({"layer_types": ["full_attention"] * 3}, "layer_types"),
        ({"mlp_layer_types": ["dense", "moe"] + ["dense"] * 5}, "mlp_layer_types"),
        ({"mlp_layer_types": ["dense"] * 8}, "mlp_layer_types"),  # transformers checks the length
        ({"v_head_dim": None}, "v_head_dim"),
    ],
)
def test_mimo_v2_flash_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


TINY = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")} | {"sliding_window": 4}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_mimo_v2_flash_cache(dtype):
    expect_cache("mimo_v2_flash", TINY, "MiMoV2FlashForCausalLM", dtype=dtype)


def test_mimo_v2_flash_cache_sliding_window_size():
    """Xiaomi's sliding_window_size is the window without the query: the config adds one."""
    expect_cache("mimo_v2_flash", {**TINY, "sliding_window_size": 3}, "MiMoV2FlashForCausalLM")
