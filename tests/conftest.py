import os
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture
def snapshot():
    """Compare text with tests/snapshots/NAME; UPDATE_SNAPSHOTS=1 rewrites the file."""

    def check(name: str, text: str) -> None:
        path = SNAPSHOTS / name
        if os.environ.get("UPDATE_SNAPSHOTS") or (not path.exists() and not os.environ.get("CI")):
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"snapshot {name} missing (run with UPDATE_SNAPSHOTS=1)"
        assert text == path.read_text(encoding="utf-8")

    return check


@pytest.fixture(autouse=True)
def _piped(monkeypatch):
    """Output as piped with no COLUMNS (the layout snapshots hold), unless a test sets a width."""
    monkeypatch.delenv("COLUMNS", raising=False)
