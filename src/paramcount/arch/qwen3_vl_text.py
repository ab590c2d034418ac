"""Qwen3-VL's language model (``Qwen3VLTextModel``): Qwen3's decoder (per-head q/k RMSNorms,
an explicit ``head_dim``) under the text config's own defaults; its interleaved M-RoPE changes
no parameter."""

from __future__ import annotations

from ..records import replace
from .blocks import base
from .qwen3 import FAMILY as QWEN3
from .qwen3 import backbone

# Qwen3VLTextConfig has no tie_word_embeddings field: the text model has no head.
DEFAULTS = {k: v for k, v in QWEN3.defaults.items() if k != "tie_word_embeddings"}


def cache_layout(c, model_type: str, cls: str, mla: str):
    """qwen3's (no sliding window: the text config has none)."""
    from .cache import BUILDERS

    return BUILDERS["qwen3"](c, "qwen3", cls, mla)


FAMILY = replace(
    QWEN3,
    model_type="qwen3_vl_text",
    defaults=DEFAULTS,
    backbone="Qwen3VLTextModel",
    classes={"Qwen3VLTextModel": base(backbone)},
    cache_layout=cache_layout,
)

__all__ = ["FAMILY"]
