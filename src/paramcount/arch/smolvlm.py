"""SmolVLM (Marafioti et al. 2025): Idefics3's tree under its own class names."""

from __future__ import annotations

from ..records import replace
from .idefics3 import FAMILY as IDEFICS3

FAMILY = replace(
    IDEFICS3,
    model_type="smolvlm",
    backbone="SmolVLMModel",
    classes={
        "SmolVLMModel": IDEFICS3.classes["Idefics3Model"],
        "SmolVLMForConditionalGeneration": IDEFICS3.classes["Idefics3ForConditionalGeneration"],
    },
)
