"""LLaVA-OneVision (Li et al. 2024): LLaVA with a SigLIP tower (no pooling head; the last
layer's features by default), the two-layer projector, a learned ``image_newline`` of the text
width that marks each row of image tiles, and Qwen2 as the language model."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .llava import feature_layers
from .towers import LLAVA_RENAMES, conditional_generation, text_cache, tower, tower_cfg

DEFAULTS = {
    "text_config": None,
    "vision_config": None,
    "vision_feature_layer": -1,
    "multimodal_projector_bias": True,
    "tie_word_embeddings": False,
}
TEXT, VISION = "qwen2", "siglip_vision_model"
# LlavaOnevisionConfig's vision tower when the file has none (its SubConfigSpec init_kwargs)
VISION_ABSENT = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "patch_size": 14,
    "image_size": 384,
    "num_hidden_layers": 26,
    "num_attention_heads": 16,
    "vision_use_head": False,
}


def projector(c: Cfg) -> tuple[Node, ...]:
    """Linear(vision width × feature layers → text width), GELU, Linear(text → text), and the
    row marker ``image_newline`` (text width)."""
    v, t = tower_cfg(c, "vision_config", VISION, VISION_ABSENT), tower_cfg(c, "text_config", TEXT)
    h_t, bias = t.int("hidden_size"), c.bool("multimodal_projector_bias")
    mlp = block(
        "multi_modal_projector",
        linear("linear_1", v.int("hidden_size") * feature_layers(c), h_t, bias),
        linear("linear_2", h_t, h_t, bias),
        kind="feed_forward",
        tower="projector",
    )
    return mlp, Block("image_newline", (Tensor("", (h_t,)),), kind="other", tower="projector")


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder", VISION_ABSENT),
        *projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


FAMILY = Family(
    model_type="llava_onevision",
    defaults=DEFAULTS,
    backbone="LlavaOnevisionModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "LlavaOnevisionModel": backbone,
        "LlavaOnevisionForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
    },
    renames=(*LLAVA_RENAMES, (r"^image_newline$", "model.image_newline")),
)
