"""The one line that runs a model under mlx-lm as a plan assumes it: ``mlx_lm.chat`` on the
mlx-community conversion named after the model and scheme (``mlx_lm.convert`` -q --q-bits N,
group 64, as :mod:`.names` reads those names back), and ``--max-kv-size`` where the model's
``make_cache`` honours it."""

from __future__ import annotations

import shlex

from .names import ORG

_SUFFIX = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


def community_name(ref: str, scheme: str) -> str:
    """``mlx-community/Qwen3-8B-4bit`` for ``Qwen/Qwen3-8B`` at ``mlx-4bit``; a local folder stays itself."""
    if ref.startswith(("/", ".", "~")):
        return ref
    base = ref.rstrip("/").split("/")[-1]
    return f"{ORG}{base}-{_SUFFIX.get(scheme) or scheme.removeprefix('mlx-')}"


def chat_command(ref: str, scheme: str, max_kv_size: int | None) -> str:
    words = ["mlx_lm.chat", "--model", shlex.quote(community_name(ref, scheme))]
    return " ".join(words + (["--max-kv-size", str(max_kv_size)] if max_kv_size else []))
