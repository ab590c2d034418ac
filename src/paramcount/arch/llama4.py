"""Llama 4 (Meta 2025), natively multimodal: the image encoder (``llama4_vision_model``), a
bias-free projector from ``vision_output_dim`` to the text width, and Llama 4's language model
with its LM head (``Llama4ForCausalLM`` of ``llama4_text``: routed and shared experts, chunked
and NoPE layers), tied only where the text config ties it. transformers builds this one class."""

from __future__ import annotations

from ..ir import Block, Node, Tensor, Tie
from . import Family
from .blocks import linear
from .config import Cfg, per_cfg
from .towers import text_cache, tower, tower_cfg

DEFAULTS = {"text_config": None, "vision_config": None}
TEXT, VISION = "llama4_text", "llama4_vision_model"


@per_cfg
def parts(c: Cfg) -> tuple[Node, ...]:
    v, t = tower_cfg(c, "vision_config", VISION), tower_cfg(c, "text_config", TEXT)
    h = t.int("hidden_size")
    language = tower(c, "text_config", TEXT, "model", "language_model")
    shape = (t.int("vocab_size"), h)
    tied = t.bool("tie_word_embeddings")
    weight = Tie("weight", shape, "language_model.model.embed_tokens.weight") if tied else Tensor("weight", shape)
    head = Block("lm_head", (weight,), kind="output_head")
    projector = linear("linear_1", v.int("vision_output_dim"), h, bias=False)
    return (
        tower(c, "vision_config", VISION, "vision_model", "vision_encoder"),
        Block("multi_modal_projector", (projector,), kind="feed_forward", tower="projector"),
        Block("language_model", (language, head), tower="language_model"),
    )


def model(c: Cfg) -> Block:
    return Block("", parts(c), label="backbone")


FAMILY = Family(
    model_type="llama4",
    defaults=DEFAULTS,
    backbone="Llama4ForConditionalGeneration",
    cache_layout=text_cache("text_config", TEXT),
    classes={"Llama4ForConditionalGeneration": model},
)
