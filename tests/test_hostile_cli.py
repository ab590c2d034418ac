"""Hostile input through the command line: refused in one line with exit 2 naming the source or
field, or counted with every input-derived character escaped; never a traceback, a hang or a
terminal escape. Then random bytes and random JSON through every command."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paramcount.cli import main

from .budget import calls

BIG = "9" * 5000  # past Python's 4,300-digit limit on int(str)
ROOT = Path(__file__).parent


def safetensors(folder: Path, names: list[str], config: dict | str | None = None) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    header = {n: {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]} for i, n in enumerate(names)}
    raw = json.dumps(header).encode()  # ensure_ascii: a lone surrogate travels as \ud800, as JSON allows
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(8 * len(names)))
    return str(folder)


def _gguf_string(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(data)) + data


def gguf(path: Path, names: list[str]) -> str:
    """A GGUF v3 file of 4-element F32 tensors under ``names`` (architecture llama)."""
    kv = _gguf_string("general.architecture") + struct.pack("<I", 8) + _gguf_string("llama")
    infos = b"".join(_gguf_string(n) + struct.pack("<IQIQ", 1, 4, 0, 32 * i) for i, n in enumerate(names))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(names), 1) + kv + infos
    head += b"\0" * (-len(head) % 32)
    path.write_bytes(head + bytes(32 * len(names)))
    return str(path)


LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
DEEP_NAME = "model." + "a." * 1500 + "weight"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("hostile")
    index = base / "long-shard"
    index.mkdir()
    (index / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "x" * 300 + ".safetensors"}}))
    return {
        "big-int-config": safetensors(base / "big-int", ["w"], f'{{"model_type": "llama", "hidden_size": {BIG}}}'),
        "deep-name": safetensors(base / "deep-name", [DEEP_NAME]),
        "deep-name-config": safetensors(base / "deep-name-config", [DEEP_NAME], LLAMA),
        "deep-name-gguf": gguf(base / "deep.gguf", ["blk." * 1500 + "weight"]),
        "long-shard": str(index),
        "one-tensor": safetensors(base / "one", ["w"]),
        "printout": str(ROOT / "fixtures" / "bloom-1b4-zh.txt"),
        "nested-printout": _nested_printout(base / "nested.txt", depth=31),
        **_not_regular(base),
    }


def _not_regular(base: Path) -> dict[str, str]:
    """Names that lead to a FIFO or a device (which would block, or never end), and a config
    nested deeper than anything that walks it expects."""
    for name in ("fifo", "zero", "deep"):
        (base / name).mkdir()
    os.mkfifo(base / "fifo" / "config.json")
    (base / "zero" / "config.json").symlink_to("/dev/zero")
    (base / "deep" / "config.json").write_text('{"model_type": "llama", "x": ' + "[" * 100 + "]" * 100 + "}")
    os.mkfifo(base / "fifo.txt")
    (base / "zero.gguf").symlink_to("/dev/zero")
    (base / "random.txt").symlink_to("/dev/urandom")
    names = ("fifo", "zero", "deep", "fifo.txt", "zero.gguf", "random.txt")
    return {f"not-regular-{n.replace('.', '-')}": str(base / n) for n in names}


def _nested_printout(path: Path, depth: int) -> str:
    """print(model) text of ModuleLists of 100,000 blocks nested ``depth`` deep: 10^159 parameters."""
    lines = ["Net("]
    for i in range(depth):
        lines += ["  " * (2 * i + 1) + "(layers): ModuleList(", "  " * (2 * i + 2) + "(0-99999): 100000 x Block("]
    lines.append("  " * (2 * depth + 1) + "(lin): Linear(in_features=10, out_features=1000, bias=False)")
    lines += ["  " * i + ")" for i in range(2 * depth, -1, -1)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


MOE = "Qwen/Qwen3-30B-A3B"
REFUSED = [  # argv (file keys in {braces}), what the one line must say
    (["{big-int-config}"], "config.json: holds an integer of more than 4,300 digits"),
    (["gpt2", "--set", f"hidden_size={BIG}"], "--set: hidden_size: a number too long"),
    (["gpt2", "--set", "n_layer=" + "[" * 100_000], "--set: n_layer: nested too deeply"),
    (["gpt2", "--set", "n_embd=" + "9" * 4000], "n_embd: an integer of about 4,000 digits is out of range"),
    (["memory", "gpt2", "--overhead", BIG + "GB"], "--overhead: a size of 5,000 characters"),
    (["memory", "gpt2", "--overhead", BIG + "%"], "--overhead: a percentage of 5,000 characters"),
    (["compute", "gpt2", "--tokens", BIG], "--tokens: a count of tokens of 5,000 characters"),
    (["check", "gpt2", "1e5000"], "ANSWER: the exponent e5000 is past ±30"),
    (["check", "bert-base-uncased", "1e100000000"], "ANSWER: the exponent e100000000"),
    (["check", "gpt2", BIG], "ANSWER: an answer of 5,000 characters"),
    (["memory", "gpt2", "--gpu", BIG + "GB"], "--gpu: a size of 5,000 characters"),
    (["fit", "gpt2", "--gpu", "9" * 25 + "GB"], "--gpu: " + "9" * 25 + "GB is more than 1,024 EiB"),
    (["compute", "gpt2", "--gpu", "h100", "--utilisation", "1e-320"], "--utilisation: expected a share in [1e-06"),
    (["compute", "{printout}", "--gpu", "h100", "--tokens", "1e30"], None),  # exit 0 or one line: both fine
    (["{deep-name}"], "deep-name: tensor names do not form a tree"),
    (["{deep-name-config}"], "deep-name-config: tensor names do not form a tree"),
    (["diff", "{deep-name}", "gpt2"], "tensor names do not form a tree"),
    (["{deep-name-gguf}"], "deep.gguf: tensor names do not form a tree"),
    (["a" * 300], "not in the catalog, and not a file or folder"),
    (["a/" * 200], "a/a/…: no such file or folder"),
    (["memory", "x" * 300], "not in the catalog"),
    (["a\x00b"], "a\\x00b: not in the catalog"),
    (["{long-shard}"], "is not a file name (a part over 255 bytes"),
    (["gpt2", "--width", "0"], "--width: expected a width of 20 to 10,000 columns"),
    (["memory", "gpt2", "--width", "-5"], "--width: expected a width"),
    (["gpt2", "--tree", "2", "--collapsed"], "--collapsed: lists tensors collapsed in the JSON document"),
    (["gpt2", "--tree", "-1"], "argument --tree: expected an integer ≥ 0, got -1"),
    (["memory", "gpt2", "--batch", BIG], "argument --batch: expected an integer ≥ 1 of at most 12 digits"),
    (["fit", "gpt2", "--train", "--gpus", "0"], "argument --gpus: expected an integer ≥ 1, got 0"),
    (["memory", "gpt2", "--train", "--lora-targets", "nothing_here"], "--lora-targets: "),
    (["compute", "gpt2", "--utilisation", "0.5"], "--utilisation: only with --gpu"),
    (["compute", "{nested-printout}"], "nested.txt: counts about 10^159 parameters, past 10^30"),
    (["memory", "{nested-printout}", "--train"], "counts about 10^159 parameters"),
    (["memory", "{one-tensor}", "--plot", "never-written.png"], "--plot: draws memory against context"),
    # issue 32: patterns a linear-time matcher refuses, counts past a C float, a newline in a name
    (["memory", MOE, "--runtime", "llama.cpp", "-ot", "a{4294967296}=CPU"], "expands to 4,294,967,296 states"),
    (["memory", MOE, "--runtime", "llama.cpp", "-ot", "(?s:.)*" * 14 + "=CPU"], "(?s... is Python syntax"),
    (["memory", MOE, "--runtime", "llama.cpp", "-ot", r"(a)\1=CPU"], "backreference \\1 needs a backtracking"),
    (["memory", MOE, "--runtime", "llama.cpp", "-ngl", "9", "-ts", "1e308,1e308"], "--tensor-split: each proportion"),
    (["memory", MOE, "--runtime", "llama.cpp", "-ngl", "9", "-ts", "3e38,3e38"], "add up past a C float's 3.4e38"),
    (["memory", "gpt2", "--train", "--lora-targets", r"(\w+)\.\1"], "--lora-targets: targets"),
    (["ollama:qwen3\n"], "'qwen3\\n' is not a part of an Ollama model name"),
    (["{not-regular-fifo}"], "config.json: is a FIFO (named pipe), not a regular file"),
    (["memory", "{not-regular-zero}"], "config.json: is a character device, not a regular file"),
    (["{not-regular-deep}"], "config.json: nested too deeply: arrays and objects more than 64 levels deep"),
    (["{not-regular-fifo-txt}"], "fifo.txt: is a FIFO (named pipe), not a regular file"),
    (["{not-regular-zero-gguf}"], "zero.gguf: is a character device, not a regular file"),
    (["explain", "{not-regular-random-txt}"], "random.txt: is a character device, not a regular file"),
    (["gpt2", "--set", "n_layer=" + "[" * 100 + "]" * 100], "--set: n_layer: nested too deeply"),
]


# Calls one command may make on these small hostile inputs, lazy imports of its renderer included
# (the most measured is about 400,000): a walk over 10^159 parameters or a loop over a stated length
# spends it at once. Work in one C call (int() of 5,000 digits) is kept out by the refusals' messages.
CALLS = 3_000_000


def run(argv: list[str], capsys) -> tuple[int, str, str, int]:
    with calls(CALLS) as done:
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err, done.n


@pytest.mark.parametrize("argv, said", REFUSED, ids=lambda x: " ".join(x)[:60] if isinstance(x, list) else None)
def test_refused_in_one_line(files, capsys, argv, said):
    code, out, err, _ = run([a.format(**files) if "{" in a[:1] else a for a in argv], capsys)
    assert "Traceback" not in out + err
    if said is None and code == 0:
        return
    assert code == 2 and err.count("\n") == 1 and err.startswith("paramcount: error: "), err[:300]
    assert said in err, err[:300]


FREEZING = (".*" * 12 + "Z", "(.|.)*Z", r"(\w|\w)*Z", "(?:.)*" * 14 + "Z", "((a+))+$")


def test_patterns_that_froze_python_re_are_planned_in_bounded_work(capsys):
    """Issue 32 item 1: each spun 7-20 s under Python's re; counted in Python calls here (the
    matcher runs in Python, so a count sees all of its work)."""
    argv = ["memory", MOE, "--runtime", "llama.cpp", "--json", "-ot", ",".join(f"{p}=CPU" for p in FREEZING)]
    code, out, err, n = run(argv, capsys)
    assert code == 0 and not err and n < CALLS, err[:300]
    assert '"host":' in out


ODD_NAMES = [
    "model.layers.00.w",  # a leading zero is no list index
    "model.layers.².w",  # superscript two: a digit to str.isdigit, not to int()
    "model.layers.٣.w",  # Arabic-Indic three
    "[/]x",  # rich markup
    "[bold red]boom",
    "\x1b[2Jwiped.weight",  # clears the screen if it reaches a terminal
    "a\ud800b",  # a lone surrogate: unencodable
    "\u202eevil.weight",  # a bidirectional override
    ":smile:.weight",  # a rich emoji code
]
ODD_COMMANDS = [[], ["--tree", "9"], ["--json"], ["--json", "--collapsed"], ["memory"], ["explain", "--format", "md"]]


@pytest.fixture(scope="module")
def odd(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("odd")
    return {
        "safetensors": safetensors(base / "st", ODD_NAMES),
        "with-config": safetensors(base / "cfg", [f"model.layers.{n}" for n in ("00.w", "².w")], LLAMA),
        "gguf": gguf(base / "odd.gguf", [*ODD_NAMES[:5], "blk.00.attn_q.weight", "blk.².ffn.weight"]),
        "architectures": safetensors(base / "arch", ["w"], {**LLAMA, "architectures": ["Llama\ud800Model"]}),
    }


@pytest.mark.parametrize("source", ["safetensors", "with-config", "gguf", "architectures"])
@pytest.mark.parametrize("command", ODD_COMMANDS, ids=" ".join)
def test_odd_names_are_counted_and_escaped(odd, capsys, source, command):
    path = odd[source]
    argv = [command[0], path, *command[1:]] if command[:1] in (["memory"], ["explain"]) else [path, *command]
    code, out, err, _ = run(argv, capsys)
    assert "Traceback" not in out + err and "\x1b" not in out + err and "\u202e" not in out + err
    assert code == 0 or (code == 2 and err.count("\n") == 1), err
    if code == 0 and "--json" in command:
        json.loads(out)
    if code == 0 and source == "safetensors" and command[:1] == ["--tree"]:
        assert "[/]x" in out and "\\x1b[2Jwiped" in out and "a\\ud800b" in out and ":smile:" in out


def test_markdown_escapes_html_from_a_printout(tmp_path, capsys):
    text = tmp_path / "model.txt"
    text.write_text("Net(\n  (<img src=x onerror=alert(1)>): Linear(in_features=4, out_features=4, bias=True)\n)\n")
    code, out, _, _ = run(["explain", str(text), "--format", "md"], capsys)
    assert code == 0 and "(<img" not in out and "(\\<img" in out


def test_compute_on_a_checkpoint_with_no_matrix_multiply(files, capsys):
    code, out, err, _ = run(["compute", files["one-tensor"], "--width", "120"], capsys)
    assert code == 0 and "not exact" in out and "no config.json beside the weights" in out, err


# ---- random input through every command ----------------------------------------------------

EVERY = [[], ["--json"], ["--tree", "3"], ["memory"], ["fit"], ["compute"], ["explain"], ["check", "1B"]]
EVERY += [["compare"], ["diff", "gpt2"]]


def _argv(command: list[str], path: str) -> list[str]:
    if not command or command[0].startswith("--"):
        return [path, *command]
    return [command[0], path, *command[1:]]


def _survives(argv: list[str], capsys) -> None:
    code, out, err, _ = run(argv, capsys)
    assert "Traceback" not in out + err
    if code == 2 and "--json" in argv:  # the error as a JSON object on stdout
        assert not err and set(json.loads(out)) == {"schema", "error", "field", "source"}, out
        return
    assert code in (0, 1) or (code == 2 and err.count("\n") == 1 and err.startswith("paramcount: error:")), err


EXAMPLES = int(os.environ.get("PARAMCOUNT_FUZZ_EXAMPLES", "15"))  # a few seconds here; set 400 for a long run
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(blob=st.binary(max_size=300), suffix=st.sampled_from(["bin.txt", "model.safetensors", "x.gguf", "config.json"]))
def test_random_bytes_through_every_command(tmp_path_factory, capsys, blob, suffix):
    path = tmp_path_factory.mktemp("bytes") / suffix
    path.write_bytes(blob)
    for command in EVERY:
        _survives(_argv(command, str(path)), capsys)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
FIELDS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "intermediate_size", "head_dim"]


@FAST
@given(
    model_type=st.sampled_from(["llama", "gpt2", "bert", "t5", "qwen3_moe", "mixtral", "gemma2", None]),
    fields=st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), JSON, max_size=4),
)
def test_random_json_configs_through_every_command(tmp_path_factory, capsys, model_type, fields):
    path = tmp_path_factory.mktemp("json") / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **fields}))
    for command in EVERY:
        _survives(_argv(command, str(path)), capsys)


@FAST
@given(header=st.dictionaries(st.text(max_size=12), JSON, max_size=4))
def test_random_safetensors_headers_through_every_command(tmp_path_factory, capsys, header):
    folder = tmp_path_factory.mktemp("header")
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    for command in EVERY:
        _survives(_argv(command, str(folder)), capsys)
