import json
from pathlib import Path

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same

CATALOG = Path(__file__).parents[2] / "src" / "paramcount" / "catalog"
# tencent/Hunyuan-7B-Instruct, the catalog's copy of its published config.json
HUNYUAN_7B = json.loads((CATALOG / "tencent--Hunyuan-7B-Instruct.json").read_text())["config"]

SMALL = {
    "model_type": "hunyuan_v1_dense",
    "vocab_size": 500,
    "hidden_size": 64,
    "intermediate_size": 80,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 24,
}

CONFIGS = {
    "hunyuan-7b-instruct": HUNYUAN_7B,
    "small": SMALL,
    # o_proj takes attention_bias too; the q/k norms are built whatever use_qk_norm says
    "biased-untied-no-qk-norm-flag": {**SMALL, "attention_bias": True, "use_qk_norm": False},
    "tied-mha": {**SMALL, "num_key_value_heads": None, "tie_word_embeddings": True},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_hunyuan_v1_dense_matches_transformers(name):
    expect_same(CONFIGS[name])


def test_every_hunyuan_v1_dense_class():
    expect_all_classes({**SMALL, "num_labels": 3})


def test_hunyuan_7b_total_and_rows():
    """7,504,568,320 as transformers counts it; the embedding is the head (tied)."""
    model = from_config(HUNYUAN_7B, "t")
    assert model.total == 7_504_568_320
    rows = model.components()
    assert rows["embeddings"] == 128167 * 4096
    assert rows["attention"] == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
    assert rows["feed_forward"] == 32 * 3 * 4096 * 14336
    assert rows["norms"] == 32 * (2 * 4096 + 2 * 128) + 4096  # the per-head q/k norms among them
    assert rows["output_head"] == 0


@pytest.mark.parametrize("bad", [{"head_dim": None}, {"head_dim": "x"}])
def test_hunyuan_v1_dense_refuses_a_missing_head_dim(bad):
    raw = {k: v for k, v in SMALL.items() if k != "head_dim"}
    with pytest.raises(ParamcountError) as e:
        from_config({**raw, **bad}, "t")
    assert e.value.field == "head_dim"


def test_hunyuan_v1_dense_default_config_is_refused_as_transformers_does():
    with pytest.raises(ParamcountError, match="transformers cannot build"):
        from_config({"model_type": "hunyuan_v1_dense"}, "t")


def test_hunyuan_v1_dense_cla_note():
    assert any("use_cla" in n for n in from_config({**SMALL, "use_cla": True}, "t").notes)
    assert not any("use_cla" in n for n in from_config(HUNYUAN_7B, "t").notes)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_hunyuan_v1_dense_cache(dtype):
    tiny = {k: v for k, v in SMALL.items() if k not in ("model_type", "vocab_size")}
    expect_cache("hunyuan_v1_dense", tiny, "HunYuanDenseV1ForCausalLM", dtype=dtype)
