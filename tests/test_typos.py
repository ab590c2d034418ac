"""Helpful typos: commands, flags, GPU sizes, short names and token counts."""

from __future__ import annotations

import pytest

from paramcount.cli import main, tokens


def err(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["explian", "bert-base-uncased"], "unknown command 'explian'; did you mean explain?"),
        (["memroy", "llama-2-7b"], "did you mean memory?"),
        (["bert-base-uncased", "--jsno"], "unrecognized arguments: --jsno; did you mean --json?"),
        (["memory", "llama-2-7b", "--contxt", "4096"], "did you mean --context?"),
        (["fit", "llama-2-7b", "--gpu", "24"], "a size needs its unit: 24GB or 24GiB"),
        (["bert"], "did you mean bert-base-cased, bert-base-chinese, bert-base-uncased, bert-large-uncased?"),
        (["memory", "llama-2-7b", "--context", "32q"], "expected a count of tokens like 4096 or 32k"),
    ],
)
def test_one_line_with_a_suggestion(capsys, argv, said):
    code, text = err(capsys, *argv)
    assert code == 2 and said in text and text.count("\n") == 1


def test_a_model_named_like_a_command_is_still_a_model(capsys):
    assert main(["list", "--json"]) == 0  # the real command
    capsys.readouterr()
    assert main(["gpt2", "--json"]) == 0  # a catalog name, not a typo of a command


@pytest.mark.parametrize(("text", "value"), [("4096", 4096), ("4,096", 4096), ("32k", 32768), ("128K", 131072)])
def test_token_counts(text, value):
    assert tokens(text) == value


def test_usage_names_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "paramcount {list,explain,check,compare,diff,serve,memory,fit,compute,speed,completion,hardware}" in out


def test_arch_says_which_fields_came_from_defaults(capsys):
    assert main(["--arch", "llama", "--layers", "32", "--hidden", "4096", "--heads", "32", "--json"]) == 0
    import json

    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("llama's defaults: vocab_size = 32000, intermediate_size = 11008" in n for n in notes)


def test_set_field_typo_is_an_error_with_a_suggestion(capsys):
    code, text = err(capsys, "llama-2-7b", "--set", "num_hiden_layers=40")
    assert code == 2 and "'num_hiden_layers' is not a field of llama's transformers config" in text
    assert "did you mean num_hidden_layers" in text


def test_set_of_a_real_field_that_changes_nothing_stays_a_note(capsys):
    assert main(["llama-2-7b", "--set", "pad_token_id=4", "--json"]) == 0
    import json

    notes = json.loads(capsys.readouterr().out)["notes"]
    assert "pad_token_id was given but changes no parameter of llama" in notes


def test_set_takes_the_attributes_a_config_keeps_beyond_its_fields(capsys):
    """DeBERTa-v2 keeps share_att_key, position_buckets … as plain attributes (not config class
    fields): --set takes them (Family.extra_fields), and a typo of one is still refused."""
    import json

    assert main(["microsoft/deberta-v3-base", "--set", "share_att_key=false", "--json"]) == 0
    shared = json.loads(capsys.readouterr().out)["total"]
    assert main(["microsoft/deberta-v3-base", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] < shared  # own position projections again
    code, text = err(capsys, "microsoft/deberta-v3-base", "--set", "share_att_kye=false")
    assert code == 2 and "did you mean share_att_key" in text
