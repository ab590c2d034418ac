"""Qwen3-VL-MoE: Qwen3-VL's vision model (with its deep-stack mergers) and Qwen3-MoE's routed
decoder as the language model (``Qwen3VLMoeTextModel``)."""

from __future__ import annotations

from . import Family
from .qwen3_vl import DEFAULTS, cache, classes, image_rule
from .towers import QWEN_VL_RENAMES

FAMILY = Family(
    model_type="qwen3_vl_moe",
    defaults=DEFAULTS,
    backbone="Qwen3VLMoeModel",
    cache_layout=cache("qwen3_vl_moe_text"),
    classes=classes("Qwen3VLMoe", "qwen3_vl_moe_text"),
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule(),
)

__all__ = ["FAMILY"]
