"""PaliGemma (Beyer et al. 2024): a SigLIP vision tower (So400m/14, built without its pooling
head), one biased Linear from the vision width to ``projection_dim``, and a Gemma language
model (Gemma 2 in PaliGemma 2) with an LM head tied to its token embedding by default."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, linear
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
    "projection_dim": 2048,
    "tie_word_embeddings": True,
}
TEXT, VISION = "gemma", "siglip_vision_model"
# PaliGemmaConfig's towers when the file has none (its SubConfigSpec init_kwargs)
VISION_ABSENT = {
    "intermediate_size": 4096,
    "hidden_size": 1152,
    "patch_size": 14,
    "image_size": 224,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "vocab_size": 257152,
    "vision_use_head": False,
}
TEXT_ABSENT = {
    "hidden_size": 2048,
    "num_hidden_layers": 18,
    "intermediate_size": 16384,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "is_encoder_decoder": False,
    "vocab_size": 257152,
}


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v = tower_cfg(c, "vision_config", VISION, VISION_ABSENT)
    # the config sets vision_config.projection_dim to its own projection_dim, which the projector reads
    projector = block(
        "multi_modal_projector",
        linear("linear", v.int("hidden_size"), c.int("projection_dim")),
        kind="feed_forward",
        tower="projector",
    )
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder", VISION_ABSENT),
        projector,
        tower(c, "text_config", TEXT, "language_model", "language_model", TEXT_ABSENT),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


FAMILY = Family(
    notes=untied_text_notes(TEXT, absent=TEXT_ABSENT),
    model_type="paligemma",
    defaults=DEFAULTS,
    backbone="PaliGemmaModel",
    cache_layout=text_cache("text_config", TEXT, TEXT_ABSENT),
    classes={
        "PaliGemmaModel": backbone,
        "PaliGemmaForConditionalGeneration": conditional_generation(model, "text_config", TEXT, absent=TEXT_ABSENT),
    },
    renames=LLAVA_RENAMES,
    image_tokens=fixed_image_tokens(
        VISION,
        lambda c, v: (int(v.int("image_size")) // int(v.int("patch_size"))) ** 2,
        "PaliGemmaProcessor",
        VISION_ABSENT,
    ),
)
