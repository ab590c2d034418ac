"""UMT5 (Chung et al. 2023, UniMax): mT5's layers and names, except that every block's
self-attention has its own relative-position bias table (T5 and mT5 keep one, in block 0).
Cross-attention has none. The config class's defaults are mT5's (mt5-small's shape)."""

from __future__ import annotations

from . import mt5
from .t5 import family

DEFAULTS = mt5.DEFAULTS

FAMILY = family("umt5", "UMT5", DEFAULTS, bias_everywhere=True)
