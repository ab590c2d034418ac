"""Gemma 4 (Gemma Team 2026), image, audio and text: the language model (``gemma4_text``), and
where the config has them the image encoder (``gemma4_vision``) and the audio encoder
(``gemma4_audio``), each with an embedder that projects its features to the text width (a
bias-free linear layer after a weightless RMSNorm: the projectors). The LM head is tied to the
token embedding unless the config unties it."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .towers import conditional_generation, text_cache, tower, tower_cfg

DEFAULTS = {"text_config": None, "vision_config": None, "audio_config": None, "tie_word_embeddings": True}
TEXT, VISION, AUDIO = "gemma4_text", "gemma4_vision", "gemma4_audio"


def embedder(name: str, width: int, text: Cfg) -> Block:
    return block(
        name,
        linear("embedding_projection", width, text.int("hidden_size"), bias=False),
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    t = tower_cfg(c, "text_config", TEXT)
    parts: list[Node] = []
    if c.raw.get("vision_config") is not None:
        v = tower_cfg(c, "vision_config", VISION)
        parts.append(tower(c, "vision_config", VISION, "vision_tower", "vision_encoder"))
    parts.append(tower(c, "text_config", TEXT, "language_model", "language_model"))
    if c.raw.get("audio_config") is not None:
        a = tower_cfg(c, "audio_config", AUDIO)
        parts.append(tower(c, "audio_config", AUDIO, "audio_tower", "audio_encoder"))
    if c.raw.get("vision_config") is not None:
        parts.append(embedder("embed_vision", v.int("hidden_size"), t))
    if c.raw.get("audio_config") is not None:
        parts.append(embedder("embed_audio", a.int("output_proj_dims"), t))
    return tuple(parts)


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


FAMILY = Family(
    model_type="gemma4",
    defaults=DEFAULTS,
    backbone="Gemma4Model",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "Gemma4Model": backbone,
        "Gemma4ForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
    },
)
