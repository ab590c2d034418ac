"""Llama 3.2 Vision (Meta 2024): the image encoder (``mllama_vision_model``), a biased linear
projector from ``vision_output_dim`` (the final and intermediate layers' features side by side)
to the text width, and the language model with cross-attention layers (``mllama_text_model``);
the LM head has the text vocabulary's rows, never tied (the embedding has eight more)."""

from __future__ import annotations

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


FAMILY = Family(
    model_type="mllama",
    defaults=DEFAULTS,
    backbone="MllamaModel",
    cache_layout=text_cache("text_config", TEXT),
    classes={"MllamaModel": backbone, "MllamaForConditionalGeneration": generation},
)
