"""Llama 3.2 Vision (Meta 2024): the image encoder (``mllama_vision_model``), a biased linear
projector from ``vision_output_dim`` (the final and intermediate layers' features side by side)
to the text width, and the language model with cross-attention layers (``mllama_text_model``);
the LM head has the text vocabulary's rows, never tied (the embedding has eight more).
``MllamaForCausalLM`` of an mllama config is the language model alone, as transformers builds it."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import linear
from .config import Cfg, per_cfg
from .towers import text_cache, tower, tower_cfg

DEFAULTS = {"text_config": None, "vision_config": None}
TEXT, VISION = "mllama_text_model", "mllama_vision_model"


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    out = v.int("vision_output_dim")
    projector = linear("multi_modal_projector", out, t.int("hidden_size"))
    return (
        tower(c, "vision_config", VISION, "vision_model", "vision_encoder"),
        tower(c, "text_config", TEXT, "language_model", "language_model"),
        Block(projector.name, projector.children, kind="feed_forward", tower="projector"),
    )


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def generation(c: Cfg) -> Block:
    t = tower_cfg(c, "text_config", TEXT)
    head = Block(
        "lm_head",
        (Tensor("weight", (t.int("vocab_size"), t.int("hidden_size"))),),
        kind="output_head",
        tower="language_model",
    )
    return Block("", (Block("model", model(c), label="backbone"), head))


def causal_lm(c: Cfg) -> Block:
    """``MllamaForCausalLM``: transformers builds it from the text config alone
    (``config.get_text_config()``), so it is the language model's ``MllamaForCausalLM``."""
    from . import mllama_text_model

    return mllama_text_model.FAMILY.classes["MllamaForCausalLM"](tower_cfg(c, "text_config", TEXT))


def notes(c: Cfg, cls: str) -> list[str]:
    if cls != "MllamaForCausalLM":
        return []
    return ["MllamaForCausalLM is the language model alone: the vision tower and projector are not counted"]


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """MllamaProcessor: one <|image|> token in the context whatever the size; the image is cut
    into up to ``max_num_tiles`` tiles of the tower's ``image_size`` and padded with empty ones
    to that many, and the cross-attention layers cache the states of them all, (size / patch)²
    + 1 (the class token) a tile. The encoder pads each tile's patches to a multiple of 8."""
    from .media import ImageTokens
    from .mllama_text_model import cross_kinds
    from .mllama_vision_model import patches

    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    tiles, per_tile = int(v.int("max_num_tiles", high=1 << 8)), patches(v)
    cross = cross_kinds(t, tiles * per_tile)
    layers = sum(k.layers for k in cross)
    said = (
        f"MllamaProcessor: one <|image|> token; the image cut into at most {tiles} tiles of "
        f"{int(v.int('image_size'))} px and padded to {tiles}, whose {tiles} × {per_tile:,} vision states the "
        f"{layers} cross-attention layers cache"
    )
    padded = per_tile + -per_tile % 8
    return ImageTokens(1, tiles * padded, int(v.int("hidden_size")), int(v.int("intermediate_size")), said, cross=cross)


FAMILY = Family(
    model_type="mllama",
    defaults=DEFAULTS,
    backbone="MllamaModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={"MllamaModel": backbone, "MllamaForConditionalGeneration": generation, "MllamaForCausalLM": causal_lm},
    notes=notes,
    backbones={"MllamaForCausalLM": "MllamaTextModel"},
    image_tokens=image_tokens,
)
