import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# On a shared machine no hypothesis test may fail by the clock: no per-example deadline, and no
# health check that times the generation of examples. A test's own @settings keeps what it sets.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

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


@pytest.fixture(autouse=True)
def _no_fallback_cache(monkeypatch):
    """No test reads or writes the user's cache of the transformers fallback's answers (each
    counts as a fresh install would); tests/test_fallback_cache.py turns it on in a folder of its own."""
    monkeypatch.setenv("PARAMCOUNT_NO_CACHE", "1")
