"""Checking an answer: exact ones confirmed, wrong ones explained by the slips behind them.

Each wrong answer below is worked out by hand from the model's published dimensions, the way
a person gets it wrong on paper, so the test does not reuse the slip machinery it checks."""

import json

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
    # seed 001's per-head form, (768·64 + 64)·3 = 147,648 for Q, K and V, not multiplied by 12 heads
    ("bert-base-uncased", None, BERT - 12 * (3 * (768 * 768 + 768) - 147_648), ("one_head",), "BertModel"),
    # Llama-3.1-8B: q over 32 heads of 128, k and v over 8
    (
        "meta-llama/Llama-3.1-8B",
        None,
        LLAMA - 32 * (31 + 2 * 7) * 128 * 4096,  # q keeps 1 of 32 heads, k and v 1 of 8
        ("one_head",),
        "LlamaForCausalLM",
    ),
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
    assert "108,891,648 = BertModel without the pooler (-590,592)" in out
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


# ---- the conventions model cards count by ------------------------------------------------------
# Each figure is worked out here from the published dimensions: the vocabulary tables are V·h
# (gpt-oss: 201,088 × 2,880; DeepSeek-V3: 129,280 × 7,168; Qwen3-30B-A3B: 151,936 × 2,048),
# the active counts are the catalog's, themselves held to transformers and the model cards.

GPT_OSS_TABLE, DSV3_TABLE, QWEN3_TABLE = 201_088 * 2_880, 129_280 * 7_168, 151_936 * 2_048
GPT_OSS_20B_ACTIVE, GPT_OSS_120B_ACTIVE = 4_187_440_704, 5_711_982_912


def matched(result):
    return {c.key: c.value for c in result.matched}


def test_gpt_oss_active_figures_leave_out_one_vocabulary_table():
    """OpenAI's 3.6B and 5.1B: active per token without one of the two equal 579,133,440 tables
    (the card says the embedding lookup; the figure cannot tell it from the unembedding)."""
    cards = [("openai/gpt-oss-20b", "3.6B", GPT_OSS_20B_ACTIVE), ("openai/gpt-oss-120b", "5.1B", GPT_OSS_120B_ACTIVE)]
    for name, answer, active in cards:
        result = check(paramcount.load(name), answer)
        assert result.accepted and not result.exact and result.by_convention
        assert matched(result) == {k: active - GPT_OSS_TABLE for k in ("active_no_lookup", "active_no_unembedding")}
    total = check(paramcount.load("openai/gpt-oss-120b"), "117B")
    assert total.exact and not total.by_convention and "all" in matched(total)


def test_deepseek_v3_37b_is_active_without_one_vocabulary_table():
    result = check(paramcount.load("deepseek-ai/DeepSeek-V3"), "37B")
    active = paramcount.load("deepseek-ai/DeepSeek-V3").active_total
    assert active == 37_552_282_624 and not result.answer.matches(active)  # both tables: 38B
    assert matched(result) == {k: active - DSV3_TABLE for k in ("active_no_lookup", "active_no_unembedding")}


def test_mixtral_12_9b_is_every_active_parameter():
    result = check(paramcount.load("mistralai/Mixtral-8x7B-v0.1"), "12.9B")
    assert result.accepted and matched(result) == {"active_all": 12_879_925_248}


def test_qwen3_30b_a3b_figures():
    """29.9B is the non-embedding count; 3.3B matches no convention rounded: the active count
    3,353,032,704 rounds to 3.4B, and the JSON and text say it is 3.3B cut off."""
    model = paramcount.load("Qwen/Qwen3-30B-A3B")
    assert matched(check(model, "29.9B")) == {"non_embedding": model.total - 2 * QWEN3_TABLE}
    result = check(model, "3.3B")
    assert not result.accepted and not result.matched
    cut = [c.key for c in result.conventions if result.answer.truncates(c.value)]
    assert cut == ["active_all"] and model.active_total == 3_353_032_704


def test_a_tied_table_is_kept_for_its_other_use():
    """GPT-2: the tied token table is the unembedding too, so leaving out the lookups drops the
    position table only, and the non-embedding count (Kaplan et al.'s 85M) drops both tables."""
    figures = {c.key: c.value for c in check(paramcount.load("gpt2"), "85M").conventions}
    total = 124_439_808
    assert figures == {"all": total, "no_lookup": total - 1024 * 768, "non_embedding": total - 50257 * 768 - 1024 * 768}
    assert matched(check(paramcount.load("gpt2"), "85M")) == {"non_embedding": 85_056_000}


def test_every_convention_is_said_in_both_languages():
    from paramcount.render.check import CONVENTIONS, convention

    keys = {c.key for c in check(paramcount.load("openai/gpt-oss-20b"), "1").conventions}
    assert len(keys) == 8 and set(CONVENTIONS["en"]) == set(CONVENTIONS["zh"])
    result = check(paramcount.load("bert-base-uncased"), "1")
    for lang in ("en", "zh"):
        assert all(convention(c, lang) for c in result.conventions)


def test_cli_check_names_the_convention(capsys, snapshot):
    code, out, err = run(capsys, "check", "openai/gpt-oss-20b", "3.6B")
    assert code == 0 and not err
    assert "active per token without the embedding lookups (579,133,440)" in out
    snapshot("check-gpt-oss-20b-convention.txt", out)
    code, out, _ = run(capsys, "check", "openai/gpt-oss-20b", "3.6B", "--json")
    data = json.loads(out)
    assert data["accepted"] and data["convention"] == ["active_no_lookup", "active_no_unembedding"]
    assert {c["key"]: c["value"] for c in data["conventions"] if c["matches"]} == dict.fromkeys(
        data["convention"], GPT_OSS_20B_ACTIVE - GPT_OSS_TABLE
    )


def test_cli_check_lists_the_conventions_when_none_matches(capsys, snapshot):
    code, out, _ = run(capsys, "check", "Qwen/Qwen3-30B-A3B", "3.3B")
    assert code == 1 and "What model cards count, and none gives 3.3B:" in out
    assert "3,353,032,704  3.3B cut off, not rounded" in out
    snapshot("check-qwen3-30b-a3b-conventions.txt", out)
    code, out, _ = run(capsys, "check", "Qwen/Qwen3-30B-A3B", "3.3B", "--json")
    data = json.loads(out)
    assert not data["accepted"] and [c["key"] for c in data["conventions"] if c["truncated"]] == ["active_all"]


# ---- the counts textbooks teach (paramcount.textbook) ------------------------------------------
# Each figure is worked out by hand from the published dimensions: BERT-base h 768, 12 layers,
# V 30,522, P 512; GPT-2 h 768, 12 layers, V 50,257, P 1,024 (tied head); Llama-3.1-8B as above.

GPT2 = 124_439_808
TAUGHT = [
    # (model, answer, the key it is named by, the formula shown)
    ("bert-base-uncased", 12 * 12 * 768**2, "12Lh2", "12·L·h²"),  # 84,934,656: explain's approximation
    ("bert-base-uncased", 12 * 7_087_872, "layers", "L·(4h² + 2h·I + I + 9h)"),  # seed 001: 85,054,464
    ("bert-base-uncased", 23_837_184, "embeddings", "V·h + P·h + T·h + 2h"),  # seed 001's input layer
    ("bert-base-uncased", 12 * 12 * 768**2 + 30522 * 768, "12Lh2_Vh", "12·L·h² + V·h"),
    ("openai-community/gpt2", 12 * 12 * 768**2, "12Lh2", "12·L·h²"),
    ("openai-community/gpt2", GPT2 - 50257 * 768 - 1024 * 768, "kaplan_non_embedding", "N - (V·h + P·h)"),
    ("openai-community/gpt2", GPT2 - 50257 * 768, "non_embedding_with_positions", "N - V·h"),
    ("meta-llama/Llama-3.1-8B", 12 * 32 * 4096**2, "12Lh2", "12·L·h²"),  # 6,442,450,944
    ("meta-llama/Llama-3.1-8B", LLAMA - 2 * 128256 * 4096, "kaplan_non_embedding", "N - 2V·h"),  # untied head
    # the layers' matrices alone: q and o 4096², k and v 1024·4096, three of 14336·4096
    ("meta-llama/Llama-3.1-8B", 32 * (2 * 4096**2 + 2 * 1024 * 4096 + 3 * 14336 * 4096), "layer_matrices", None),
]


@pytest.mark.parametrize("name, answer, key, formula", TAUGHT, ids=[f"{c[2]}-{c[0]}" for c in TAUGHT])
def test_a_taught_count_is_named_with_its_formula(name, answer, key, formula):
    model = paramcount.load(name)
    result = check(model, answer)
    assert key in [t.key for t in result.taught] and result.accepted
    t = next(t for t in result.taught if t.key == key)
    assert t.value == answer and t.difference == answer - model.total and t.parameters
    assert formula is None or t.formula == formula


def test_the_two_bert_figures_are_named_not_left_unexplained(capsys):
    assert main(["check", "bert-base-uncased", "84934656"]) == 0
    out = capsys.readouterr().out
    assert "No combination" not in out
    assert "84,934,656 is the 12·L·h² rule" in out and "12·L·h² = 12 · 12 · 768² = 84,934,656" in out
    assert "24,579,642 less than the exact count of BertForMaskedLM (109,514,298)" in " ".join(out.split())
    assert main(["check", "bert-base-uncased", "85054464"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "85,054,464 is the repeated layers alone" in out and "= 12 × 7,087,872 = 85,054,464" in out


def test_a_convention_figure_also_names_kaplan(capsys):
    assert main(["check", "gpt2", "85,056,000"]) == 0  # the model card's non-embedding count is Kaplan's N
    out = " ".join(capsys.readouterr().out.split())
    assert "It is also the non-embedding count (Kaplan et al." in out and "N - (V·h + P·h) = 85,056,000" in out


def test_a_flops_figure_is_named_but_not_accepted(capsys):
    result = check(paramcount.load("openai-community/gpt2"), 6 * GPT2)
    assert [t.key for t in result.taught] == ["flops_6n_training"] and not result.accepted
    assert main(["check", "gpt2", str(6 * GPT2)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "is not a parameter count but the training FLOPs per token" in out and "6 · 124,439,808" in out


def test_an_unexplained_answer_lists_what_textbooks_count(capsys):
    assert main(["check", "bert-base-uncased", "123456789"]) == 1
    out = capsys.readouterr().out
    assert "What textbooks and courses count, and none gives 123,456,789:" in out
    row = next(line for line in out.splitlines() if "the repeated layers alone" in line).split()
    assert row[-2:] == ["85,054,464", f"{85_054_464 - 109_514_298:+,}"]


def test_taught_counts_in_json_and_chinese(capsys):
    assert main(["check", "bert-base-uncased", "85054464", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["accepted"] and doc["taught"] == ["layers"]
    layers = next(t for t in doc["textbook"] if t["key"] == "layers")
    assert layers["value"] == 85_054_464 and layers["difference"] == 85_054_464 - 109_514_298 and layers["matches"]
    assert layers["working"] == "12 × 7,087,872"
    assert main(["check", "bert-base-uncased", "84934656", "--lang", "zh"]) == 0
    assert "是12·L·h² 经验公式" in capsys.readouterr().out


def test_no_taught_count_is_the_exact_count_or_repeated():
    for name in ("bert-base-uncased", "openai-community/gpt2", "meta-llama/Llama-3.1-8B", "google-t5/t5-small"):
        model = paramcount.load(name)
        values = [t.value for t in check(model, 1).textbook]
        assert model.total not in values and len(values) == len(set(values))
