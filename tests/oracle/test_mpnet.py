import pytest

from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.context.kv_cache import kv_cache

from ..cache_oracle import build, ours, torch
from .oracle import expect_all_classes, expect_same

BASE = {
    "model_type": "mpnet",
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 30527,
    "max_position_embeddings": 514,
    "relative_attention_num_buckets": 32,
    "layer_norm_eps": 1e-05,
    "pad_token_id": 1,
}
CONFIGS = {
    "defaults": {"model_type": "mpnet"},
    # microsoft/mpnet-base (its config.json, as an audit of public MPNet configs quotes it)
    "mpnet-base": {**BASE, "architectures": ["MPNetForMaskedLM"]},
    # sentence-transformers/all-mpnet-base-v2 (same audit): the bare model, pooler included
    "all-mpnet-base-v2": {**BASE, "architectures": ["MPNetModel"]},
    "untied-more-buckets": {
        "model_type": "mpnet",
        "architectures": ["MPNetForMaskedLM"],
        "num_hidden_layers": 2,
        "relative_attention_num_buckets": 64,
        "tie_word_embeddings": False,
    },
}
SMALL = {
    "model_type": "mpnet",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "num_labels": 3,
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mpnet_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mpnet_class():
    expect_all_classes(SMALL)


def test_one_relative_bias_table_for_all_layers():
    # More buckets grow one (buckets × heads) table, whatever the depth.
    for layers in (1, 3):
        small = {**SMALL, "num_hidden_layers": layers}
        more = from_config({**small, "relative_attention_num_buckets": 40}, "test")
        assert more.total - from_config(small, "test").total == (40 - 32) * 4


def test_mpnet_has_no_cache():
    fields = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    model = build("mpnet", fields, "MPNetModel")
    with torch.no_grad():  # MPNet's forward takes no cache and returns none
        assert not hasattr(model(input_ids=torch.randint(4, 64, (2, 9))), "past_key_values")
    assert kv_cache(ours("mpnet", fields, "MPNetModel"), 9, batch=2).bytes == 0


CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "mpnet"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_mpnet_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
