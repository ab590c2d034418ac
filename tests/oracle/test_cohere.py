import pytest

from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "cohere", "architectures": ["CohereForCausalLM"]}

# CohereForAI/c4ai-command-r-v01: MHA, tied head, no q/k norms
COMMAND_R = {
    **CAUSAL,
    "vocab_size": 256000,
    "hidden_size": 8192,
    "intermediate_size": 22528,
    "num_hidden_layers": 40,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "logit_scale": 0.0625,
    "max_position_embeddings": 8192,
    "use_qk_norm": False,
    "tie_word_embeddings": True,
}

CONFIGS = {
    "defaults": {"model_type": "cohere"},
    "command-r": COMMAND_R,
    # CohereForAI/c4ai-command-r-plus: GQA 96/8 and per-head q/k LayerNorms
    "command-r-plus": {
        **COMMAND_R,
        "hidden_size": 12288,
        "intermediate_size": 33792,
        "num_hidden_layers": 64,
        "num_attention_heads": 96,
        "num_key_value_heads": 8,
        "logit_scale": 0.8333333333333334,
        "use_qk_norm": True,
    },
    "qk-norm-bias-head-dim-untied": {
        **CAUSAL,
        "vocab_size": 500,
        "hidden_size": 64,
        "intermediate_size": 100,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 24,
        "attention_bias": True,
        "use_qk_norm": True,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_cohere_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_cohere_layer_has_one_biasless_norm_and_2d_qk_norms():
    model = from_config(CONFIGS["command-r-plus"], "t")
    names = {leaf.name: tuple(int(d) for d in leaf.shape) for leaf in model.tensors() if ".layers.0." in leaf.name}
    assert names["model.layers.0.self_attn.q_norm.weight"] == (96, 128)
    assert names["model.layers.0.self_attn.k_norm.weight"] == (8, 128)
    assert not any("bias" in n or "post_attention" in n for n in names)


def test_every_cohere_class():
    small = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    expect_all_classes(
        {"model_type": "cohere", **small, "num_key_value_heads": 2, "vocab_size": 1000, "pad_token_id": 0}
    )


def test_cohere_cache():
    tiny = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
    expect_cache(
        "cohere", {**tiny, "num_key_value_heads": 2, "use_qk_norm": True, "pad_token_id": 0}, "CohereForCausalLM"
    )
