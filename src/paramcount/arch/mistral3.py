"""Mistral 3 (Mistral Small 3.1): a Pixtral vision tower, a projector (an RMSNorm of the vision
width, a patch merger folding each ``spatial_merge_size``² block of patches through one
bias-free Linear, then LLaVA's two-layer MLP, bias-free by default), and a Mistral language
model with its LM head (tied by the class default, untied in the published checkpoints)."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node
from . import Family
from .blocks import block, linear, norm
from .config import Cfg, per_cfg
from .llava import feature_layers
from .pixtral import image_tokens as pixtral_tokens
from .towers import LLAVA_RENAMES, conditional_generation, text_cache, tower, tower_cfg, untied_text_notes

DEFAULTS = {
    "text_config": None,
    "vision_config": None,
    "vision_feature_layer": -1,
    "multimodal_projector_bias": False,
    "spatial_merge_size": 2,
    "tie_word_embeddings": True,
}
TEXT, VISION = "mistral", "pixtral"
# Mistral3Config's towers when the file has none (its SubConfigSpec init_kwargs: Mistral Small 3.1)
TEXT_ABSENT = {
    "head_dim": 128,
    "hidden_size": 5120,
    "intermediate_size": 32768,
    "max_position_embeddings": 131072,
    "num_attention_heads": 32,
    "num_hidden_layers": 40,
    "num_key_value_heads": 8,
    "sliding_window": None,
    "vocab_size": 131072,
}
VISION_ABSENT = {
    "intermediate_size": 4096,
    "hidden_size": 1024,
    "patch_size": 14,
    "image_size": 1540,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
}


def projector(c: Cfg) -> Block:
    v, t = tower_cfg(c, "vision_config", VISION, VISION_ABSENT), tower_cfg(c, "text_config", TEXT, TEXT_ABSENT)
    h_v, h_t, bias = v.int("hidden_size"), t.int("hidden_size"), c.bool("multimodal_projector_bias")
    merge = c.int("spatial_merge_size", high=1 << 8)
    merger = block("patch_merger", linear("merging_layer", h_v * merge * merge, h_v, bias=False))
    return block(
        "multi_modal_projector",
        norm("norm", h_v, bias=False),
        merger,
        linear("linear_1", h_v * feature_layers(c), h_t, bias),
        linear("linear_2", h_t, h_t, bias),
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder", VISION_ABSENT),
        projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model", TEXT_ABSENT),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """PixtralProcessor over the Pixtral tower's patches merged ``spatial_merge_size``² into one token."""
    v = tower_cfg(c, "vision_config", VISION, VISION_ABSENT)
    return pixtral_tokens(v, int(c.int("spatial_merge_size", high=1 << 8)), width, height, "PixtralProcessor")


FAMILY = Family(
    notes=untied_text_notes(TEXT, absent=TEXT_ABSENT),
    model_type="mistral3",
    defaults=DEFAULTS,
    backbone="Mistral3Model",
    cache_layout=text_cache("text_config", TEXT, TEXT_ABSENT),
    classes={
        "Mistral3Model": backbone,
        "Mistral3ForConditionalGeneration": conditional_generation(model, "text_config", TEXT, absent=TEXT_ABSENT),
    },
    renames=LLAVA_RENAMES,
    image_tokens=image_tokens,
)
