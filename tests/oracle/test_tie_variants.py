"""Where a composite's head is tied: its own ``tie_word_embeddings`` and its text config's, in
every combination, against transformers.

Composite configs decide the tie in different places (LLaVA and LLaVA-OneVision take the text
config's tie when their own is false, as the ``-hf`` releases saved it there; others read only
their own field), and a count that gets it wrong is off by a whole embedding while looking
exact. Each image+text family with a language-model head is counted here with the two fields
set to true, false or left out, every class with a head, against the meta-device model; where
the class default ties a head the text config unties, the count says so in a note.
"""

from __future__ import annotations

import itertools

import pytest

from paramcount.arch import family, supported

from .oracle import expect_class, transformers

COMPOSITES = [
    mt
    for mt in supported()
    if "text_config" in (getattr(transformers.CONFIG_MAPPING[family(mt).model_type], "sub_configs", None) or {})
]
CHOICES = (None, True, False)  # None: the field left out


def variant(model_type: str, own: bool | None, text: bool | None) -> dict:
    raw: dict = {"model_type": model_type}
    if own is not None:
        raw["tie_word_embeddings"] = own
    if text is not None:
        raw["text_config"] = {"tie_word_embeddings": text}
    return raw


@pytest.mark.parametrize("model_type", COMPOSITES)
@pytest.mark.parametrize(("own", "text"), [p for p in itertools.product(CHOICES, CHOICES) if p != (None, None)])
def test_head_tie_as_transformers_decides(model_type, own, text):
    raw = variant(model_type, own, text)
    fam = family(model_type)
    for cls in fam.classes:
        if cls != fam.backbone:  # the backbone has no head to tie
            model = expect_class(raw, cls)
            # tied by the class default against the text config's false: said, with what a
            # transformers-4 checkpoint of the file adds
            noted = any("transformers 4 saved from this file" in n for n in model.notes)
            assert noted == (
                own is None
                and text is False
                and fam.defaults.get("tie_word_embeddings") is True
                and cls.endswith("ForConditionalGeneration")
            )
