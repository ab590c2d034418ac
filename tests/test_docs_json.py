"""``list``, ``explain``, ``check`` and ``compare`` as versioned JSON, and check's exit status."""

from __future__ import annotations

import json

import pytest

from paramcount.cli import main


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert not err
    return code, json.loads(out)


def test_list_json(capsys):
    code, data = run(capsys, "list", "--json")
    assert code == 0 and data["schema"] == "paramcount.list/1"
    bert = next(m for m in data["models"] if m["id"] == "google-bert/bert-base-chinese")
    assert bert["backbone_total"] == 102_267_648 and bert["model_type"] == "bert"


def test_explain_json_adds_up(capsys):
    code, data = run(capsys, "explain", "bert-base-chinese", "--json")
    assert code == 0 and data["schema"] == "paramcount.explain/1"
    assert data["total"] == 102_267_648 == sum(data["sum"]) == data["closed_form"]["value"]
    for s in data["sections"]:
        assert s["total"] == s["each"] * s["count"] == sum(line["parameters"] for line in s["lines"]) * s["count"]
    query = next(line for s in data["sections"] for line in s["lines"] if line["path"].endswith("self.query"))
    assert (query["formula"], query["numbers"], query["parameters"]) == ("h·h + h", "768·768 + 768", 590_592)
    assert {"symbol": "V", "value": 21128, "field": "vocab_size"} in data["symbols"]


@pytest.mark.parametrize(
    ("answer", "code", "exact", "slip"),
    [
        ("109482240", 0, True, None),
        ("110M", 0, True, None),
        ("108891648", 1, False, "pooler"),
        ("5", 1, False, None),
    ],
)
def test_check_json_and_exit_status(capsys, answer, code, exact, slip):
    got, data = run(capsys, "check", "bert-base-uncased", answer, "--json")
    assert got == code and data["schema"] == "paramcount.check/1" and data["exact"] is exact
    if slip:
        assert [s["slip"] for s in data["explanations"][0]["slips"]] == [slip]
        assert data["explanations"][0]["value"] == int(answer)
    if not exact and not slip:
        assert not data["explanations"] and data["nearest"]


def test_check_text_exit_status(capsys):
    assert main(["check", "bert-base-uncased", "109482240"]) == 0
    assert main(["check", "bert-base-uncased", "108891648"]) == 1
    capsys.readouterr()


def test_the_eight_times_seven_b_slip(capsys):
    """Mixtral 8x7B taken as eight 7B models: 8 × (the rest + one expert per layer)."""
    _, data = run(capsys, "check", "mixtral-8x7b", "56B", "--json")
    first = data["nearest"][0]
    assert [s["slip"] for s in first["slips"]] == ["experts_as_models"] and first["slips"][0]["n"] == 8
    code, exact = run(capsys, "check", "mixtral-8x7b", str(first["value"]), "--json")
    assert code == 1 and exact["explanations"][0]["slips"][0]["slip"] == "experts_as_models"


def test_moe_slips_name_k_and_n_unreduced(capsys):
    """Two of eight experts is 2/8, not 1/4."""
    _, data = run(capsys, "check", "mixtral-8x7b", "12,879,925,248", "--json")
    assert data["exact"] is False
    slips = [s for e in data["explanations"] for s in e["slips"] if s["slip"] == "experts_active"]
    assert slips and (slips[0]["k"], slips[0]["n"]) == (2, 8)


def test_compare_json(capsys):
    code, data = run(capsys, "compare", "gpt2", "bert-base-uncased", "--json")
    assert code == 0 and data["schema"] == "paramcount.compare/1"
    gpt2, bert = data["models"]
    assert gpt2["total"] == 124_439_808 and bert["class"] == "BertForMaskedLM"
    assert data["differences"]["attention"] == [0, bert["components"]["attention"] - gpt2["components"]["attention"]]
