"""Gemma 3 with vision (Gemma Team 2025): a SigLIP vision tower, a projector that average-pools
the patch grid down to ``mm_tokens_per_image`` tokens (no parameters, so that field changes
no count), RMS-normalises them
(a Gemma RMSNorm of the vision width) and multiplies by one bias-free matrix
``mm_input_projection_weight`` (vision width × text width), and the Gemma 3 text model
(``gemma3_text``'s tree) with an LM head tied to its token embedding by default."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import WithHead, block, linear, norm, num_labels
from .config import Cfg, per_cfg
from .towers import (
    LLAVA_RENAMES,
    conditional_generation,
    fixed_image_tokens,
    text_cache,
    tower,
    tower_cfg,
    untied_text_notes,
)

DEFAULTS = {
    "text_config": None,
    "vision_config": None,
    "tie_word_embeddings": True,
    "mm_tokens_per_image": 256,
}
TEXT, VISION = "gemma3_text", "siglip_vision_model"
# Gemma3Processor: each image is <start_of_image>, mm_tokens_per_image soft tokens, <end_of_image>
IMAGE_RULE = "Gemma3Processor (pan-and-scan off; <start_of_image> and <end_of_image> around each image are text)"


def projector(c: Cfg) -> Block:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    h_v = v.int("hidden_size")
    return block(
        "multi_modal_projector",
        Tensor("mm_input_projection_weight", (h_v, t.int("hidden_size"))),
        norm("mm_soft_emb_norm", h_v, bias=False),
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder"),
        projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def _score(c: Cfg, body: Block) -> list[Node]:
    """GenericForSequenceClassification: a bias-free score from the text width to the labels."""
    t = tower_cfg(c, "text_config", TEXT)
    return [linear("score", t.int("hidden_size"), num_labels(c), bias=False, kind="output_head")]


FAMILY = Family(
    notes=untied_text_notes(TEXT),
    model_type="gemma3",
    defaults=DEFAULTS,
    backbone="Gemma3Model",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "Gemma3Model": backbone,
        "Gemma3ForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
        "Gemma3ForSequenceClassification": WithHead(model, "model", _score),
    },
    renames=LLAVA_RENAMES,
    image_tokens=fixed_image_tokens(VISION, lambda c, v: int(c.int("mm_tokens_per_image")), IMAGE_RULE),
)
