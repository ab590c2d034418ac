"""The command line: outputs as snapshots at a fixed width, errors as one line and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paramcount.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_default_is_bert_base_chinese(capsys, snapshot):
    code, out, err = run(capsys, "--width", "100")
    assert code == 0 and not err
    assert "BertModel" in out and "102,267,648" in out
    snapshot("default.txt", out)


def test_bert_base_uncased_shows_backbone_beside_class(capsys, snapshot):
    code, out, _ = run(capsys, "bert-base-uncased", "--width", "100")
    assert code == 0
    assert "BertForMaskedLM" in out and "BertModel" in out and "109,482,240" in out
    snapshot("bert-base-uncased.txt", out)


def test_a_catalog_scope_is_said_under_the_headline(capsys, snapshot):
    """Llama 4 Scout's count is its text model's: the line right under the headline says so,
    and the JSON carries it as ``scope``."""
    code, out, _ = run(capsys, "llama-4-scout", "--width", "100")
    lines = out.splitlines()
    assert code == 0 and lines[1].startswith("scope: the text model only")
    assert next(i for i, line in enumerate(lines) if "107,769,861,120" in line) == 3  # the scope wraps once
    snapshot("llama-4-scout.txt", out)
    code, out, _ = run(capsys, "llama-4-scout", "--json", "--collapsed")
    assert json.loads(out)["scope"] == ["the text model only: the vision tower and projector of "
                                        "Llama4ForConditionalGeneration are not counted"]  # fmt: skip
    code, out, _ = run(capsys, "bert-base-uncased", "--json", "--collapsed")
    assert json.loads(out)["scope"] == [] and "scope:" not in run(capsys, "bert-base-uncased")[1]


def test_an_image_text_models_towers_are_the_parts_of_its_class(capsys, snapshot):
    """Qwen2.5-VL-7B's vision encoder, projector and language model (with the output head) add
    up to the class's 8,292,166,656, right under it; the backbone line follows them."""
    code, out, _ = run(capsys, "Qwen/Qwen2.5-VL-7B-Instruct", "--width", "100")
    head = [line.split() for line in out.splitlines()[1:6]]
    assert code == 0 and head[0][:3] == ["class", "Qwen2_5_VLForConditionalGeneration", "8,292,166,656"]
    parts = [int(row[-1].replace(",", "")) for row in head[1:4]]
    assert [row[0] for row in head[1:4]] == ["=", "+", "+"] and sum(parts) == 8_292_166_656
    assert head[4] == ["backbone", "Qwen2_5_VLModel", "7,747,169,280"]
    snapshot("qwen2.5-vl-7b.txt", out)


def test_tree(capsys, snapshot):
    code, out, _ = run(capsys, "bert-base-uncased", "--class", "base", "--tree", "3", "--width", "100")
    assert code == 0 and "layer.0–11" in out
    snapshot("bert-base-uncased-tree.txt", out)


def test_gpt3_from_dimensions(capsys):
    code, out, _ = run(
        capsys,
        "--arch",
        "gpt2",
        "--layers",
        "96",
        "--hidden",
        "12288",
        "--heads",
        "96",
        "--vocab",
        "50257",
        "--context",
        "2048",
        "--class",
        "GPT2LMHeadModel",
    )
    assert code == 0 and "174,604,259,328" in out


def test_set_overrides_any_field(capsys):
    code, out, _ = run(
        capsys, "--arch", "llama", "--set", "num_hidden_layers=2", "--set", "tie_word_embeddings=true", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["class"] == "LlamaModel" and {g["count"] for g in data["layers"]} == {2}


def test_json_schema(capsys):
    code, out, _ = run(capsys, "bert-base-uncased", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "paramcount.count/1"
    assert data["class"] == "BertForMaskedLM" and data["backbone"] == {"class": "BertModel", "total": 109482240}
    assert data["total"] == sum(t["count"] for t in data["tensors"])
    assert data["total_with_ties"] - data["total"] == sum(t["count"] for t in data["ties"])
    tied = {t["name"]: t["tied_to"] for t in data["tensors"] if t["tied_to"]}
    assert tied["cls.predictions.decoder.weight"] == "bert.embeddings.word_embeddings.weight"
    first = data["tensors"][0]
    assert set(first) == {"name", "shape", "dims", "count", "component", "tied_to"}
    assert first["dims"] == ["V", "h"]


def test_num_labels(capsys):
    code, out, _ = run(
        capsys, "bert-base-uncased", "--class", "BertForSequenceClassification", "--num-labels", "7", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["total"] == 109482240 + 768 * 7 + 7


def test_list(capsys):
    code, out, _ = run(capsys, "list", "--width", "160")
    assert code == 0 and "google-bert/bert-base-chinese" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no-such-model"], "no-such-model: not in the catalog"),
        (["bert-base-chinesee"], "did you mean"),
        (["--arch", "nonsense"], "unknown model_type 'nonsense'; supported:"),
        (["--arch", "llama", "--hidden", "770"], "hidden_size: 770 is not divisible by num_attention_heads"),
        (["--arch", "llama", "--layers", "0"], "num_hidden_layers: 0 is out of range"),
        (["--arch", "llama", "--layers", "-3"], "num_hidden_layers: -3 is out of range"),
        (["--arch", "bert", "--hidden", "99999999999"], "hidden_size: 99999999999 is out of range"),
        (["--arch", "llama", "--set", 'hidden_size="big"'], "hidden_size: expected an integer, got 'big'"),
        (["--arch", "llama", "--set", "hidden_size=12.5"], "hidden_size: expected an integer, got 12.5"),
        (["--arch", "llama", "--kv-heads", "5"], "num_key_value_heads: 5 does not divide num_attention_heads"),
        (
            ["--arch", "gpt2", "--class", "GPT2LMHeadModel", "--set", "tie_word_embeddings=3"],
            "tie_word_embeddings: expected true or false",
        ),
        (["bert-base-uncased", "--class", "Nope"], "unknown class 'Nope' for bert"),
        (["--set", "novalue"], "expected name=value"),
        (["--layers", "3"], "dimension flags need --arch"),
        (["--tree", "x"], "argument --tree: expected an integer ≥ 0 of at most 12 digits, got 'x'"),
        (["bert-base-uncased", "--arch", "bert"], "give a model or --arch, not both"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_help_documents_every_command_and_flag():
    out = subprocess.run([sys.executable, "-m", "paramcount", "--help"], capture_output=True, text=True).stdout
    words = ("--class", "--num-labels", "--set", "--json", "--tree", "--arch", "--layers", "paramcount list")
    commands = ("explain", "check", "compare", "diff", ".gguf", "print(model)")
    for word in words + commands:
        assert word in out
    from paramcount.cli import COMMANDS

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for command in set(COMMANDS) - {"count"}:  # every command in the help's examples and the README
        assert f"paramcount {command}" in out and f"paramcount {command}" in readme, command


def test_list_filters(capsys):
    import json

    def ids(*argv: str) -> list[str]:
        assert main(["list", *argv, "--json"]) == 0
        return [m["id"] for m in json.loads(capsys.readouterr().out)["models"]]

    assert ids("qwen") and all("qwen" in i.lower() or "Qwen" in i for i in ids("QWEN"))
    assert set(ids("--family", "llama")) >= {"meta-llama/Llama-3.1-8B", "meta-llama/Llama-2-7b-hf"}
    assert "deepseek-ai/DeepSeek-V3" in ids("--kind", "moe") and "openai-community/gpt2" not in ids("--kind", "moe")
    assert "ibm-granite/granite-4.0-h-small" in ids("--kind", "hybrid")
    assert "google/gemma-3-4b-it" in ids("--kind", "image-text")
    assert "google-bert/bert-base-uncased" in ids("--kind", "encoder") and "Qwen/Qwen2.5-7B" not in ids(
        "--kind", "encoder"
    )
    assert ids("no-such-thing") == []


def test_list_json_says_active_for_moe_only(capsys):
    import json

    assert main(["list", "--json"]) == 0
    models = {m["id"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert models["deepseek-ai/DeepSeek-V3"]["active_total"] < models["deepseek-ai/DeepSeek-V3"]["total"]
    assert models["openai-community/gpt2"]["active_total"] is None
