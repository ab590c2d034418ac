"""SigLIP 2's text tower on its own (``Siglip2TextConfig``): ``Siglip2TextModel``, SigLIP's."""

from __future__ import annotations

from . import Family
from .clip import check_tower
from .siglip import TEXT
from .siglip_text_model import text
from .vision import no_cache

FAMILY = Family(
    model_type="siglip2_text_model",
    defaults=TEXT,
    backbone="Siglip2TextModel",
    check=check_tower,
    cache_layout=no_cache,
    classes={"Siglip2TextModel": text},
)
