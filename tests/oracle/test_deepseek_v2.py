import json
from importlib import resources

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same


def published(name: str) -> dict:
    """The catalog's copy of a published config.json."""
    text = (resources.files("paramcount") / "catalog" / f"deepseek-ai--{name}.json").read_text(encoding="utf-8")
    return json.loads(text)["config"]


DEEPSEEK_V2 = published("DeepSeek-V2")
DEEPSEEK_V2_LITE = published("DeepSeek-V2-Lite")  # q_lora_rank null: a direct q_proj
SMALL = {
    "model_type": "deepseek_v2",
    "architectures": ["DeepseekV2ForCausalLM"],
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 160,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "n_routed_experts": 8,
    "n_shared_experts": 2,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
}

CONFIGS = {
    "defaults": {"model_type": "deepseek_v2"},
    "deepseek-v2": DEEPSEEK_V2,
    "deepseek-v2-lite": DEEPSEEK_V2_LITE,
    "small": SMALL,
    "small-q-lora-null-biased": {**SMALL, "q_lora_rank": None, "attention_bias": True},
    "small-mlp-bias-tied-all-moe": {**SMALL, "mlp_bias": True, "tie_word_embeddings": True, "first_k_dense_replace": 0},
    "small-all-dense-mlp-bias": {**SMALL, "first_k_dense_replace": 7, "mlp_bias": True},
    "small-no-shared-grouped": {**SMALL, "n_shared_experts": 0, "topk_method": "group_limited_greedy", "n_group": 2},
    "small-alias-num-experts": {**{k: v for k, v in SMALL.items() if k != "n_routed_experts"}, "num_experts": 6},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_deepseek_v2_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_deepseek_v2_totals():
    model = expect_same(DEEPSEEK_V2)  # "236B total, 21B activated"
    assert (model.total, model.active_total) == (235_741_434_880, 21_375_800_320)
    assert [(g.first, g.copies) for g in model.layers()] == [(0, 1), (1, 59)]


def test_deepseek_v2_lite_totals():
    # "15.7B total, 2.4B activated": the card counts the activated parameters without the embedding.
    model = expect_same(DEEPSEEK_V2_LITE)
    assert (model.total, model.active_total) == (15_706_484_224, 2_661_150_208)
    assert not any("q_a_proj" in leaf.name for leaf in model.tensors())


def test_deepseek_v2_active_without_top_k():
    """The class default num_experts_per_tok is null: every routed expert is counted active, said."""
    model = from_config({"model_type": "deepseek_v2"}, "t")
    assert model.active_total == model.total
    assert any("num_experts_per_tok is null" in n for n in model.notes)
    assert not any("num_experts_per_tok" in n for n in from_config(SMALL, "t").notes)
    assert not any("e_score_correction_bias" in n for n in from_config(SMALL, "t").notes)


def test_deepseek_v2_notes_moe_layer_freq():
    assert any("moe_layer_freq" in n for n in from_config({**SMALL, "moe_layer_freq": 2}, "t").notes)


def test_deepseek_v2_errors():
    with pytest.raises(ParamcountError, match="num_experts_per_tok"):
        from_config({**SMALL, "num_experts_per_tok": 9}, "t")
    with pytest.raises(ParamcountError, match="hidden_size"):
        from_config({**SMALL, "num_attention_heads": 5}, "t")


def test_every_deepseek_v2_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_deepseek_v2_cache():
    """The MLA latent (kv_lora_rank + qk_rope_head_dim per token and layer), as transformers caches it."""
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "architectures")}
    expect_cache("deepseek_v2", tiny, "DeepseekV2ForCausalLM", tokens=9, batch=2)
    expect_cache("deepseek_v2", tiny, "DeepseekV2ForCausalLM", tokens=9, batch=2, dtype="bf16")
