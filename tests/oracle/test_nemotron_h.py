import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

# nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json (shape fields)
NANO_9B = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "hidden_size": 4480,
           "intermediate_size": 15680, "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 131072, "ssm_state_size": 128, "conv_kernel": 4, "n_groups": 8,
           "mamba_num_heads": 128, "mamba_head_dim": 80, "use_conv_bias": True, "use_bias": False,
           "mlp_bias": False, "tie_word_embeddings": False,
           "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"}  # fmt: skip
# NVIDIA's 4B Nemotron Nano (hidden 3136, 42 blocks, 96 Mamba heads), config.json shape fields
NANO_4B = {**NANO_9B, "hidden_size": 3136, "intermediate_size": 12544, "num_hidden_layers": 42,
           "mamba_num_heads": 96, "hybrid_override_pattern": "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-"}  # fmt: skip
# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (shape fields): 23 MoE blocks of 128 experts (top 6)
NANO_30B_A3B = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "hidden_size": 2688,
                "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "head_dim": 128,
                "intermediate_size": 1856, "mamba_head_dim": 64, "mamba_num_heads": 64, "mlp_bias": False,
                "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "n_groups": 8,
                "n_routed_experts": 128, "num_attention_heads": 32, "num_experts_per_tok": 6,
                "num_hidden_layers": 52, "num_key_value_heads": 2, "ssm_state_size": 128, "conv_kernel": 4,
                "tie_word_embeddings": False, "use_bias": False, "use_conv_bias": True,
                "vocab_size": 131072}  # fmt: skip
# nvidia/Nemotron-H-8B-Base-8K's published 52-block pattern over the class's default widths
H_8B = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "mamba_head_dim": 64,
        "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"}  # fmt: skip

SMALL = {"model_type": "nemotron_h", "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 8, "ssm_state_size": 6, "mamba_num_heads": 8, "mamba_head_dim": 4,
         "n_groups": 2, "conv_kernel": 3, "n_routed_experts": 4, "num_experts_per_tok": 2,
         "moe_intermediate_size": 16, "moe_shared_expert_intermediate_size": 20, "vocab_size": 64,
         "layers_block_type": ["linear_attention", "moe", "full_attention", "mlp", "linear_attention"]}  # fmt: skip
CAUSAL = {**SMALL, "architectures": ["NemotronHForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "nemotron_h"},
    "nemotron-nano-9b-v2": NANO_9B,
    "nemotron-nano-4b": NANO_4B,
    "nemotron-3-nano-30b-a3b": NANO_30B_A3B,
    "h-8b-pattern-on-defaults": H_8B,
    "small-moe-mlp": CAUSAL,
    "pattern-biased-tied-latent": {**{k: v for k, v in CAUSAL.items() if k != "layers_block_type"},
                                   "hybrid_override_pattern": "ME*-MEE", "use_bias": True, "use_conv_bias": False,
                                   "mlp_bias": True, "tie_word_embeddings": True, "moe_latent_size": 16},
    "legacy-mamba-names": {**CAUSAL, "mamba_n_groups": 4, "mamba_d_conv": 2, "mamba_conv_bias": False,
                           "num_hidden_layers": 3},
    "layer-types-alias": {**{k: v for k, v in CAUSAL.items() if k != "layers_block_type"},
                          "layer_types": ["full_attention", "full_attention", "moe"]},
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_nemotron_h_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)


def test_published_sizes():
    """Nano 9B v2 as its name rounds it; the MoE's active figure is k of E routed experts,
    the shared MLP always."""
    assert from_config(NANO_9B, "t").total == 8_888_227_328
    # NVIDIA: 31.6B total, 3.2B active (3.6B with the embeddings)
    moe = from_config(NANO_30B_A3B, "t")
    assert (moe.total, moe.active_total) == (31_577_937_344, 3_580_073_408)
    assert moe.total - moe.active_total == 23 * 122 * 2 * 2688 * 1856  # 23 MoE blocks × 122 idle experts
    m = from_config(CAUSAL, "t")
    assert m.total - m.active_total == 2 * 2 * 32 * 16  # 2 idle experts × (up + down)


def test_mtp_note_counts_the_skipped_weights():
    """One MTP step of attention + MoE blocks with enorm, hnorm, eh_proj and a final norm."""
    m = from_config({**SMALL, "num_nextn_predict_layers": 1}, "t")
    attn = 32 + 2 * 32 * 32 + 2 * 16 * 32
    moe = 32 + 4 * 32 + 2 * 4 * 16 * 32 + 2 * 20 * 32
    said = [n for n in m.notes if "multi-token" in n]
    assert said and f"{attn + moe + 2 * 32 * 32 + 3 * 32:,} parameters" in said[0]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_equals_transformers(dtype):
    expect_cache("nemotron_h", SMALL, "NemotronHForCausalLM", dtype=dtype)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"mamba_num_heads": 5}, "n_groups"),
        ({"n_groups": 3}, "n_groups"),
        ({"layers_block_type": ["mamba2"]}, "layers_block_type"),
        ({"layers_block_type": None, "hybrid_override_pattern": "M*X"}, "hybrid_override_pattern"),
        ({"num_experts_per_tok": 5}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ],
)
def test_impossible_configs(fields, field):
    with pytest.raises(ParamcountError, match=field):
        from_config({**SMALL, **fields}, "t")
