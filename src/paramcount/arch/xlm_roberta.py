"""XLM-RoBERTa (Conneau et al. 2019): RoBERTa's architecture and module names (the backbone
attribute is still ``roberta``) with a 250,002-token multilingual vocabulary in checkpoints;
the config class's own default vocabulary is BERT's 30,522. Its LM classes register the head
before the backbone, which makes the tied matrix ``lm_head.decoder.weight``."""

from __future__ import annotations

from . import Family, bert, roberta

DEFAULTS = {**roberta.DEFAULTS, "vocab_size": 30522}

FAMILY = Family(
    model_type="xlm-roberta",
    defaults=DEFAULTS,
    backbone="XLMRobertaModel",
    check=bert.check,
    classes=roberta.classes("XLMRoberta", head_first=True),
)
