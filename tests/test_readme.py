"""Every ``$ paramcount …`` example in the READMEs is a real run: its output is checked.

UPDATE_SNAPSHOTS=1 rewrites the example outputs from fresh runs.
"""

import os
import re
import shlex
from pathlib import Path

import pytest

from paramcount.cli import main

ROOT = Path(__file__).parent.parent
BLOCK = re.compile(r"```console\n\$ (paramcount[^\n]*)\n(.*?)```", re.S)
READMES = [p for p in (ROOT / "README.md", ROOT / "README.zh-CN.md") if p.exists()]


def run(command: str, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository
    argv = shlex.split(command)[1:]
    main(argv)
    out, err = capsys.readouterr()
    return out + err


def examples(path: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", READMES, ids=lambda p: p.name)
def test_readme_examples_are_real(path, capsys, monkeypatch):
    text = path.read_text(encoding="utf-8")
    found = examples(path)
    assert found, f"{path.name} has no console examples"
    for command, shown in found:
        actual = run(command, capsys, monkeypatch)
        if os.environ.get("UPDATE_SNAPSHOTS"):
            text = text.replace(f"$ {command}\n{shown}```", f"$ {command}\n{actual}```", 1)
        else:
            assert actual == shown, f"{path.name}: output of `{command}` changed"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")


def test_readme_python_examples():
    import doctest

    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed
