"""LLaVA (Liu et al. 2023): a vision tower (any vision family: CLIP's, SigLIP's), a two-layer
MLP projector from the vision width (times the feature layers it concatenates) to the text
width, and a language model (any decoder family) with its LM head, untied unless the config
(or its text config) ties it."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor, Tie
from . import Family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .towers import LLAVA_RENAMES, fixed_image_tokens, sub_family, text_cache, tower, tower_cfg

DEFAULTS = {
    "text_config": None,
    "vision_config": None,
    "vision_feature_layer": -2,
    "multimodal_projector_bias": True,
    "tie_word_embeddings": False,
}
TEXT, VISION = "llama", "clip_vision_model"
# LlavaConfig's vision tower when the file has none (its SubConfigSpec init_kwargs: LLaVA-1.5's CLIP-L/14-336)
VISION_ABSENT = {
    "intermediate_size": 4096,
    "hidden_size": 1024,
    "patch_size": 14,
    "image_size": 336,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "vocab_size": 32000,
    "projection_dim": 768,
}


def feature_layers(c: Cfg) -> int:
    """One vision layer's features, or a list of layers concatenated."""
    value = c.get("vision_feature_layer")
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return 1
    raise c.error("vision_feature_layer", f"expected a layer index or a list of them, got {value!r}")


def projector(c: Cfg) -> Block:
    v, t = tower_cfg(c, "vision_config", VISION, VISION_ABSENT), tower_cfg(c, "text_config", TEXT)
    h_t, bias = t.int("hidden_size"), c.bool("multimodal_projector_bias")
    return block(
        "multi_modal_projector",
        linear("linear_1", v.int("hidden_size") * feature_layers(c), h_t, bias),
        linear("linear_2", h_t, h_t, bias),
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    return (
        tower(c, "vision_config", VISION, "vision_tower", "vision_encoder", VISION_ABSENT),
        projector(c),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
    )


def tied(c: Cfg) -> bool:
    """The composite's own tie_word_embeddings, which takes the text config's when that is true."""
    return c.bool("tie_word_embeddings") or tower_cfg(c, "text_config", TEXT).bool("tie_word_embeddings")


def causal_lm(c: Cfg) -> Block:
    body = Block("model", model(c), label="backbone")
    t = tower_cfg(c, "text_config", TEXT)
    shape = (t.int("vocab_size"), t.int("hidden_size"))
    weight = Tie("weight", shape, "model.language_model.embed_tokens.weight") if tied(c) else Tensor("weight", shape)
    return Block("", (body, Block("lm_head", (weight,), kind="output_head", tower="language_model")))


def llava_tokens(c: Cfg, v: Cfg) -> int:
    """LlavaProcessor: (side / patch)² patch tokens, the class token dropped unless the strategy is ``full``."""
    side = int(v.int("image_size")) // int(v.int("patch_size"))
    return side * side + (c.get("vision_feature_select_strategy", "default") == "full")


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


FIXED = fixed_image_tokens(VISION, llava_tokens, "LlavaProcessor", VISION_ABSENT, cls_token=True)


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """LlavaProcessor's fixed count, or with a Pixtral tower (Pixtral 12B) PixtralProcessor's,
    which follows the image's size."""
    if sub_family(c, "vision_config", VISION).model_type != "pixtral":
        return FIXED(c, width, height)
    from .pixtral import image_tokens as pixtral_tokens

    return pixtral_tokens(tower_cfg(c, "vision_config", VISION, VISION_ABSENT), 1, width, height, "PixtralProcessor")


FAMILY = Family(
    model_type="llava",
    defaults=DEFAULTS,
    backbone="LlavaModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={"LlavaModel": backbone, "LlavaForConditionalGeneration": causal_lm},
    renames=LLAVA_RENAMES,
    image_tokens=image_tokens,
)
