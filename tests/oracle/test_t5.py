import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import Truth, differences, expect_all_classes, expect_class, expect_same, ours, truth

GEN = ["T5ForConditionalGeneration"]

# Published configs (the count-relevant fields of each hub config.json, plus a few others they carry).
REAL = {
    # google-t5/t5-small: 60,506,624 parameters
    "t5-small": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 512,
        "num_heads": 8,
        "num_layers": 6,
        "n_positions": 512,
        "relative_attention_num_buckets": 32,
        "vocab_size": 32128,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "decoder_start_token_id": 0,
        "output_past": True,
    },
    # google-t5/t5-base: 222,903,552
    "t5-base": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 3072,
        "d_kv": 64,
        "d_model": 768,
        "num_heads": 12,
        "num_layers": 12,
        "n_positions": 512,
        "relative_attention_num_buckets": 32,
        "vocab_size": 32128,
    },
    # google-t5/t5-large: 737,668,096
    "t5-large": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 4096,
        "d_kv": 64,
        "d_model": 1024,
        "num_heads": 16,
        "num_layers": 24,
        "n_positions": 512,
        "relative_attention_num_buckets": 32,
        "vocab_size": 32128,
    },
}

# Published configs with tie_word_embeddings false: their checkpoints store lm_head.weight.
UNTIED = {
    # google/t5-v1_1-base: 247,577,856
    "t5-v1_1-base": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 768,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 12,
        "num_heads": 12,
        "num_layers": 12,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "vocab_size": 32128,
    },
    # google/flan-t5-base: 247,577,856
    "flan-t5-base": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 768,
        "dense_act_fn": "gelu_new",
        "feed_forward_proj": "gated-gelu",
        "is_gated_act": True,
        "n_positions": 512,
        "num_decoder_layers": 12,
        "num_heads": 12,
        "num_layers": 12,
        "relative_attention_max_distance": 128,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "vocab_size": 32128,
    },
    # google/flan-t5-large: 783,150,080
    "flan-t5-large": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 2816,
        "d_kv": 64,
        "d_model": 1024,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 24,
        "num_heads": 16,
        "num_layers": 24,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "vocab_size": 32128,
    },
    # google/flan-t5-xl: 2,849,757,184
    "flan-t5-xl": {
        "model_type": "t5",
        "architectures": GEN,
        "d_ff": 5120,
        "d_kv": 64,
        "d_model": 2048,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 24,
        "num_heads": 32,
        "num_layers": 24,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": False,
        "vocab_size": 32128,
    },
}

PUBLISHED = {
    "t5-small": 60_506_624,
    "t5-base": 222_903_552,
    "t5-large": 737_668_096,
    "t5-v1_1-base": 247_577_856,
    "flan-t5-base": 247_577_856,
    "flan-t5-large": 783_150_080,
    "flan-t5-xl": 2_849_757_184,
}

SMALL = {"d_model": 64, "d_kv": 16, "d_ff": 96, "num_heads": 4, "num_layers": 2, "vocab_size": 300}

ODD = {
    "defaults": {"model_type": "t5"},
    # heads·d_kv ≠ d_model (t5-11b: 1024 wide, 128 heads of 128), deeper decoder than encoder
    "inner-differs-asymmetric": {
        "model_type": "t5",
        **SMALL,
        "d_kv": 40,
        "num_heads": 3,
        "num_layers": 3,
        "num_decoder_layers": 5,
    },
    # one block per stack: only the block-0 run exists
    "single-block": {"model_type": "t5", **SMALL, "num_layers": 1, "architectures": GEN},
    "single-decoder-block": {"model_type": "t5", **SMALL, "num_layers": 3, "num_decoder_layers": 1},
    "gated-silu-tied": {
        "model_type": "t5",
        **SMALL,
        "feed_forward_proj": "gated-silu",
        "relative_attention_num_buckets": 7,
        "architectures": GEN,
    },
    # the attribute_map names transformers accepts for d_model, num_heads, num_layers, d_kv; the decoder then
    # keeps the class default depth (6), as num_decoder_layers is filled before those names are applied
    "standard-names": {
        "model_type": "t5",
        "hidden_size": 48,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "head_dim": 20,
        "d_ff": 32,
        "vocab_size": 100,
        "architectures": GEN,
    },
    "sequence-classification": {
        "model_type": "t5",
        **SMALL,
        "architectures": ["T5ForSequenceClassification"],
        "num_labels": 5,
    },
    "token-classification": {
        "model_type": "t5",
        **SMALL,
        "architectures": ["T5ForTokenClassification"],
        "id2label": {"0": "O", "1": "B", "2": "I"},
    },
}


def expect_checkpoint_head(raw: dict, class_name: str | None = None) -> None:
    """Like expect_same, but the one allowed difference is the checkpoint's own
    ``lm_head.weight``: transformers 5 ties it to ``shared.weight`` whatever the config says."""
    model = from_config(raw, "test", model_class=class_name)
    assert model.class_name.endswith("ForConditionalGeneration")
    assert any("lm_head.weight" in note for note in model.notes)
    real, mine = truth(raw, model.class_name, model.model_type), ours(model)
    assert real.ties.pop("lm_head.weight") == "shared.weight"
    head = mine.shapes.pop("lm_head.weight")
    assert head == real.shapes["shared.weight"]
    allowed = Truth(real.total + head[0] * head[1], real.shapes, real.ties)
    assert differences(mine, allowed) == []
    expect_class(raw, "base")


@pytest.mark.parametrize("name", [*REAL, *ODD])
def test_t5_matches_transformers(name):
    model = expect_same({**REAL, **ODD}[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]
    assert not model.notes


@pytest.mark.parametrize("name", UNTIED)
def test_t5_untied_head_follows_the_checkpoint(name):
    expect_checkpoint_head(UNTIED[name])
    assert from_config(UNTIED[name], "test").total == PUBLISHED[name]


def test_untied_config_changes_only_the_generation_head():
    raw = {"model_type": "t5", **SMALL, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
    expect_checkpoint_head(raw, "T5ForConditionalGeneration")
    for cls in ("T5Model", "T5EncoderModel", "T5ForSequenceClassification", "T5ForQuestionAnswering"):
        assert not expect_class(raw, cls).notes


def test_encoder_model_with_decoder_config_has_cross_attention():
    # T5EncoderModel hands its config to the stack unchanged; T5Model forces is_decoder off.
    raw = {"model_type": "t5", **SMALL, "is_decoder": True}
    model = expect_class(raw, "T5EncoderModel")
    assert any("EncDecAttention" in leaf.name for leaf in model.tensors())
    expect_class(raw, "T5Model")


def test_relative_bias_only_in_block_zero():
    model = from_config({"model_type": "t5", **SMALL, "num_layers": 3}, "test")
    biased = [leaf.name for leaf in model.tensors() if "relative_attention_bias" in leaf.name]
    assert biased == [
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    ]


def test_bad_feed_forward_proj_is_refused():
    with pytest.raises(ParamcountError, match="feed_forward_proj"):
        from_config({"model_type": "t5", "feed_forward_proj": "gelu-gated"}, "test")


def test_every_t5_class():
    expect_all_classes({"model_type": "t5", **SMALL, "num_labels": 4})
