"""CamemBERT (Martin et al. 2020): a French RoBERTa. transformers' classes are RoBERTa's with
the backbone still under ``roberta`` and the LM head registered first (as XLM-RoBERTa's), so
the tied matrix is ``lm_head.decoder.weight``. The config class's default vocabulary is
BERT's 30,522; camembert-base has 32,005 tokens."""

from __future__ import annotations

from . import Family, bert, roberta

DEFAULTS = {**roberta.DEFAULTS, "vocab_size": 30522}

FAMILY = Family(
    model_type="camembert",
    defaults=DEFAULTS,
    backbone="CamembertModel",
    check=bert.check,
    classes=roberta.classes("Camembert", head_first=True),
)
