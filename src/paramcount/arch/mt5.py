"""mT5 (Xue et al. 2020): T5 v1.1 layers (gated GELU, untied head in its checkpoints) over a
250k-token multilingual vocabulary; the modules are T5's under ``MT5`` class names."""

from __future__ import annotations

from .t5 import DEFAULTS as T5_DEFAULTS
from .t5 import family

# MT5Config's own field defaults (mt5-small's shape).
DEFAULTS = {
    **T5_DEFAULTS,
    "vocab_size": 250112,
    "d_ff": 1024,
    "num_layers": 8,
    "num_heads": 6,
    "feed_forward_proj": "gated-gelu",
    "tie_word_embeddings": True,
}

FAMILY = family("mt5", "MT5", DEFAULTS)
