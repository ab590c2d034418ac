"""Derivations: sections that add up to the count, lines whose numbers give their value,
the seed article's BERT in both languages and all three formats (the LaTeX compiles)."""

import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.derive import derive
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.render.derivation import line_row, render_derivation

CATALOG = [pytest.param(e, id=e.id) for e in catalog.entries()]


def bert_chinese():
    return derive(paramcount.load("bert-base-chinese", "base"))


def evaluate(numbers: str) -> int:
    """``12 × (768·768 + 768)`` as Python arithmetic (digits and operators only)."""
    expr = numbers.replace("·", "*").replace("×", "*")
    assert re.fullmatch(r"[\d*+() ]+", expr), numbers
    return eval(expr)


@pytest.mark.parametrize("entry", CATALOG)
def test_sections_and_lines_add_up_for_every_catalog_model(entry):
    for cls in (None, "base"):
        model = from_config(entry.config, entry.id, name=entry.id, model_class=cls)
        d = derive(model)
        assert d.total == model.total == sum(s.total for s in d.sections)
        for s in d.sections:
            assert s.total == s.copies * sum(line.value for line in s.lines)
            for line in s.lines:
                numbers = line_row(line, s.path, "en")[3][0].text
                assert (0 if line.tied else evaluate(numbers)) == line.value


def test_the_seed_article_structure():
    d = bert_chinese()
    assert [s.kind for s in d.sections] == ["embeddings", "layers", "pooler"]
    emb, layers, pooler = d.sections
    assert [line.role for line in emb.lines] == [
        "token_embedding",
        "position_embedding",
        "segment_embedding",
        "layernorm",
    ]
    assert [line.value for line in emb.lines] == [21128 * 768, 512 * 768, 2 * 768, 2 * 768]
    assert layers.each == 7_087_872 and layers.copies == 12 and layers.total == 85_054_464
    assert [line.role for line in layers.lines][:4] == ["q", "k", "v", "o"]
    assert pooler.total == 768 * 768 + 768
    assert d.total == 102_267_648


def test_bert_base_uncased_figures_of_the_second_seed():
    d = derive(paramcount.load("bert-base-uncased", "base"))
    emb, layers, _ = d.sections
    assert emb.total == 23_837_184 and layers.each == 7_087_872 and layers.total == 85_054_464


@pytest.mark.parametrize("fmt", ["text", "md", "tex"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bert_base_chinese_snapshots(snapshot, fmt, lang):
    out = render_derivation(bert_chinese(), fmt, lang)
    assert "102,267,648" in out or "102{,}267{,}648" in out
    snapshot(f"explain-bert-base-chinese-{lang}.{ {'text': 'txt', 'md': 'md', 'tex': 'tex'}[fmt] }", out)


def test_chinese_uses_the_seed_terms():
    out = render_derivation(bert_chinese(), "text", "zh")
    for term in ("嵌入层", "词嵌入", "位置嵌入", "句子/段嵌入", "层归一化", "池化层", "总参数量"):
        assert term in out


def test_tied_head_is_zero_new_parameters():
    out = render_derivation(derive(paramcount.load("Langboat/bloom-1b4-zh")), "text", "en")
    assert "tied to transformer.word_embeddings.weight: 0 new parameters" in out
    assert "1,303,111,680" in out and "1,397,616,640" in out  # and what counting it twice gives


def test_layers_that_differ_are_separate_runs():
    d = derive(paramcount.load("deepseek-ai/DeepSeek-V3"))
    runs = [(s.first, s.copies) for s in d.sections if s.kind == "layers"]
    assert runs == [(0, 3), (3, 58)]
    roles = {line.role for s in d.sections for line in s.lines}
    assert {"q_down", "q_up", "kv_down", "kv_up", "experts", "router"} <= roles


def test_derivation_refuses_sums_that_do_not_add_up(monkeypatch):
    mod = importlib.import_module("paramcount.derive")  # the module, not the function it exports

    model = paramcount.load("bert-base-chinese", "base")
    monkeypatch.setattr(mod, "split", lambda tree: list(mod._split(tree))[:1])
    with pytest.raises(AssertionError, match="derivation sums to"):
        derive(model)


def compile_tex(tmp_path, text):
    (tmp_path / "d.tex").write_text(text, encoding="utf-8")
    cmd = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "d.tex"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=120)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "d.pdf").stat().st_size > 1000


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs pdflatex (Debian: texlive-latex-base)")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_latex_compiles(tmp_path, lang):
    if lang == "zh" and subprocess.run(["kpsewhich", "CJKutf8.sty"], capture_output=True).returncode:
        pytest.skip("needs CJKutf8 (Debian: latex-cjk-chinese, latex-cjk-chinese-arphic-gbsn00lp)")
    compile_tex(tmp_path, render_derivation(bert_chinese(), "tex", lang))


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs pdflatex (Debian: texlive-latex-base)")
def test_latex_compiles_for_odd_symbols(tmp_path):
    compile_tex(tmp_path, render_derivation(derive(paramcount.load("deepseek-ai/DeepSeek-V3")), "tex", "en"))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_explain_defaults_to_the_seed_model(capsys):
    code, out, err = run(capsys, "explain")
    assert code == 0 and not err
    assert out.startswith("BertModel: 102,267,648 parameters")


def test_cli_explain_class_format_and_language(capsys):
    code, out, _ = run(
        capsys, "explain", "bert-base-uncased", "--class", "BertForMaskedLM", "--lang", "zh", "--format", "md"
    )
    assert code == 0 and out.startswith("# BertForMaskedLM: 109,514,298 个参数")
    assert "| 词嵌入 (token embedding) |" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "nope-model"], "nope-model: not in the catalog"),
        (["explain", "--format", "pdf"], "invalid choice: 'pdf'"),
        (["explain", "--lang", "fr"], "invalid choice: 'fr'"),
        (["explain", "bert-base-uncased", "--class", "Nope"], "unknown class 'Nope' for bert"),
    ],
)
def test_cli_explain_errors_are_one_line(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def test_chinese_readme_shows_real_output(capsys, monkeypatch):
    """Every ``$ paramcount ...`` block of README.zh-CN.md is what the command prints today (at
    100 columns, as tests/test_readme.py runs them)."""
    monkeypatch.setenv("COLUMNS", "100")
    text = (Path(__file__).parent.parent / "README.zh-CN.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n\$ paramcount ([^\n]*)\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    for command, shown in blocks:
        code, out, _ = run(capsys, *command.split())
        assert code in (0, 1) and out == shown, command  # check exits 1 on an answer that is not the count


@pytest.mark.parametrize(
    "name, form",
    [
        ("mosaicml/mpt-7b", "layernorm"),  # MPT's LayerNorm has no bias
        ("CohereForAI/c4ai-command-r-v01", "layernorm"),  # so has Cohere's
        ("answerdotai/ModernBERT-base", "layernorm"),  # norm_bias false
        ("meta-llama/Llama-3.1-8B", "rmsnorm"),
        ("google-bert/bert-base-uncased", "layernorm"),  # with bias
    ],
)
def test_a_bias_free_layernorm_is_not_called_rmsnorm(name, form):
    d = derive(paramcount.load(name))
    roles = {line.role for s in d.sections for line in s.lines if line.kind == "norms"}
    assert roles == {form}


def test_explain_refuses_a_tree_of_too_many_distinct_tensors(tmp_path, monkeypatch, capsys):
    """A derivation is a line per distinct tensor: a header of 100k unrepeated tensors took a
    minute of CPU in `explain`; past MAX_DERIVED it is one line and exit 2, and at the bound it
    is written."""
    import importlib
    import json
    import struct

    derive = importlib.import_module("paramcount.derive")  # the module: the package's attribute is the function
    from paramcount.cli import main

    meta = {f"w{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(300)}
    head = json.dumps(meta).encode()
    path = tmp_path / "many.safetensors"
    path.write_bytes(struct.pack("<Q", len(head)) + head + bytes(4 * 300))
    monkeypatch.setattr(derive, "MAX_DERIVED", 100)
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("derive: more than 100 distinct tensors: too many lines to derive") and "\n" not in err
    monkeypatch.setattr(derive, "MAX_DERIVED", 300)
    assert main(["explain", str(path)]) == 0
