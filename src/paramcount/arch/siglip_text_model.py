"""SigLIP's text tower on its own (``SiglipTextConfig``): ``SiglipTextModel``."""

from __future__ import annotations

from ..ir import Block
from . import Family
from .clip import check_tower
from .config import Cfg
from .siglip import TEXT, text_transformer
from .vision import no_cache


def text(c: Cfg) -> Block:
    """transformers 5 holds the tower's modules at the root of this class (no prefix)."""
    return Block("", text_transformer(c).children, label="backbone")


FAMILY = Family(
    model_type="siglip_text_model",
    defaults=TEXT,
    backbone="SiglipTextModel",
    check=check_tower,
    cache_layout=no_cache,
    classes={"SiglipTextModel": text},
)
