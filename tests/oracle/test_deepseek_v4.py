import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_cache import kv_cache

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = resources.files("paramcount") / "catalog" / "deepseek-ai--DeepSeek-V4-Flash-Base.json"
FLASH_BASE = json.loads(CATALOG.read_text(encoding="utf-8"))["config"]
SMALL = {
    "model_type": "deepseek_v4",
    "vocab_size": 1000,
    "hidden_size": 64,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "head_dim": 16,
    "q_lora_rank": 24,
    "o_groups": 2,
    "o_lora_rank": 12,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "hc_mult": 2,
    "num_nextn_predict_layers": 0,
}

CSA = "compressed_sparse_attention"
CONFIGS = {
    "defaults": {"model_type": "deepseek_v4"},
    "deepseek-v4-flash-base": FLASH_BASE,
    "flash-base-6-layers": {**FLASH_BASE, "num_hidden_layers": 6},
    "small": SMALL,
    "small-explicit-types": {
        **SMALL,
        "layer_types": [
            "compressed_sparse_attention",
            "sliding_attention",
            "heavily_compressed_attention",
            "heavily_compressed_attention",
            "compressed_sparse_attention",
        ],
        "mlp_layer_types": ["moe", "hash_moe", "moe", "hash_moe", "moe"],
    },
    "small-legacy-ratios-and-rates": {
        **SMALL,
        "compress_ratios": [0, 4, 128, 4, 128, 0],
        "compress_rate_csa": 8,
        "compress_rate_hca": 16,
        "num_hash_layers": 1,
    },
    "small-compress-rates": {
        **SMALL,
        "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 3},
    },
    "small-tied-mlp-bias-hc3": {**SMALL, "tie_word_embeddings": True, "mlp_bias": True, "hc_mult": 3},
    "small-sliding-only-shared-ignored": {**SMALL, "compress_ratios": [0] * 5, "n_shared_experts": 3},
    # the mapped names win over the fields they map to
    "small-mapped-names": {**SMALL, "intermediate_size": 20, "num_local_experts": 6},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_deepseek_v4_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_deepseek_v4_flash_base_totals():
    model = expect_same(FLASH_BASE)  # "284B total, 13B activated"
    assert (model.total, model.active_total) == (284_332_230_231, 13_799_622_231)
    groups = [(g.first, g.copies) for g in model.layers()]
    assert groups[0] == (0, 2) and len(groups) == 42  # 2 sliding, then CSA and HCA alternating
    notes = " ".join(model.notes)
    assert "tid2eid" in notes and "multi-token-prediction" in notes


def test_deepseek_v4_compressor_names():
    names = {leaf.name for leaf in from_config({**SMALL, "compress_ratios": [0, 4, 128, 0, 0]}, "t").tensors()}
    assert "layers.1.self_attn.compressor.indexer.scorer.weights_proj.weight" in names
    assert "layers.1.self_attn.compressor.indexer.q_b_proj.weight" in names
    assert "layers.2.self_attn.compressor.position_bias" in names
    assert not any(n.startswith("layers.2.self_attn.compressor.indexer") for n in names)
    assert not any(n.startswith("layers.0.self_attn.compressor") for n in names)
    assert {"hc_head.hc_fn", "layers.0.attn_hc.fn", "layers.4.ffn_hc.scale", "layers.3.self_attn.sinks"} <= names


def test_deepseek_v4_notes_shared_experts():
    notes = from_config({**SMALL, "n_shared_experts": 2}, "t").notes
    assert any("n_shared_experts = 2 is ignored" in n for n in notes)


def test_deepseek_v4_errors():
    with pytest.raises(ParamcountError, match="compress_ratios"):
        from_config({**SMALL, "compress_ratios": [0, 4, 7, 0, 0]}, "t")
    with pytest.raises(ParamcountError, match="layer_types"):
        from_config({**SMALL, "layer_types": ["sliding_attention"] * 4}, "t")
    with pytest.raises(ParamcountError, match="mlp_layer_types"):
        from_config({**SMALL, "mlp_layer_types": ["moe"] * 4 + ["dense"]}, "t")
    with pytest.raises(ParamcountError, match="compress_rates"):
        from_config({**SMALL, "compress_rates": {"compressed_sparse_attention": 2}}, "t")
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**SMALL, "num_experts_per_tok": 9}, "t")


TINY_CACHE = {
    **{k: v for k, v in SMALL.items() if k != "model_type"},
    "sliding_window": 4,
    "compress_rates": {CSA: 2, "heavily_compressed_attention": 3},
    "layer_types": [CSA, "sliding_attention", "heavily_compressed_attention", "heavily_compressed_attention", CSA],
}


@pytest.mark.parametrize("tokens", [1, 2, 3, 5, 9, 12])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_deepseek_v4_cache_equals_transformers(tokens, dtype):
    """The sliding K=V window, each compressor's entries (one per m tokens), its unfinished
    window (T mod m) and CSA's carried half-window, as DeepseekV4HCACache / DeepseekV4CSACache
    hold them after a prefill, at contexts below, at and past every rate and window."""
    expect_cache("deepseek_v4", TINY_CACHE, "DeepseekV4ForCausalLM", tokens=tokens, dtype=dtype)


def test_deepseek_v4_cache_rows_and_refusals():
    """Flash at 1M tokens: the compressed entries grow as T/m, the sliding window stays W−1;
    only transformers' dynamic cache is modelled, so static is refused in one line."""
    model = from_config(FLASH_BASE, "t")
    cache = kv_cache(model, 1_048_576, dtype="bf16")
    rows = {r.kind.stores + "@" + r.kind.attention: r.tokens for r in cache.layers}
    assert rows["compressed KV@compressed"] in (1_048_576 // 4, 1_048_576 // 128)
    assert {r.tokens for r in cache.layers if r.kind.attention == "sliding"} == {127}
    assert cache.per_token < cache.bytes  # a per-token figure, of entries shared by m tokens
    with pytest.raises(ParamcountError, match="dynamic cache only"):
        kv_cache(model, 4096, cache="static")


def test_every_deepseek_v4_class():
    expect_all_classes(SMALL)
