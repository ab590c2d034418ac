"""mlx-community's model names, read as the catalog model they convert and the scheme they hold.

mlx-community publishes ``mlx_lm.convert`` outputs named after the base repository's model with the
precision appended: ``mlx-community/Qwen3-8B-4bit``, ``…-8bit``, ``…-bf16``, ``…-4bit-DWQ`` (a
distilled 4-bit: the same layout), ``…-MLX-4bit``. Their quantised layouts are ``mlx_lm.convert``'s
defaults (group 64, affine) unless the config says otherwise, which only the folder itself shows;
a name alone is planned at those defaults.
"""

from __future__ import annotations

import re

from ....frontends import catalog

ORG = "mlx-community/"
_SUFFIX = re.compile(r"[-_](?:mlx[-_])?(?P<what>\d+bit|bf16|fp16|fp32|float16|bfloat16)(?:[-_](?:dwq|awq|mlx))*$", re.I)
_FLOAT = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "fp32": "fp32"}
_VARIANTS = ("-Instruct", "-it", "-Chat", "-Base")


def from_name(name: str) -> tuple[str, str] | None:
    """(catalog id, scheme) for an mlx-community name whose base model the catalog holds, else None."""
    if not name.lower().startswith(ORG):
        return None
    rest = name[len(ORG) :]
    m = _SUFFIX.search(rest)
    if m is None:
        return None
    what = m.group("what").lower()
    scheme = _FLOAT.get(what) or f"mlx-{what}"
    base = rest[: m.start()]
    for candidate in (base, *(base[: -len(v)] for v in _VARIANTS if base.lower().endswith(v.lower()))):
        entry = catalog.find(candidate)
        if entry is not None:
            return entry.id, scheme
    return None
