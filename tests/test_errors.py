"""Bad files: a clear one-line message naming the file and field, exit 2, no traceback."""

import json

import pytest

import paramcount
from paramcount.cli import main


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON (line 1, column 2)"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"hidden_size": 8}', "model_type: is missing, and no known class in 'architectures'"),
        ('{"model_type": "llama", "hidden_size": true}', "hidden_size: expected an integer, got True"),
        (
            '{"model_type": "bert", "num_attention_heads": 7}',
            "hidden_size: 768 is not divisible by num_attention_heads",
        ),
        ('{"model_type": "whatever"}', "model_type: unknown model_type 'whatever'"),
        ('{"model_type": 5}', "model_type: unknown model_type 5"),
        ('{"model_type": "gpt2", "n_embd": 1e400}', "n_embd"),
        ("[" * 100000 + "]" * 100000, "not valid JSON"),
        ('{"architectures": 5}', "architectures: must be a list of class names, not 5"),
        ('{"model_type": "llama", "architectures": [[1]]}', "architectures: must be a list of class names"),
        ('{"model_type": "llama", "architectures": "LlamaModel"}', "architectures: must be a list"),
    ],
)
def test_bad_config_file(tmp_path, capsys, text, message):
    path = write(tmp_path, "config.json", text)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message.split(":")[0] in err
    assert err.count("\n") == 1


def test_missing_file_in_folder(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "config.json: no such file" in capsys.readouterr().err


def test_huge_file_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.truncate(64 << 20)  # a sparse 64 MiB file: refused by size before reading
    assert main([str(path)]) == 2
    assert "a config is 67,108,864 bytes; at most 16,777,216 are read" in capsys.readouterr().err


def test_folder_reads_config_json(tmp_path):
    write(tmp_path, "config.json", json.dumps({"model_type": "bert", "vocab_size": 21128}))
    assert paramcount.load(tmp_path).backbone_total == 102267648


def test_library_raises_typed_error():
    with pytest.raises(paramcount.ParamcountError) as e:
        paramcount.load({"model_type": "llama", "num_hidden_layers": "two"})
    assert e.value.field == "num_hidden_layers"


def test_unmodelled_architecture_falls_back_to_backbone_with_note():
    m = paramcount.load({"model_type": "bert", "architectures": ["BertForSomethingNew"]})
    assert m.class_name == "BertModel" and "BertForSomethingNew" in m.notes[0]


def test_architectures_identify_family_without_model_type():
    m = paramcount.load({"architectures": ["GPT2LMHeadModel"]})
    assert m.model_type == "gpt2" and m.total == 124439808
