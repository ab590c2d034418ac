"""Fixtures for the web page's tests: the app in-process, and header bytes as a browser reads them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from paramcount.web.app import create_app

from ..test_hub_gguf import hub, repo  # noqa: F401  (fixtures: a local Hub and a GGUF repository on it)
from ..test_stores import home  # noqa: F401  (a fixture: Ollama's store and the caches in a temporary folder)

ROOT = Path(__file__).parent.parent.parent
BLOOM_TEXT = (ROOT / "tests" / "fixtures" / "bloom-1b4-zh.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def client():
    with TestClient(create_app(hosts=["testserver"])) as c:
        yield c


def safetensors_header(path: Path) -> bytes:
    """What the page reads of a .safetensors file: the 8-byte length and that many bytes."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        f.seek(0)
        return f.read(8 + n)


def gguf_header(path: Path) -> bytes:
    """Everything before a GGUF file's tensor data (where gguf's own reader says it starts)."""
    import gguf

    with open(path, "rb") as f:
        return f.read(gguf.GGUFReader(str(path)).data_offset)


def upload_body(fmt: str, path: Path, header: bytes, config=None) -> dict:
    return {
        "format": fmt,
        "name": path.name,
        "size": path.stat().st_size,
        "header": base64.b64encode(header).decode(),
        "config": config,
    }
