"""Comparing models side by side, by component, with differences against the first."""

import pytest

import paramcount
from paramcount.cli import main
from paramcount.compare import compare


def test_bert_uncased_against_chinese_differs_only_in_the_vocabulary():
    c = compare([paramcount.load("bert-base-uncased", "base"), paramcount.load("bert-base-chinese", "base")])
    assert c.totals == (109_482_240, 102_267_648)
    assert c.differences("embeddings") == (0, (21128 - 30522) * 768)
    assert all(c.differences(k) == (0, 0) for k in c.kinds if k != "embeddings")
    assert c.symbols["V"] == (30522, 21128) and c.symbols["h"] == (768, 768)


def test_a_component_one_model_lacks():
    c = compare([paramcount.load("meta-llama/Llama-3.1-8B"), paramcount.load("mistralai/Mixtral-8x7B-v0.1")])
    experts = c.kinds.index("experts")
    assert "experts" not in c.components[0] and c.components[1]["experts"] > 0
    assert c.differences("experts")[1] == c.components[1]["experts"] and experts > 0
    assert c.active[1] < c.totals[1] and c.symbols["E"] == (None, 8)


def test_compare_needs_two_models():
    with pytest.raises(paramcount.ParamcountError, match="at least two"):
        compare([paramcount.load("bert-base-uncased")])


def test_cli_compare(capsys, snapshot):
    code = main(["compare", "bert-base-uncased", "bert-base-chinese", "FacebookAI/roberta-base", "--class", "base"])
    out, err = capsys.readouterr()
    assert code == 0 and not err
    assert "-7,214,592" in out
    snapshot("compare-bert-roberta.txt", out)


def test_cli_compare_markdown_in_chinese(capsys):
    code = main(["compare", "gpt2", "Langboat/bloom-1b4-zh", "--format", "md", "--lang", "zh"])
    out, _ = capsys.readouterr()
    assert code == 0 and out.startswith("# 比较 2 个模型") and "| **总参数量** |" in out


def test_cli_compare_errors(capsys):
    assert main(["compare", "bert-base-uncased"]) == 2
    assert "give two or more models to compare" in capsys.readouterr().err
    assert main(["compare", "bert-base-uncased", "nope"]) == 2
    assert "nope: not in the catalog" in capsys.readouterr().err
