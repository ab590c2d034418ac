"""SigLIP's vision tower on its own (``SiglipVisionConfig``): ``SiglipVisionModel``, the vision
tower PaliGemma and Gemma 3 build from their ``vision_config``."""

from __future__ import annotations

from ..ir import Block
from . import Family
from .clip import check_tower
from .config import Cfg
from .siglip import VISION, vision_tokens, vision_transformer
from .vision import no_cache


def vision(c: Cfg) -> Block:
    """transformers 5 holds the tower's modules at the root of this class (no prefix)."""
    return Block("", vision_transformer(c).children, label="backbone")


FAMILY = Family(
    model_type="siglip_vision_model",
    defaults=VISION,
    backbone="SiglipVisionModel",
    check=check_tower,
    cache_layout=no_cache,
    max_tokens=vision_tokens,
    classes={"SiglipVisionModel": vision},
)
