"""Every boolean switch of every family, flipped from its default, against transformers.

A switch (``attention_bias``, ``qk_layernorm``, ``use_qkv_bias``, ``tie_word_embeddings``,
``vision_use_head`` …) turns tensors on or off, and one a family ignores leaves a count that
looks exact and is not. Each family's default config is counted with one switch flipped, for
its headed class (or its backbone where it has none), tensor by tensor against the meta-device
model; where paramcount refuses the flip, transformers must refuse it too. Depth is cut to two
layers where the family reads ``num_hidden_layers`` and transformers accepts it (what a switch
changes is per layer), to keep the sweep quick.
"""

from __future__ import annotations

import pytest

from paramcount import ParamcountError
from paramcount.arch import family, supported
from paramcount.frontends.config import from_config

from .oracle import differences, expect_class, instantiate, ours, transformers, truth

# Counted as the checkpoint stores it, not as transformers builds it from the config (the note
# says so): T5-line heads with tie_word_embeddings false (transformers 5 forces the tie; v1.1,
# Flan-T5, mT5 and UMT5 checkpoints store their own lm_head, which from_pretrained keeps).
CHECKPOINT_HEAD = {"t5", "mt5", "umt5"}
SWITCHES = [(mt, name) for mt in supported() for name, v in family(mt).defaults.items() if isinstance(v, bool)]


def shallow(raw: dict) -> dict:
    """``raw`` with two layers where that is a valid config of the family, else ``raw``."""
    fam = family(raw["model_type"])
    depth = fam.defaults.get("num_hidden_layers")
    if not isinstance(depth, int) or depth <= 2:
        return raw
    cut = {**raw, "num_hidden_layers": 2}
    try:
        transformers.AutoConfig.for_model(fam.model_type, **{k: v for k, v in cut.items() if k != "model_type"})
    except Exception:  # a per-layer default tied to the depth: keep the family's own
        return raw
    return cut


def headed(model_type: str) -> str:
    fam = family(model_type)
    return next((c for c in fam.classes if c != fam.backbone), fam.backbone)


@pytest.mark.parametrize(("model_type", "name"), SWITCHES, ids=[f"{mt}-{n}" for mt, n in SWITCHES])
def test_switch_flipped(model_type, name):
    default = family(model_type).defaults[name]
    raw = shallow({"model_type": model_type, name: not default})
    if model_type in CHECKPOINT_HEAD and name == "tie_word_embeddings" and not raw[name]:
        return untied_as_checkpoint(raw, headed(model_type))
    try:
        expect_class(raw, headed(model_type))
    except ParamcountError as refused:  # a switch that needs another: transformers refuses it too
        with pytest.raises(Exception):  # noqa: B017  (any error transformers raises)
            instantiate(raw, headed(model_type), family(model_type).model_type)
        assert refused.field, refused


def untied_as_checkpoint(raw: dict, cls: str) -> None:
    """The one deliberate difference: its own lm_head where transformers ties it, and a note."""
    model = from_config(raw, "test", model_class=cls)
    real = truth(raw, cls, model.model_type)
    head = tuple(int(d) for d in next(t.shape for t in model.tensors() if t.name == "lm_head.weight"))
    assert real.ties.pop("lm_head.weight") == "shared.weight"
    real.shapes["lm_head.weight"] = head
    real.total += head[0] * head[1]
    assert not differences(ours(model), real)
    assert any("lm_head.weight counted as its own tensor" in n for n in model.notes)
