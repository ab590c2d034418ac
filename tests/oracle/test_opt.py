import pytest

from .oracle import expect_all_classes, expect_same

CAUSAL = {
    "model_type": "opt",
    "architectures": ["OPTForCausalLM"],
    "vocab_size": 50272,
    "max_position_embeddings": 2048,
    "enable_bias": True,
    "layer_norm_elementwise_affine": True,
}

CONFIGS = {
    "defaults": {"model_type": "opt"},
    # facebook/opt-125m
    "opt-125m": {
        **CAUSAL,
        "hidden_size": 768,
        "word_embed_proj_dim": 768,
        "ffn_dim": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "do_layer_norm_before": True,
    },
    # facebook/opt-350m: post-norm, 512-wide embeddings projected in and out
    "opt-350m": {
        **CAUSAL,
        "hidden_size": 1024,
        "word_embed_proj_dim": 512,
        "ffn_dim": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "do_layer_norm_before": False,
    },
    # facebook/opt-6.7b
    "opt-6.7b": {
        **CAUSAL,
        "hidden_size": 4096,
        "word_embed_proj_dim": 4096,
        "ffn_dim": 16384,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "do_layer_norm_before": True,
    },
    "no-bias-no-affine-untied": {
        "model_type": "opt",
        "architectures": ["OPTForCausalLM"],
        "vocab_size": 1000,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "ffn_dim": 100,
        "num_hidden_layers": 2,
        "enable_bias": False,
        "layer_norm_elementwise_affine": False,
        "tie_word_embeddings": False,
    },
    "removed-final-norm-projected": {
        "model_type": "opt",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "ffn_dim": 100,
        "num_hidden_layers": 2,
        "vocab_size": 1000,
        "word_embed_proj_dim": 32,
        "_remove_final_layer_norm": True,
        "architectures": ["OPTForCausalLM"],
    },
}

# Totals the hub reports for these checkpoints (all tensors, head tied).
PUBLISHED = {"opt-125m": 125_239_296, "opt-350m": 331_196_416, "opt-6.7b": 6_658_473_984}


@pytest.mark.parametrize("name", CONFIGS)
def test_opt_matches_transformers(name):
    model = expect_same(CONFIGS[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


@pytest.mark.parametrize("proj", [None, 32])
def test_every_opt_class(proj):
    expect_all_classes(
        {
            "model_type": "opt",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "ffn_dim": 128,
            "vocab_size": 1000,
            "num_labels": 3,
            "word_embed_proj_dim": proj,
        }
    )
