"""mBART (Liu et al. 2020): BART pre-norm, so each stack ends in its own ``layer_norm`` after
the layers (besides ``layernorm_embedding``). Everything else, class set included, is BART's;
the config leaves ``num_labels`` at the PreTrainedConfig default of 2 (BART's sets 3)."""

from __future__ import annotations

from . import Family, bart

DEFAULTS = {k: v for k, v in bart.DEFAULTS.items() if k != "num_labels"}

FAMILY = Family(
    model_type="mbart",
    defaults=DEFAULTS,
    aliases=bart.ALIASES,
    backbone="MBartModel",
    check=bart.check,
    classes=bart.classes(bart.Variant(prefix="MBart", final_norm=True)),
)
