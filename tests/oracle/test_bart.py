import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_class, expect_same

LARGE = {
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "num_hidden_layers": 12,
    "scale_embedding": False,
    "activation_function": "gelu",
    # mBART's switches, present in BART's files and ignored by BartModel
    "add_final_layer_norm": False,
    "normalize_before": False,
    "normalize_embedding": True,
}

# Published configs (count-relevant fields of each hub config.json, plus some they carry).
REAL = {
    # facebook/bart-base: 139,420,416 parameters
    "bart-base": {
        "model_type": "bart",
        "architectures": ["BartModel"],
        "d_model": 768,
        "encoder_layers": 6,
        "decoder_layers": 6,
        "encoder_attention_heads": 12,
        "decoder_attention_heads": 12,
        "encoder_ffn_dim": 3072,
        "decoder_ffn_dim": 3072,
        "max_position_embeddings": 1024,
        "num_hidden_layers": 6,
        "vocab_size": 50265,
        "add_final_layer_norm": False,
        "normalize_before": False,
        "scale_embedding": False,
        "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
    },
    # facebook/bart-large: 406,291,456
    "bart-large": {"model_type": "bart", "architectures": ["BartModel"], **LARGE, "vocab_size": 50265},
    # facebook/bart-large-mnli
    "bart-large-mnli": {
        "model_type": "bart",
        "architectures": ["BartForSequenceClassification"],
        **LARGE,
        "vocab_size": 50265,
        "id2label": {"0": "contradiction", "1": "neutral", "2": "entailment"},
        "label2id": {"contradiction": 0, "entailment": 2, "neutral": 1},
    },
    # facebook/bart-large-cnn: 406,290,432 (one token fewer)
    "bart-large-cnn": {
        "model_type": "bart",
        "architectures": ["BartForConditionalGeneration"],
        **LARGE,
        "vocab_size": 50264,
        "force_bos_token_to_be_generated": True,
        "min_length": 56,
        "max_length": 142,
        "no_repeat_ngram_size": 3,
    },
}

PUBLISHED = {"bart-base": 139_420_416, "bart-large": 406_291_456, "bart-large-cnn": 406_290_432}

SMALL = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 3,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 80,
    "max_position_embeddings": 40,
    "vocab_size": 300,
}

ODD = {
    "defaults": {"model_type": "bart"},
    # tie_word_embeddings false unties everything: shared, both stacks' embed_tokens and lm_head
    "untied-generation": {
        "model_type": "bart",
        **SMALL,
        "tie_word_embeddings": False,
        "architectures": ["BartForConditionalGeneration"],
    },
    "scaled-embeddings": {
        "model_type": "bart",
        **SMALL,
        "scale_embedding": True,
        "architectures": ["BartForConditionalGeneration"],
    },
    "causal-lm": {"model_type": "bart", **SMALL, "architectures": ["BartForCausalLM"]},
    "causal-lm-untied": {
        "model_type": "bart",
        **SMALL,
        "tie_word_embeddings": False,
        "architectures": ["BartForCausalLM"],
    },
    # without num_labels or id2label BartConfig gives 3 labels, not PreTrainedConfig's 2
    "classification-default-labels": {
        "model_type": "bart",
        **SMALL,
        "architectures": ["BartForSequenceClassification"],
    },
    "question-answering": {
        "model_type": "bart",
        **SMALL,
        "num_labels": 5,
        "architectures": ["BartForQuestionAnswering"],
    },
    # the attribute_map names for d_model, encoder_attention_heads, encoder_layers
    "standard-names": {
        "model_type": "bart",
        "hidden_size": 48,
        "num_attention_heads": 3,
        "num_hidden_layers": 1,
        "decoder_attention_heads": 6,
        "decoder_layers": 1,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "vocab_size": 100,
    },
}


@pytest.mark.parametrize("name", [*REAL, *ODD])
def test_bart_matches_transformers(name):
    model = expect_same({**REAL, **ODD}[name])
    if name in PUBLISHED:
        assert model.total == PUBLISHED[name]


def test_positions_have_two_extra_rows_and_head_is_tied():
    model = expect_class({"model_type": "bart", **SMALL}, "BartForConditionalGeneration")
    shapes = {leaf.name: leaf.shape for leaf in model.tensors()}
    assert shapes["model.encoder.embed_positions.weight"] == (42, 64)
    ties = {name: target for name, target, _ in model.ties()}
    assert ties == {
        "model.encoder.embed_tokens.weight": "model.shared.weight",
        "model.decoder.embed_tokens.weight": "model.shared.weight",
        "lm_head.weight": "model.shared.weight",
    }
    assert "final_logits_bias" not in str(shapes)  # a buffer, not a parameter


def test_question_answering_always_has_two_outputs():
    model = from_config(
        {"model_type": "bart", **SMALL, "num_labels": 5}, "test", model_class="BartForQuestionAnswering"
    )
    assert [leaf.shape for leaf in model.tensors() if leaf.name == "qa_outputs.weight"] == [(2, 64)]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"decoder_attention_heads": 3}, "d_model"),
        ({"encoder_attention_heads": 5}, "d_model"),
        ({"pad_token_id": 300}, "pad_token_id"),
    ],
)
def test_impossible_configs_are_refused(change, field):
    with pytest.raises(ParamcountError) as err:
        from_config({"model_type": "bart", **SMALL, **change}, "test")
    assert err.value.field == field


def test_every_bart_class():
    expect_all_classes({"model_type": "bart", **SMALL, "num_labels": 4})
