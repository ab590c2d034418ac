"""Shell completion: the scripts parse in their shells, and bash and fish really complete commands,
flags, catalog names, GPUs and fixed choices; every command's every flag is in them."""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paramcount import cli, completion
from paramcount.cli import main


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in completion.SHELLS:
        (folder / shell).write_text(cli.completion_script(shell), encoding="utf-8")
        out[shell] = str(folder / shell)
    return out


def bash_complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of ``words``: the script sourced, COMP_WORDS set, its function called."""
    drive = f"""source {shlex.quote(script)}
COMP_WORDS=({" ".join(shlex.quote(w) for w in ("paramcount", *words))})
COMP_CWORD={len(words)}
_paramcount
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", drive], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_script_is_valid(scripts):
    done = subprocess.run(["bash", "-n", scripts["bash"]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_bash_completes_commands_flags_models_gpus(scripts):
    bash = scripts["bash"]
    assert bash_complete(bash, "mem") == ["memory"]
    assert bash_complete(bash, "comp") == ["compare", "compute", "completion"]
    kv = {"--kv-dtype", "--kv-cache", "--kv-unified", "--kv-heads", "--kv-bits", "--kv-group-size", "--kv-cache-space"}
    assert set(bash_complete(bash, "memory", "gpt2", "--kv")) == kv
    assert set(bash_complete(bash, "memory", "--gp")) == {"--gpu", "--gpus", "--gpu-memory-utilization"}
    assert "Qwen/Qwen2.5-7B" in bash_complete(bash, "Qwen/Qwen2.5-7")  # the bare count
    assert "meta-llama/Llama-3.1-8B" in bash_complete(bash, "memory", "meta-llama/Llama-3.1-8")
    assert bash_complete(bash, "fit", "gpt2", "--gpu", "rtx40") == ["rtx4090"]
    assert bash_complete(bash, "fit", "gpt2", "--gpu", "=", "rtx40") == ["rtx4090"]  # --gpu=rtx40
    runtimes = ["transformers", "llama.cpp", "vllm", "mlx", "ollama"]
    assert bash_complete(bash, "memory", "gpt2", "--runtime", "") == runtimes
    assert "q4_k_m" in bash_complete(bash, "memory", "gpt2", "--dtype", "q4")
    assert bash_complete(bash, "memory", "gpt2", "-ctk", "q8") == ["q8_0"]
    assert bash_complete(bash, "completion", "") == ["bash", "zsh", "fish"]


def test_bash_offers_no_command_past_the_first_word(scripts):
    assert bash_complete(scripts["bash"], "gpt2", "--json", "mem") == []  # a model, not `memory`


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return {name: completion.parser(name, cli.COMMANDS, cli.Parser) for name in cli.COMMANDS}


def test_every_command_and_flag_is_completed(scripts):
    """Each command's parser, as the command builds it: every flag, every choice is offered, so a
    flag added to the command line cannot be left out."""
    bash = scripts["bash"]
    assert set(bash_complete(bash, "")) >= set(cli.COMMANDS) - {"count"}
    texts = {shell: Path(path).read_text(encoding="utf-8") for shell, path in scripts.items()}
    for name, p in _parsers().items():
        prefix = [] if name == "count" else [name]
        flags = {s for a in p._actions for s in a.option_strings}
        assert set(bash_complete(bash, *prefix, "-")) == flags, name
        for a in p._actions:
            if a.option_strings and a.choices:
                offered = bash_complete(bash, *prefix, a.option_strings[-1], "")
                assert offered == [str(c) for c in a.choices], (name, a.option_strings)
        for shell in ("zsh", "fish"):  # bash's, offered above
            text = texts[shell]
            assert name in text or name == "count", shell
            spelt = {"zsh": lambda f: f"'{f}[", "fish": _fish_flag}[shell]
            missing = [f for f in flags if spelt(f) not in text and f"*{spelt(f)[1:]}" not in text]
            assert not missing, (shell, name, missing)


def _fish_flag(flag: str) -> str:
    """How the fish script names a flag: -l json, -o np and -o c (llama.cpp's single-dash flags), -s h."""
    if flag.startswith("--"):
        return f"-l {flag[2:]} "
    return f"-s {flag[1:]} " if flag == "-h" else f"-o {flag[1:]} "


def test_parser_leaves_the_command_line_as_it_was():
    own = cli.Parser.__dict__.get("parse_known_args")
    completion.commands(cli.COMMANDS, cli.Parser)
    assert cli.Parser.__dict__.get("parse_known_args") is own
    assert cli.Parser("x").parse_args([]) == argparse.Namespace()


def test_words_with_shell_characters_are_left_out(monkeypatch):
    monkeypatch.setattr(completion, "catalog_names", lambda: ("good/model-1.5B", "bad;touch x", "$(boom)"))
    for shell in completion.SHELLS:
        text = cli.completion_script(shell)
        assert "good/model-1.5B" in text and "touch x" not in text and "$(boom)" not in text


def test_the_command_line_does_not_import_completion():
    code = "import sys, paramcount.cli; assert 'paramcount.completion' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_unknown_shell_is_one_line(capsys):
    assert main(["completion", "tcsh"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'tcsh'" in err and err.count("\n") == 1


def test_zsh_script(scripts):
    text = Path(scripts["zsh"]).read_text(encoding="utf-8")
    assert text.startswith("#compdef paramcount\n")
    assert "'--gpu[" in text and "rtx4090" in text and "llama.cpp" in text and "q4_k_m" in text
    assert "meta-llama/Llama-3.1-8B" in text
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed (apt-get install zsh): only the script's words were checked")
    assert subprocess.run([zsh, "-n", scripts["zsh"]], capture_output=True).returncode == 0
    # sourced after compinit, it registers itself for paramcount
    load = f"autoload -U compinit; compinit -u -D; source {shlex.quote(scripts['zsh'])}; print $_comps[paramcount]"
    done = subprocess.run([zsh, "-f", "-c", load], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "_paramcount", done.stderr


def fish_complete(script: str, line: str) -> list[str]:
    drive = f"source {shlex.quote(script)}; complete -C {shlex.quote(line)}"
    done = subprocess.run(["fish", "--no-config", "-c", drive], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_fish_script(scripts):
    text = Path(scripts["fish"]).read_text(encoding="utf-8")
    assert "-l gpu" in text and "rtx4090" in text and "-o ctk" in text and "meta-llama/Llama-3.1-8B" in text
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install fish): only the script's words were checked")
    assert subprocess.run(["fish", "-n", scripts["fish"]], capture_output=True).returncode == 0
    fish = scripts["fish"]
    assert "memory" in fish_complete(fish, "paramcount mem")
    assert set(fish_complete(fish, "paramcount memory gpt2 --gp")) == {"--gpu", "--gpus", "--gpu-memory-utilization"}
    assert fish_complete(fish, "paramcount fit gpt2 --gpu rtx40") == ["rtx4090"]
    assert "Qwen/Qwen2.5-7B" in fish_complete(fish, "paramcount Qwen/Qwen2.5-7")
    assert set(fish_complete(fish, "paramcount fit gpt2 -ct")) == {"-ctk", "-ctv"}
