"""SigLIP 2's vision tower on its own (``Siglip2VisionConfig``): ``Siglip2VisionModel``."""

from __future__ import annotations

from ..ir import Block
from . import Family
from .clip import check_tower
from .config import Cfg
from .siglip2 import VISION, vision_tower
from .vision import no_cache


def vision(c: Cfg) -> Block:
    """transformers 5 holds the tower's modules at the root of this class (no prefix)."""
    return Block("", vision_tower(c).children, label="backbone")


FAMILY = Family(
    model_type="siglip2_vision_model",
    defaults=VISION,
    backbone="Siglip2VisionModel",
    check=check_tower,
    cache_layout=no_cache,
    max_tokens=lambda c: int(c.int("num_patches")),
    classes={"Siglip2VisionModel": vision},
)
