import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"]}

CONFIGS = {
    "defaults": {"model_type": "gpt_neox"},
    # EleutherAI/pythia-70m
    "pythia-70m": {
        **CAUSAL,
        "vocab_size": 50304,
        "hidden_size": 512,
        "intermediate_size": 2048,
        "num_hidden_layers": 6,
        "num_attention_heads": 8,
        "max_position_embeddings": 2048,
        "rotary_pct": 0.25,
        "rotary_emb_base": 10000,
        "use_parallel_residual": True,
        "tie_word_embeddings": False,
    },
    # EleutherAI/pythia-1b
    "pythia-1b": {
        **CAUSAL,
        "vocab_size": 50304,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 8,
        "rotary_pct": 0.25,
        "use_parallel_residual": True,
        "tie_word_embeddings": False,
    },
    # EleutherAI/pythia-12b
    "pythia-12b": {
        **CAUSAL,
        "vocab_size": 50688,
        "hidden_size": 5120,
        "intermediate_size": 20480,
        "num_hidden_layers": 36,
        "num_attention_heads": 40,
        "rotary_pct": 0.25,
        "use_parallel_residual": True,
        "tie_word_embeddings": False,
    },
    # EleutherAI/gpt-neox-20b
    "gpt-neox-20b": {
        **CAUSAL,
        "vocab_size": 50432,
        "hidden_size": 6144,
        "intermediate_size": 24576,
        "num_hidden_layers": 44,
        "num_attention_heads": 64,
        "rotary_pct": 0.25,
        "rotary_emb_base": 10000,
        "use_parallel_residual": True,
        "tie_word_embeddings": False,
    },
    "sequential-residual-no-bias-tied": {
        **CAUSAL,
        "hidden_size": 96,
        "num_attention_heads": 4,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "vocab_size": 1000,
        "use_parallel_residual": False,
        "attention_bias": False,
        "tie_word_embeddings": True,
    },
}

# Totals the Pythia README and the GPT-NeoX-20B model card publish.
PUBLISHED = {
    "pythia-70m": 70_426_624,
    "pythia-1b": 1_011_781_632,
    "pythia-12b": 11_846_072_320,
    "gpt-neox-20b": 20_554_567_680,
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gpt_neox_matches_transformers(name):
    model = expect_same(CONFIGS[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


def test_every_gpt_neox_class():
    expect_all_classes(
        {
            "model_type": "gpt_neox",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vocab_size": 1000,
            "num_labels": 3,
        }
    )


def test_checkpoint_names_embed_out():
    model = from_config(CONFIGS["pythia-70m"], "test")
    names = {leaf.name for leaf in model.tensors(checkpoint=True)}
    assert "embed_out.weight" in names and "lm_head.weight" not in names
    assert sum(leaf.count for leaf in model.tensors(checkpoint=True)) == model.total


def test_heads_must_divide_hidden():
    with pytest.raises(Exception, match="num_attention_heads"):
        from_config({"model_type": "gpt_neox", "hidden_size": 100, "num_attention_heads": 3}, "test")
