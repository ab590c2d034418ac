import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"]}

# Qwen/Qwen1.5-MoE-A2.7B
QWEN1_5_MOE = {
    **CAUSAL,
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1,
    "norm_topk_prob": False,
    "max_position_embeddings": 8192,
    "max_window_layers": 21,
    "sliding_window": 32768,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
}

SMALL = {
    "model_type": "qwen2_moe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_experts": 6,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
    "mlp_only_layers": [0],
    "num_labels": 3,
}

CONFIGS = {
    "defaults": {"model_type": "qwen2_moe"},
    "qwen1.5-moe-a2.7b": QWEN1_5_MOE,
    # Qwen/Qwen2-57B-A14B
    "qwen2-57b-a14b": {
        **CAUSAL,
        "vocab_size": 151936,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2560,
        "shared_expert_intermediate_size": 20480,
        "decoder_sparse_step": 1,
        "max_position_embeddings": 131072,
        "max_window_layers": 28,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "tie_word_embeddings": False,
    },
    "sparse-step-2-dense-layers-no-qkv-bias-tied": {
        **SMALL,
        "architectures": ["Qwen2MoeForCausalLM"],
        "num_hidden_layers": 7,
        "decoder_sparse_step": 2,
        "mlp_only_layers": [3, 6, 40],
        "qkv_bias": False,
        "tie_word_embeddings": True,
        "head_dim": 24,
    },
    "dense-first-and-last": {**SMALL, "architectures": ["Qwen2MoeForCausalLM"], "mlp_only_layers": [0, 3]},
    "no-experts-all-dense": {
        **SMALL,
        "architectures": ["Qwen2MoeForCausalLM"],
        "num_experts": 0,
        "decoder_sparse_step": 0,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen2_moe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen2_moe_class():
    expect_all_classes(SMALL)


def test_qwen1_5_moe_counts():
    """The model card: 14.3B parameters, 2.7B activated (the shared expert always runs)."""
    model = from_config(QWEN1_5_MOE, "test")
    assert round(model.total / 1e9, 1) == 14.3
    assert round(model.active_total / 1e9, 1) == 2.7
    assert model.total - model.active_total == 24 * 56 * 3 * 2048 * 1408


def test_qwen2_57b_a14b_counts():
    """The name's 57B total and 14B activated."""
    model = from_config(CONFIGS["qwen2-57b-a14b"], "test")
    assert (model.total, model.active_total) == (57_408_658_944, 14_249_270_784)


def test_layer_runs_follow_sparse_step_and_mlp_only_layers():
    raw = {**CONFIGS["sparse-step-2-dense-layers-no-qkv-bias-tied"]}
    groups = from_config(raw, "test").layers()
    assert [(g.first, g.copies) for g in groups] == [(0, 1), (1, 1), (2, 3), (5, 1), (6, 1)]
    assert groups[0].each == groups[2].each  # dense layers 0 and 2-4 alike; 3 is dense only by mlp_only_layers


def test_checkpoint_names_split_experts():
    model = from_config(SMALL, "test", model_class="Qwen2MoeForCausalLM")
    saved = {leaf.name: leaf.shape for leaf in model.tensors(checkpoint=True)}
    assert saved["model.layers.1.mlp.experts.5.gate_proj.weight"] == (32, 64)
    assert saved["model.layers.1.mlp.experts.5.up_proj.weight"] == (32, 64)
    assert saved["model.layers.1.mlp.experts.5.down_proj.weight"] == (64, 32)
    assert saved["model.layers.1.mlp.shared_expert_gate.weight"] == (1, 64)
    assert saved["model.layers.0.mlp.gate_proj.weight"] == (96, 64)  # dense layer 0
    assert "model.layers.1.mlp.experts.gate_up_proj" not in saved
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


def test_mlp_only_layers_must_be_indices():
    with pytest.raises(ParamcountError, match="mlp_only_layers"):
        from_config({"model_type": "qwen2_moe", "mlp_only_layers": 3}, "test")


@pytest.mark.parametrize("step", [1, 2, 3, 5])
@pytest.mark.parametrize("dense", [[], [0], [0, 1, 9, 4], [-1, 11, 12, 5, 6]])
def test_layer_runs_cover_every_layer_as_transformers_decides(step, dense):
    from paramcount.arch import family
    from paramcount.arch.qwen2_moe import sparse_runs

    raw = {"model_type": "qwen2_moe", "num_hidden_layers": 12, "decoder_sparse_step": step, "mlp_only_layers": dense}
    flags = [f for _, n, f in sparse_runs(family("qwen2_moe").cfg(raw, "test")) for _ in range(n)]
    assert flags == [i not in dense and (i + 1) % step == 0 for i in range(12)]
