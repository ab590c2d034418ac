"""Closed forms: polynomials in the config's symbols that evaluate to the exact count."""

from fractions import Fraction

import pytest

import paramcount
from paramcount.derive import derive
from paramcount.formula import Poly, Symbols, parse, render, substitute
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.ir import Sym


def catalog_models():
    for e in catalog.entries():
        for cls in (None, "base"):
            yield pytest.param(e, cls, id=f"{e.id}-{cls or 'class'}")


@pytest.mark.parametrize("entry, cls", list(catalog_models()))
def test_closed_form_equals_count_for_every_catalog_model(entry, cls):
    model = from_config(entry.config, f"catalog:{entry.id}", name=entry.id, model_class=cls)
    closed = derive(model).closed
    assert closed.evaluate() == model.total
    assert closed.poly.evaluate(closed.values) == model.total


def test_bert_model_closed_form_is_the_textbook_one():
    closed = derive(paramcount.load("bert-base-chinese", "base")).closed
    assert closed.text == "V·h + (P + T + 2)·h + L·(4h² + 2h·I + I + 9h) + h² + h"
    assert closed.with_4h == (("encoder.layer", "L·(12h² + 13h)"),)
    assert closed.evaluate({"V": 30522}) == 109_482_240  # bert-base-uncased differs only in V


def test_bert_approximations_and_their_error():
    closed = derive(paramcount.load("bert-base-chinese", "base")).closed
    (core, with_vocab) = closed.approximations
    assert (core.name, core.value) == ("12·L·h²", 12 * 12 * 768**2)
    assert (with_vocab.name, with_vocab.value) == ("12·L·h² + V·h", 12 * 12 * 768**2 + 21128 * 768)
    assert core.error == pytest.approx((84_934_656 - 102_267_648) / 102_267_648)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("meta-llama/Llama-3.1-8B", "V·h + L·(2a_kv·h²/a + 2h² + 3h·I + 2h) + h + V·h"),
        ("Langboat/bloom-1b4-zh", "V·h + 2h + L·(12h² + 13h) + 2h"),
        ("openai-community/gpt2", "V·h + P·h + L·(12h² + 13h) + 2h"),
        ("mistralai/Mixtral-8x7B-v0.1", "V·h + L·(3E·h·I + 2a_kv·h²/a + 2h² + E·h + 2h) + h + V·h"),
    ],
)
def test_closed_forms_across_families(name, expected):
    assert derive(paramcount.load(name)).closed.text == expected


def test_parse_and_render():
    assert render(parse("a·h/a")) == "h"
    assert render(parse("a_kv·h/a")) == "a_kv·h/a"
    assert render(parse("a·(d_nope + d_rope)")) == "a·d_nope + a·d_rope"
    assert render(parse("L - first_k_dense_replace")) == "L - first_k_dense_replace"
    assert parse("2·I_e").evaluate({"I_e": 2048}) == 4096


def test_division_by_a_sum_is_refused():
    with pytest.raises(ValueError):
        parse("h/(a + 1)")


def test_substitute_and_evaluate():
    p = parse("4·h·h + 2·h·I + I + 9·h")
    four_h = Poly.const(4) * Poly.symbol("h")
    assert render(substitute(p, {"I": four_h})) == "12h² + 13h"
    assert p.evaluate({"h": 768, "I": 3072}) == 7_087_872


def test_rational_coefficients_print_as_fractions():
    half = Poly.of({(("h", 1),): Fraction(3, 2)})
    assert render(half) == "3h/2"


def test_an_inexact_division_becomes_an_opaque_symbol():
    syms = Symbols(paramcount.load("bert-base-chinese"))
    syms.learn([Sym(11, "h"), Sym(2, "a")])
    p = syms.poly(Sym(5, "h/a"))  # 11 // 2: the formula h/a would say 5.5
    assert render(p) == "[h/a]" and p.evaluate(syms.values) == 5
    assert syms.poly(Sym(3, "h/a")).evaluate(syms.values) == 3  # the same text, another value


def test_symbols_come_from_the_config_when_the_tree_names_them_only_in_products():
    closed = derive(paramcount.load("deepseek-ai/DeepSeek-V3")).closed
    assert closed.values["d_nope"] == 128 and closed.fields["d_nope"] == "qk_nope_head_dim"
    assert closed.evaluate() == 671_026_404_352
