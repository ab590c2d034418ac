import pytest

from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CAUSAL = {
    "model_type": "falcon",
    "architectures": ["FalconForCausalLM"],
    "vocab_size": 65024,
    "alibi": False,
    "bias": False,
    "parallel_attn": True,
}
SMALL = {
    "model_type": "falcon",
    "architectures": ["FalconForCausalLM"],
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_attention_heads": 8,
    "num_hidden_layers": 2,
}

CONFIGS = {
    "defaults": {"model_type": "falcon"},
    # tiiuae/falcon-7b: multi-query, one LayerNorm per parallel layer
    "falcon-7b": {
        **CAUSAL,
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_hidden_layers": 32,
        "multi_query": True,
        "new_decoder_architecture": False,
    },
    # tiiuae/falcon-40b: 8 K/V groups, ln_attn and ln_mlp
    "falcon-40b": {
        **CAUSAL,
        "hidden_size": 8192,
        "num_attention_heads": 128,
        "num_kv_heads": 8,
        "num_hidden_layers": 60,
        "multi_query": True,
        "new_decoder_architecture": True,
    },
    # tiiuae/falcon-rw-1b style: multi-head, biased, ALiBi, sequential residual
    "rw-multi-head-bias-alibi-sequential": {
        **SMALL,
        "multi_query": False,
        "bias": True,
        "alibi": True,
        "parallel_attn": False,
    },
    "new-arch-one-norm-ffn": {
        **SMALL,
        "new_decoder_architecture": True,
        "num_kv_heads": 2,
        "num_ln_in_parallel_attn": 1,
        "ffn_hidden_size": 100,
    },
    "new-arch-sequential-untied": {
        **SMALL,
        "new_decoder_architecture": True,
        "parallel_attn": False,
        "tie_word_embeddings": False,
    },
    "two-norms-old-arch-n_embed": {**SMALL, "num_ln_in_parallel_attn": 2, "hidden_size": 32, "n_embed": 96},
    "multi-head-kv-ignored": {**SMALL, "multi_query": False, "num_kv_heads": 2},
}

# Totals the hub reports for these checkpoints (head tied).
PUBLISHED = {"falcon-7b": 6_921_720_704}


@pytest.mark.parametrize("name", CONFIGS)
def test_falcon_matches_transformers(name):
    model = expect_same(CONFIGS[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


def test_every_falcon_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_refinedweb_names_are_ignored_like_transformers():
    # 142 = 71 (the default head count) x 2; transformers would refuse n_head 4 with it.
    raw = {k: v for k, v in SMALL.items() if k not in ("num_attention_heads", "num_hidden_layers")}
    raw |= {"hidden_size": 142, "n_head": 4, "n_layer": 7}
    model = expect_same(raw)
    assert any("n_head" in n for n in model.notes) and any("n_layer" in n for n in model.notes)


def test_kv_heads_must_divide_heads():
    with pytest.raises(Exception, match="num_kv_heads"):
        from_config({**SMALL, "new_decoder_architecture": True, "num_kv_heads": 3}, "test")
