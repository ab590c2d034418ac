"""The one line that loads an Ollama model with a context: the API's ``options.num_ctx`` (which
overrides the modelfile's, ``api.Options``), since ``ollama run`` takes no context flag (inside it,
``/set parameter num_ctx N`` does the same)."""

from __future__ import annotations

import json
import shlex

API = "http://localhost:11434/api/generate"  # envconfig.Host's default


def load_command(name: str, num_ctx: int) -> str:
    """``curl …/api/generate -d '{"model": NAME, "options": {"num_ctx": N}}'``: loads it and keeps it."""
    body = json.dumps({"model": name, "options": {"num_ctx": num_ctx}}, separators=(",", ":"))
    return f"curl {API} -d {shlex.quote(body)}"
