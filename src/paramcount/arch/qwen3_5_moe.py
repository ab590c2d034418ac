"""Qwen3.5-MoE (Qwen3.5-35B-A3B, -397B-A17B): Qwen3.5's vision model and the hybrid routed
decoder (``qwen3_5_moe_text``) as the language model."""

from __future__ import annotations

from . import Family
from .qwen3_5 import VISION_35
from .qwen3_vl import DEFAULTS, cache, classes, image_rule
from .towers import QWEN_VL_RENAMES

FAMILY = Family(
    model_type="qwen3_5_moe",
    defaults=DEFAULTS,
    backbone="Qwen3_5MoeModel",
    cache_layout=cache("qwen3_5_moe_text"),
    classes=classes("Qwen3_5Moe", "qwen3_5_moe_text", VISION_35),
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule(VISION_35),
)

__all__ = ["FAMILY"]
