"""M2M-100 (Fan et al. 2020): BART's layers, pre-norm, with sinusoidal positions held in a
non-persistent buffer (no parameter), no LayerNorm on the embeddings, and a final
``layer_norm`` in each stack. transformers defines only the bare model and the translation
head. NLLB-200's checkpoints use this model type."""

from __future__ import annotations

from . import Family, bart
from .blocks import base, lm_head, with_head

DEFAULTS = {
    **{k: v for k, v in bart.DEFAULTS.items() if k != "num_labels"},
    "vocab_size": 128112,
}

VARIANT = bart.Variant(prefix="M2M100", learned_positions=False, embedding_norm=False, final_norm=True)

FAMILY = Family(
    model_type="m2m_100",
    defaults=DEFAULTS,
    aliases=bart.ALIASES,
    backbone="M2M100Model",
    check=bart.check,
    classes={
        "M2M100Model": base(bart.encoder_decoder("", VARIANT)),
        "M2M100ForConditionalGeneration": with_head(
            bart.encoder_decoder("model", VARIANT), "model", lm_head("shared.weight")
        ),
    },
)
