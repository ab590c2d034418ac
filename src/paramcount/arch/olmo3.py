"""OLMo 3 (Ai2 2025): OLMo 2's layer (post-norms, full-width q/k RMSNorms) where three
sliding-window layers alternate with one full-attention layer (``layer_types``, built so
when absent), which changes no parameter."""

from __future__ import annotations

from . import Family, dense, mistral, olmo2
from .blocks import decoder_classes
from .config import Cfg

DEFAULTS = {**olmo2.DEFAULTS, "sliding_window": 4096, "layer_types": None}


def check(c: Cfg) -> None:
    mistral.check(c)
    dense.check_layer_types(c)


FAMILY = Family(
    model_type="olmo3",
    defaults=DEFAULTS,
    backbone="Olmo3Model",
    check=check,
    cache_layout=dense.periodic_cache(lambda c: 4),
    classes=decoder_classes("Olmo3", olmo2.backbone, heads=olmo2.HEADS),
)

__all__ = ["FAMILY"]
