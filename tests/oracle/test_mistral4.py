import json
from pathlib import Path

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = Path(__file__).parents[2] / "src" / "paramcount" / "catalog"
# mistralai/Mistral-Small-4-119B-2603, the catalog's copy of its published config.json
# (its fp8 quantization_config left out: the oracle builds the bf16 model)
SMALL_4 = json.loads((CATALOG / "mistralai--Mistral-Small-4-119B-2603.json").read_text())["config"]
SMALL_4 = {k: v for k, v in SMALL_4.items() if k != "quantization_config"}
TEXT = SMALL_4["text_config"]

SMALL = {
    "model_type": "mistral4",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 6,
    "num_experts_per_tok": 2,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 12,
}

CONFIGS = {
    "defaults": {"model_type": "mistral4"},
    "mistral-small-4-text": TEXT,
    "small": SMALL,
    "small-one-dense-q-lora-null-biased-tied": {
        **SMALL,
        "first_k_dense_replace": 1,
        "q_lora_rank": None,
        "attention_bias": True,
        "tie_word_embeddings": True,
    },
    "small-all-dense-no-shared": {**SMALL, "first_k_dense_replace": 5, "n_shared_experts": 0},
    "small-num-local-experts": {**{k: v for k, v in SMALL.items() if k != "n_routed_experts"}, "num_local_experts": 5},
    "mistral3-small-text": {
        "model_type": "mistral3",
        "architectures": ["Mistral3ForConditionalGeneration"],
        "tie_word_embeddings": False,
        "text_config": SMALL,
        "vision_config": {
            "model_type": "pixtral",
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "head_dim": 16,
            "patch_size": 14,
            "image_size": 224,
        },
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_mistral4_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_mistral4_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_mistral_small_4_total_and_towers():
    """119,401,298,944: the name's 119B, now counted natively through the mistral3 composite."""
    model = from_config(SMALL_4, "t")
    assert model.counted_by == "paramcount"
    assert model.total == 119_401_298_944
    towers = model.towers()
    text = from_config(TEXT, "t", model_class="Mistral4ForCausalLM")
    assert towers["language_model"] == text.total  # text model and its untied head
    assert sum(towers.values()) == model.total
    h, e, i_e = 4096, 128, 2048
    assert model.total - model.active_total == 36 * (e - 4) * 3 * h * i_e


def test_mistral4_refuses_more_active_than_routed_experts():
    with pytest.raises(ParamcountError) as e:
        from_config({**SMALL, "num_experts_per_tok": 7}, "t")
    assert e.value.field == "num_experts_per_tok"


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_mistral4_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("mistral4", tiny, "Mistral4ForCausalLM", dtype=dtype)
