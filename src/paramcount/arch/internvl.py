"""InternVL 3 (transformers' ``-hf`` checkpoints): an InternViT vision tower, a projector
(a LayerNorm over the pixel-shuffled features, ``hidden · (1/downsample_ratio)²`` wide, then a
biased two-layer GELU MLP to the text width) and a language model (Qwen2 by default) with an LM
head tied by the class default."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, linear, norm
from .config import Cfg, per_cfg
from .towers import LLAVA_RENAMES, conditional_generation, text_cache, tower, tower_cfg

DEFAULTS = {"text_config": None, "vision_config": None, "downsample_ratio": 0.5, "tie_word_embeddings": True}
TEXT, VISION = "qwen2", "internvl_vision"


def shuffle(c: Cfg) -> int:
    """int(1 / downsample_ratio): how many patches a side fold into one token."""
    ratio = c.number("downsample_ratio")
    if not 0 < ratio <= 1:
        raise c.error("downsample_ratio", f"expected a ratio in (0, 1], got {ratio!r}")
    return int(1 / ratio)


def projector(c: Cfg) -> Block:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    wide, h_t = v.int("hidden_size") * shuffle(c) ** 2, t.int("hidden_size")
    return block(
        "multi_modal_projector",
        norm("layer_norm", wide),
        linear("linear_1", wide, h_t),
        linear("linear_2", h_t, h_t),
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


FAMILY = Family(
    model_type="internvl",
    defaults=DEFAULTS,
    backbone="InternVLModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "InternVLModel": backbone,
        "InternVLForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
    },
    renames=LLAVA_RENAMES,
)
