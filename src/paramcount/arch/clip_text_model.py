"""CLIP's text tower on its own (``CLIPTextConfig``): ``CLIPTextModel``, and with its projection
into the shared space, ``CLIPTextModelWithProjection``."""

from __future__ import annotations

from ..ir import Block, Tensor
from . import Family
from .clip import TEXT, check_tower, text_transformer
from .config import Cfg
from .vision import no_cache


def text(c: Cfg) -> Block:
    """transformers 5 holds the tower's modules at the root of this class (no prefix)."""
    return Block("", text_transformer(c).children, label="backbone")


def with_projection(c: Cfg) -> Block:
    weight = Tensor("weight", (c.int("projection_dim"), c.int("hidden_size")))
    projection = Block("text_projection", (weight,), kind="output_head")
    return Block("", (text_transformer(c), Block("", (projection,), tower="projector")))


FAMILY = Family(
    model_type="clip_text_model",
    defaults=TEXT,
    backbone="CLIPTextModel",
    check=check_tower,
    cache_layout=no_cache,
    classes={"CLIPTextModel": text, "CLIPTextModelWithProjection": with_projection},
)
