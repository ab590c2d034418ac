"""Configs without ``model_type`` (saved before transformers wrote one), placed by the class in
``architectures`` and held to transformers on the meta device: transformers 5.23's AutoConfig
refuses them, but the class's own config reads them (``T5Config.from_pretrained``), and that
config builds the model the count must equal."""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config, type_by_name

from .oracle import expect_class, transformers


def legacy(model_id: str, architecture: str) -> dict:
    """A published config as an old checkpoint has it: no model_type, an old class name."""
    raw = {k: v for k, v in catalog.get(model_id).config.items() if k != "model_type"}
    return {**raw, "architectures": [architecture]}


CASES = [
    # (catalog model, the class its old config names, the model_type and class it is)
    ("google-t5/t5-small", "T5WithLMHeadModel", "t5", "T5ForConditionalGeneration"),
    ("google-bert/bert-base-uncased", "BertForMaskedLM", "bert", "BertForMaskedLM"),
    ("openai-community/gpt2", "GPT2LMHeadModel", "gpt2", "GPT2LMHeadModel"),
    ("FacebookAI/roberta-base", "RobertaForMaskedLM", "roberta", "RobertaForMaskedLM"),
    ("google-bert/bert-base-uncased", "TFBertForMaskedLM", "bert", "BertForMaskedLM"),
]


@pytest.mark.parametrize("model_id, architecture, model_type, cls", CASES, ids=[c[1] for c in CASES])
def test_placed_by_its_class_and_counted_as_transformers_builds_it(model_id, architecture, model_type, cls):
    raw = legacy(model_id, architecture)
    model = expect_class(raw)  # tensor by tensor against the class transformers builds
    assert (model.model_type, model.class_name) == (model_type, cls)
    assert model.total == from_config(catalog.get(model_id).config, model_id).total
    assert f"no model_type: {model_type}, as the class {architecture} in 'architectures' names it" in model.notes


def test_the_old_t5_name_is_the_one_transformers_loads():
    """T5WithLMHeadModel is T5ForConditionalGeneration (and said so); T5Config reads the file."""
    raw = legacy("google-t5/t5-small", "T5WithLMHeadModel")
    model = from_config(raw, "t5-small")
    assert "T5WithLMHeadModel is the old name of T5ForConditionalGeneration" in model.notes
    config = transformers.T5Config.from_dict(raw)
    assert (config.d_model, config.num_layers, config.vocab_size) == (512, 6, 32128)


@pytest.mark.parametrize(
    "name, found",
    [
        ("T5WithLMHeadModel", "t5"),
        ("GPT2LMHeadModel", "gpt2"),
        ("RobertaForMaskedLM", "roberta"),  # the longest: not bert
        ("DebertaV2ForMaskedLM", "deberta_v2"),
        ("DolphinForCausalLM", None),  # phi inside another name is not its family
        ("GPTNeoXJapaneseForCausalLM", None),  # another family that begins with gpt_neox
        ("Phi3SmallForCausalLM", None),
    ],
)
def test_the_family_is_the_class_names_prefix_before_its_role(name, found):
    assert type_by_name(name) == found


def test_a_class_no_family_names_is_refused_in_one_line():
    with pytest.raises(ParamcountError) as e:
        from_config({"architectures": ["DolphinForCausalLM"], "hidden_size": 8}, "config.json")
    assert e.value.field == "model_type" and "no known class in 'architectures'" in str(e.value)
