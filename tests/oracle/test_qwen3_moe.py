import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"]}

# Qwen/Qwen3-30B-A3B: head_dim 128 though h/a = 64
QWEN3_30B_A3B = {
    **CAUSAL,
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 768,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
    "attention_bias": False,
    "max_position_embeddings": 40960,
    "max_window_layers": 48,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
}

# Qwen/Qwen3-235B-A22B
QWEN3_235B_A22B = {
    **QWEN3_30B_A3B,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 94,
    "num_attention_heads": 64,
    "moe_intermediate_size": 1536,
    "max_window_layers": 94,
}

SMALL = {
    "model_type": "qwen3_moe",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "num_experts": 6,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "mlp_only_layers": [2],
    "num_labels": 3,
}

CONFIGS = {
    "defaults": {"model_type": "qwen3_moe"},
    "qwen3-30b-a3b": QWEN3_30B_A3B,
    "qwen3-235b-a22b": QWEN3_235B_A22B,
    "sparse-step-3-bias-tied-local-experts-name": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 7,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "num_local_experts": 5,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": 40,
        "decoder_sparse_step": 3,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
    "no-experts-all-dense": {**SMALL, "architectures": ["Qwen3MoeForCausalLM"], "num_experts": 0},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_qwen3_moe_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_qwen3_moe_class():
    expect_all_classes(SMALL)


@pytest.mark.parametrize(
    ("raw", "total", "active"),
    [(QWEN3_30B_A3B, 30_532_122_624, 3_353_032_704), (QWEN3_235B_A22B, 235_093_634_560, 22_190_763_520)],
)
def test_published_totals(raw, total, active):
    """The model cards (truncating): 30.5B with 3.3B activated; 235B with 22B activated."""
    model = from_config(raw, "test")
    assert (model.total, model.active_total) == (total, active)


def test_num_local_experts_wins_over_num_experts():
    """transformers stores the count as num_local_experts and sets it from the file last."""
    expect_same({**SMALL, "num_experts": 6, "num_local_experts": 3})


def test_checkpoint_names_split_experts():
    model = from_config(SMALL, "test", model_class="Qwen3MoeForCausalLM")
    saved = {leaf.name: leaf.shape for leaf in model.tensors(checkpoint=True)}
    assert saved["model.layers.3.mlp.experts.5.gate_proj.weight"] == (32, 64)
    assert saved["model.layers.3.mlp.experts.5.down_proj.weight"] == (64, 32)
    assert saved["model.layers.3.mlp.gate.weight"] == (6, 64)
    assert saved["model.layers.2.mlp.up_proj.weight"] == (96, 64)  # dense by mlp_only_layers
    assert saved["model.layers.0.self_attn.q_norm.weight"] == (32,)
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True) if not leaf.tied_to) == model.total


def test_top_k_cannot_exceed_experts():
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**SMALL, "num_experts_per_tok": 7}, "test")
