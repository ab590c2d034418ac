"""Qwen3.5 (Qwen team 2026), natively multimodal: Qwen3-VL's vision model without deep-stack
mergers, and the Qwen3.5 hybrid decoder (gated DeltaNet and gated full attention,
``qwen3_5_text``) as the language model; transformers also builds sequence and token classifiers
on the whole model."""

from __future__ import annotations

from . import Family
from .qwen3_vl import DEFAULTS, VISION, cache, classes, image_rule
from .towers import QWEN_VL_RENAMES

VISION_35 = {k: v for k, v in VISION.items() if k != "deepstack_visual_indexes"}  # none in Qwen3_5VisionConfig

FAMILY = Family(
    model_type="qwen3_5",
    defaults=DEFAULTS,
    backbone="Qwen3_5Model",
    cache_layout=cache("qwen3_5_text"),
    classes=classes("Qwen3_5", "qwen3_5_text", VISION_35, heads=True),
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule(VISION_35),
)

__all__ = ["FAMILY", "VISION_35"]
