import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# baidu/ERNIE-4.5-21B-A3B-PT
ERNIE_21B_A3B = {
    "model_type": "ernie4_5_moe",
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "max_position_embeddings": 131072,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "pad_token_id": 0,
    "rms_norm_eps": 1e-05,
    "use_cache": False,
    "vocab_size": 103424,
    "rope_theta": 500000,
    "use_bias": False,
    "tie_word_embeddings": True,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1,
    "moe_intermediate_size": 1536,
    "moe_capacity": [64, 64, 64],
    "moe_gate": "topk",
    "moe_k": 6,
    "moe_layer_interval": 1,
    "moe_use_aux_free": True,
}

# baidu/ERNIE-4.5-300B-A47B-PT, its architecture fields as Huawei's atb_llm tests quote them: three
# dense layers, MoE from layer 3 to 53, no shared experts.
ERNIE_300B_A47B = {
    "model_type": "ernie4_5_moe",
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "max_position_embeddings": 131072,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 54,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "rms_norm_eps": 1e-05,
    "use_cache": False,
    "vocab_size": 103424,
    "rope_theta": 500000.0,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 0,
    "moe_layer_start_index": 3,
    "moe_layer_end_index": 53,
    "moe_intermediate_size": 3584,
    "moe_gate": "topk_fused",
    "moe_k": 8,
    "moe_layer_interval": 1,
    "tie_word_embeddings": True,
}

SMALL = {
    "model_type": "ernie4_5_moe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 80,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "moe_intermediate_size": 24,
    "moe_num_experts": 5,
    "moe_k": 2,
    "moe_num_shared_experts": 1,
}

CONFIGS = {
    "defaults": {"model_type": "ernie4_5_moe"},
    "ernie-4.5-21b-a3b": ERNIE_21B_A3B,
    "ernie-4.5-300b-a47b": ERNIE_300B_A47B,
    "biased-untied-interval-2-window": {
        **SMALL,
        "use_bias": True,
        "tie_word_embeddings": False,
        "moe_layer_start_index": 1,
        "moe_layer_end_index": 4,
        "moe_layer_interval": 2,
    },
    "biased-tied": {**SMALL, "use_bias": True},
    "no-shared-experts-all-moe": {**SMALL, "moe_num_shared_experts": 0, "moe_layer_start_index": 0},
    "start-past-the-end": {**SMALL, "moe_layer_start_index": 9},
    "end-before-start": {**SMALL, "moe_layer_start_index": 3, "moe_layer_end_index": 2},
    "mapped-names-win": {**SMALL, "num_experts": 4, "num_experts_per_tok": 1},
    "explicit-head-dim": {**SMALL, "head_dim": 24},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_ernie4_5_moe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_ernie4_5_moe_class():
    expect_all_classes(SMALL)


def test_ernie_21b_a3b_total_and_active():
    """The name's 21B total, 3B active: 6 of 64 experts plus two shared ones per MoE layer
    (3.09B without the tied embedding, V·h)."""
    model = from_config(ERNIE_21B_A3B, "t")
    assert (model.total, model.active_total) == (21_825_437_888, 3_352_150_208)
    assert round((model.active_total - 103424 * 2560) / 1e9) == 3
    assert model.total - model.active_total == 27 * (64 - 6) * 3 * 2560 * 1536
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 1), (1, 27)]


def test_ernie_300b_a47b_total_and_active():
    """The name's 300B total and 47B active: 8 of 64 experts, no shared expert, in layers 3-53."""
    model = from_config(ERNIE_300B_A47B, "t")
    assert (model.total, model.active_total) == (298_636_913_856, 47_079_337_152)
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 3), (3, 51)]


def test_ernie_layer_schedule():
    from paramcount.arch import family
    from paramcount.arch.ernie4_5_moe import runs

    for start, end, step in [(1, -1, 1), (0, 4, 2), (2, 3, 3), (5, 1, 1), (0, -1, 4)]:
        raw = {**SMALL, "moe_layer_start_index": start, "moe_layer_end_index": end, "moe_layer_interval": step}
        flags = [f for _, n, f in runs(family("ernie4_5_moe").cfg(raw, "t")) for _ in range(n)]
        last = 5 if end == -1 else end
        assert flags == [(i + 1) % step == 0 and start <= i <= last for i in range(6)]


def test_ernie_correction_bias_is_a_parameter():
    model = from_config(SMALL, "t", model_class="Ernie4_5_MoeForCausalLM")
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert shapes["model.layers.1.mlp.gate.moe_statics.e_score_correction_bias"] == (1, 5)
    saved = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "model.layers.1.mlp.moe_statics.e_score_correction_bias" in saved
    assert "model.layers.1.mlp.experts.4.up_proj.weight" in saved
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"moe_k": 6}, "moe_k"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"num_key_value_heads": None}, "num_key_value_heads"),
        ({"moe_layer_interval": 0}, "moe_layer_interval"),
    ],
)
def test_ernie4_5_moe_refuses_impossible_configs(bad, field):
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, **bad}, "t")
    assert e.value.field == field


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_ernie4_5_moe_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("ernie4_5_moe", tiny, "Ernie4_5_MoeForCausalLM", dtype=dtype)
