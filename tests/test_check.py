"""Checking an answer: exact ones confirmed, wrong ones explained by the slips behind them.

Each wrong answer below is worked out by hand from the model's published dimensions, the way
a person gets it wrong on paper, so the test does not reuse the slip machinery it checks."""

import pytest

import paramcount
from paramcount.check import ORDER, check, parse_answer
from paramcount.cli import main
from paramcount.render.check import SLIPS

BERT, BERT_ZH = 109_482_240, 102_267_648  # BertModel: bert-base-uncased, bert-base-chinese
LLAMA = 8_030_261_248  # meta-llama/Llama-3.1-8B: h 4096, I 14336, 32 layers, 32 heads, 8 kv heads


def keys(result, i=None):
    """The slip keys of every explanation (or of explanation ``i``)."""
    found = [tuple(s.key for s in e.steps) for e in result.explanations]
    return found if i is None else found[i]


CASES = [
    # (model, class, answer, the slips that explain it, the class they start from)
    ("bert-base-uncased", None, 108_891_648, ("pooler",), "BertModel"),  # seeds 001 and 002
    ("FacebookAI/roberta-base", None, 124_645_632 - 768 * 768 - 768, ("pooler",), "RobertaModel"),
    ("Langboat/bloom-1b4-zh", None, 1_397_616_640, ("tied_head_twice",), "BloomForCausalLM"),  # seed 003
    ("openai-community/gpt2", None, 124_439_808 + 50257 * 768, ("tied_head_twice",), "GPT2LMHeadModel"),
    ("bert-base-chinese", "base", BERT_ZH - 12 * (4 * 768 + 3072 + 768) - 768, ("biases",), "BertModel"),
    ("openai-community/gpt2", None, 124_439_808 - 12 * 9 * 768, ("biases",), "GPT2LMHeadModel"),
    ("meta-llama/Llama-3.1-8B", None, LLAMA - 65 * 4096, ("norms",), "LlamaForCausalLM"),
    ("distilbert/distilbert-base-uncased", "base", 66_362_880 - 2 * 768, ("embedding_norm",), "DistilBertModel"),
    ("meta-llama/Llama-3.1-8B", None, LLAMA - 4096, ("final_norm",), "LlamaForCausalLM"),
    ("openai-community/gpt2", None, 124_439_808 - 12 * 2 * 2 * 768, ("layer_norms",), "GPT2LMHeadModel"),
    ("mistralai/Mistral-7B-v0.1", None, 7_241_732_096 + 65 * 4096, ("rms_as_layernorm",), "MistralForCausalLM"),
    ("FacebookAI/roberta-base", "base", 124_645_632 - 1 * 768, ("segment_omitted",), "RobertaModel"),
    ("openai-community/gpt2", None, 124_439_808 - 1024 * 768, ("position_omitted",), "GPT2LMHeadModel"),
    (
        "google-t5/t5-small",
        None,
        60_506_624 + 2 * 32128 * 512,
        ("tied_embeddings_twice",),
        "T5ForConditionalGeneration",
    ),
    ("meta-llama/Llama-3.1-8B", None, LLAMA - 32 * 14336 * 4096, ("gate_omitted",), "LlamaForCausalLM"),
    ("mistralai/Mixtral-8x7B-v0.1", None, 46_702_792_704 - 32 * 8 * 4096, ("router",), "MixtralForCausalLM"),
    ("mistralai/Mixtral-8x7B-v0.1", None, 12_879_925_248, ("experts_active",), "MixtralForCausalLM"),
    ("Qwen/Qwen2.5-7B", None, 7_615_616_512 + 28 * 3 * 3584 * (4 * 3584 - 18944), ("ffn_4h",), "Qwen2ForCausalLM"),
    # K and V (weights and biases) over 28 heads of 128 instead of 4
    ("Qwen/Qwen2.5-7B", None, 7_615_616_512 + 28 * 2 * 3585 * (3584 - 512), ("kv_heads",), "Qwen2ForCausalLM"),
    ("meta-llama/Llama-3.1-8B", None, LLAMA + 131072 * 4096, ("positions_counted",), "LlamaForCausalLM"),
    ("openai-community/gpt2", None, 124_439_808 + 2 * 768, ("segment_added",), "GPT2LMHeadModel"),
]


@pytest.mark.parametrize("name, cls, answer, slips, start", CASES, ids=[f"{c[3][0]}-{c[0]}" for c in CASES])
def test_each_slip_is_named(name, cls, answer, slips, start):
    result = check(paramcount.load(name, cls), answer)
    assert not result.exact
    assert (slips, start) in [(keys(result, i), e.class_name) for i, e in enumerate(result.explanations)]
    assert all(e.value == answer for e in result.explanations)


def test_at_least_ten_slip_types_over_several_families():
    assert len({c[3] for c in CASES}) >= 10
    assert len({paramcount.load(c[0]).model_type for c in CASES}) >= 8


def test_the_required_examples_name_their_slip_first():
    bert = check(paramcount.load("bert-base-uncased"), "108891648")
    assert keys(bert, 0) == ("pooler",) and bert.explanations[0].class_name == "BertModel"
    bloom = check(paramcount.load("Langboat/bloom-1b4-zh"), "1397616640")
    assert keys(bloom, 0) == ("tied_head_twice",) and bloom.explanations[0].steps[0].change == 46145 * 2048


def test_every_slip_is_said_in_both_languages():
    for lang in ("en", "zh"):
        assert set(SLIPS[lang]) == set(ORDER)


def test_two_slips_at_once():
    result = check(paramcount.load("bert-base-uncased"), BERT - (768 * 768 + 768) - 12 * 6912)  # pooler bias once
    assert keys(result, 0) == ("pooler", "biases")


def test_all_experts_when_checking_the_active_count():
    result = check(paramcount.load("mistralai/Mixtral-8x7B-v0.1"), 46_702_792_704, active=True)
    assert keys(result, 0) == ("experts_all",)


def test_ambiguous_differences_list_every_explanation():
    # 2·768 is both BERT's embedding LayerNorm and its segment table (T = 2)
    result = check(paramcount.load("bert-base-chinese", "base"), BERT_ZH - 2 * 768)
    assert {("embedding_norm",), ("segment_omitted",)} <= set(keys(result))


@pytest.mark.parametrize(
    "name, answer, cls",
    [
        ("bert-base-chinese", "102,267,648", "BertModel"),  # the seed's figure: the backbone
        ("bert-base-uncased", "109482240", "BertModel"),
        ("bert-base-uncased", "110M", "BertForMaskedLM"),
        ("Langboat/bloom-1b4-zh", "1.3B", "BloomForCausalLM"),
        ("Langboat/bloom-1b4-zh", "1.3e9", "BloomForCausalLM"),
        ("Langboat/bloom-1b4-zh", "1303111680", "BloomForCausalLM"),
        ("bert-base-uncased", "1.1亿", "BertForMaskedLM"),
        ("openai/gpt-3-175b", "175B", "GPT2LMHeadModel"),  # seed 004
    ],
)
def test_exact_and_rounded_answers(name, answer, cls):
    result = check(paramcount.load(name), answer)
    assert result.exact and result.explanations[0].class_name == cls


def test_nothing_explains_it_gives_the_nearest():
    result = check(paramcount.load("bert-base-uncased"), "123456789")
    assert not result.explanations and len(result.nearest) == 3
    best = result.nearest[0]
    assert abs(best.remaining(result.answer)) <= abs(result.nearest[-1].remaining(result.answer))


@pytest.mark.parametrize(
    "text, value, tolerance",
    [
        ("108891648", 108_891_648, 0),
        ("108,891,648", 108_891_648, 0),
        ("102 267 648", 102_267_648, 0),
        ("110M", 110_000_000, 5_000_000),
        ("1.3B", 1_300_000_000, 50_000_000),
        ("1.3e9", 1_300_000_000, 50_000_000),
        ("175B", 175_000_000_000, 500_000_000),
        ("6.7b", 6_700_000_000, 50_000_000),
        ("108,000,000", 108_000_000, 500_000),
        ("1.1亿", 110_000_000, 5_000_000),
        ("110 million", 110_000_000, 5_000_000),
    ],
)
def test_parse_answer(text, value, tolerance):
    a = parse_answer(text)
    assert (a.value, a.tolerance) == (value, tolerance)


@pytest.mark.parametrize("text", ["abc", "", "1.2.3", "12X", "-5"])
def test_unreadable_answers_are_a_one_line_error(text):
    with pytest.raises(paramcount.ParamcountError, match="cannot read"):
        parse_answer(text)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_pooler(capsys, snapshot):
    code, out, err = run(capsys, "check", "bert-base-uncased", "108891648")
    assert code == 1 and not err  # not the count: exit 1, as a checker says a wrong answer
    assert "108,891,648 = BertModel without the pooler (590,592)" in out
    snapshot("check-bert-base-uncased-pooler.txt", out)


def test_cli_check_tied_head_in_chinese(capsys, snapshot):
    code, out, _ = run(capsys, "check", "Langboat/bloom-1b4-zh", "1397616640", "--lang", "zh")
    assert code == 1 and "重复计算" in out and "94,504,960" in out
    snapshot("check-bloom-1b4-zh-tied-zh.txt", out)


def test_cli_check_markdown(capsys):
    code, out, _ = run(capsys, "check", "bert-base-chinese", "102267648", "--format", "md")
    assert code == 0 and out.startswith("# Checking 102,267,648") and "exact" in out


def test_cli_check_bad_answer(capsys):
    code, _, err = run(capsys, "check", "bert-base-uncased", "lots")
    assert code == 2 and "ANSWER: cannot read 'lots'" in err and err.count("\n") == 1
