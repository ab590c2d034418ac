"""CLIP's vision tower on its own (``CLIPVisionConfig``): ``CLIPVisionModel``, and with its
projection into the shared space, ``CLIPVisionModelWithProjection``."""

from __future__ import annotations

from ..ir import Block, Tensor
from . import Family
from .clip import VISION, check_tower, vision_transformer
from .config import Cfg
from .vision import no_cache


def vision(c: Cfg) -> Block:
    """transformers 5 holds the tower's modules at the root of this class (no prefix)."""
    return Block("", vision_transformer(c).children, label="backbone")


def with_projection(c: Cfg) -> Block:
    weight = Tensor("weight", (c.int("projection_dim"), c.int("hidden_size")))
    projection = Block("visual_projection", (weight,), kind="output_head")
    return Block("", (vision_transformer(c), Block("", (projection,), tower="projector")))


FAMILY = Family(
    model_type="clip_vision_model",
    defaults=VISION,
    backbone="CLIPVisionModel",
    check=check_tower,
    cache_layout=no_cache,
    max_tokens=lambda c: int(c.int("image_size") // c.int("patch_size")) ** 2 + 1,
    classes={"CLIPVisionModel": vision, "CLIPVisionModelWithProjection": with_projection},
)
