"""Qwen2.5-VL's language model on its own (``Qwen2_5_VLTextConfig``): ``Qwen2_5_VLTextModel``,
the same tree, defaults and cache as Qwen2-VL's (``qwen2_vl_text``)."""

from __future__ import annotations

from ..records import replace
from .qwen2_vl_text import FAMILY as QWEN2_VL_TEXT

FAMILY = replace(
    QWEN2_VL_TEXT,
    model_type="qwen2_5_vl_text",
    backbone="Qwen2_5_VLTextModel",
    classes={"Qwen2_5_VLTextModel": QWEN2_VL_TEXT.classes["Qwen2VLTextModel"]},
)
