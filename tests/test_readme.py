"""Every ``$ paramcount …`` example in the READMEs and in docs/ is a real run: its output is
checked, and every ``>>>`` example is run as a doctest.

UPDATE_SNAPSHOTS=1 rewrites the example outputs from fresh runs.
"""

import doctest
import os
import re
import shlex
from pathlib import Path

import pytest

from paramcount.cli import main

ROOT = Path(__file__).parent.parent
BLOCK = re.compile(r"```console\n\$ (paramcount[^\n]*)\n(.*?)```", re.S)
READMES = [p for p in (ROOT / "README.md", ROOT / "README.zh-CN.md") if p.exists()]
PAGES = READMES + sorted((ROOT / "docs").glob("*.md"))


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def run(command: str, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository
    argv = shlex.split(command)[1:]
    main(argv)
    out, err = capsys.readouterr()
    return out + err


def examples(path: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def test_every_readme_has_examples():
    for path in READMES:
        assert examples(path), f"{path.name} has no console examples"


def test_no_console_block_escapes_the_check():
    """A ``console`` block that does not start ``$ paramcount`` would never be run: there is none."""
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        assert text.count("```console\n") == len(examples(path)), name(path)


@pytest.mark.parametrize("path", [p for p in PAGES if examples(p)], ids=name)
def test_console_examples_are_real(path, capsys, monkeypatch):
    text = path.read_text(encoding="utf-8")
    for command, shown in examples(path):
        actual = run(command, capsys, monkeypatch)
        if os.environ.get("UPDATE_SNAPSHOTS"):
            text = text.replace(f"$ {command}\n{shown}```", f"$ {command}\n{actual}```", 1)
        else:
            assert actual == shown, f"{name(path)}: output of `{command}` changed"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("path", [p for p in PAGES if ">>> " in p.read_text(encoding="utf-8")], ids=name)
def test_python_examples(path):
    result = doctest.testfile(str(path), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed


def test_ci_runs_the_readme_test_command():
    """The quick start's second command is what .ci/run runs in its fresh virtual environment
    (where ``python`` is the venv's python3)."""
    quick = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    install, test = re.findall(r"```bash\n(.*?)\n```", quick, re.S)
    assert install == "python3 -m pip install . && paramcount"
    assert test.replace("python3 ", "python ") in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
