"""Gemma 4 (Gemma Team 2026), image, audio and text: the language model (``gemma4_text``), and
where the config has them the image encoder (``gemma4_vision``) and the audio encoder
(``gemma4_audio``), each with an embedder that projects its features to the text width (a
bias-free linear layer after a weightless RMSNorm: the projectors). The LM head is tied to the
token embedding unless the config unties it."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, Node
from . import Family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .gemma4_audio import channels
from .towers import conditional_generation, text_cache, tower, tower_cfg, untied_text_notes

DEFAULTS = {"text_config": None, "vision_config": None, "audio_config": None, "tie_word_embeddings": True}
TEXT, VISION, AUDIO = "gemma4_text", "gemma4_vision", "gemma4_audio"
SOFT_TOKENS = 280  # Gemma4ImageProcessor's max_soft_tokens (the published processors' too)
POOL = 3  # Gemma4VisionConfig's pooling_kernel_size when the file has none
# Gemma4AudioFeatureExtractor's defaults: 16 kHz, 20-ms frames every 10 ms (the frame plus one
# sample unfolded), 128 mel bins, clips cut at 480,000 samples (30 s); Gemma4Processor caps a
# clip at 750 soft tokens (audio_seq_length).
RATE, FRAME, HOP, MELS, MAX_SAMPLES, MAX_AUDIO_TOKENS = 16_000, 320, 160, 128, 480_000, 750


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


def resized(height: int, width: int, patch: int, most: int, pool: int) -> tuple[int, int]:
    """Gemma4ImageProcessor's ``get_aspect_ratio_preserving_size``: the largest size in whole
    pool × patch squares within ``most`` patches, keeping the aspect ratio; a side that comes to
    nothing is one square, the other its whole multiple of the ratio, capped."""
    factor = math.sqrt(most * patch**2 / (height * width))
    side = pool * patch
    h, w = math.floor(factor * height / side) * side, math.floor(factor * width / side) * side
    longest = most // pool**2 * side
    if h == 0:
        h, w = side, min(math.floor(width / height) * side, longest)
    elif w == 0:
        w, h = side, min(math.floor(height / width) * side, longest)
    if h * w > most * patch**2:
        raise ParamcountError(f"Gemma4ImageProcessor refuses a {width}x{height} image", field="--image-size")
    return h, w


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """Gemma4Processor: the image resized within SOFT_TOKENS × pool² patches, each pool × pool
    block of patches one soft token, between the begin- and end-of-image tokens; the encoder
    runs over all SOFT_TOKENS × pool² patch slots (the unused ones padding)."""
    from .media import ImageTokens

    if c.raw.get("vision_config") is None:
        raise ParamcountError("this Gemma 4 config has no vision_config: it reads no images", field="--images")
    v = tower_cfg(c, "vision_config", VISION)
    patch, pool = int(v.int("patch_size")), int(v.int("pooling_kernel_size", default=POOL))
    h, w = resized(height, width, patch, SOFT_TOKENS * pool * pool, pool)
    soft = (h // patch) * (w // patch) // pool**2
    said = (
        f"Gemma4Processor at its defaults (max_soft_tokens {SOFT_TOKENS}): resized to {w}x{h}, {patch}-px "
        f"patches pooled {pool}×{pool} into {soft} soft tokens, with the begin and end markers: {soft + 2} tokens"
    )
    slots = SOFT_TOKENS * pool * pool
    return ImageTokens(soft + 2, slots, int(v.int("hidden_size")), int(v.int("intermediate_size")), said)


def audio_tokens(c: Cfg, seconds: Any) -> Any:
    """Gemma4Processor: the clip's mel frames (those whose whole 20-ms window is audio), halved
    twice by the encoder's stride-2 convolutions, one soft token each, between the begin- and
    end-of-audio tokens. The encoder's widest front-end tensor is the first convolution's output."""
    from .media import AudioTokens

    if c.raw.get("audio_config") is None:
        raise ParamcountError("this Gemma 4 config has no audio_config: it hears no audio", field="--audio")
    a = tower_cfg(c, "audio_config", AUDIO)
    samples = min(round(seconds * RATE), MAX_SAMPLES)
    frames = max((samples + FRAME // 2 - (FRAME + 1)) // HOP + 1, 0)
    halved = -(-frames // 2)
    soft = min(-(-halved // 2), MAX_AUDIO_TOKENS)
    cut = f"cut to {MAX_SAMPLES // RATE} s, " if round(seconds * RATE) > MAX_SAMPLES else ""
    said = (
        f"Gemma4AudioFeatureExtractor and Gemma4Processor at their defaults ({RATE:,} Hz, 10-ms frames, clips "
        f"{cut}at most {MAX_AUDIO_TOKENS} soft tokens): {frames:,} mel frames, 4× subsampled to {soft} soft "
        f"tokens, with the begin and end markers: {soft + 2} tokens"
    )
    h, c0 = int(a.int("hidden_size")), channels(a)[0]
    return AudioTokens(soft + 2, soft, h, 4 * h, halved * c0 * (MELS // 2), said)


FAMILY = Family(
    notes=untied_text_notes(TEXT),
    model_type="gemma4",
    defaults=DEFAULTS,
    backbone="Gemma4Model",
    cache_layout=text_cache("text_config", TEXT),
    classes={
        "Gemma4Model": backbone,
        "Gemma4ForConditionalGeneration": conditional_generation(model, "text_config", TEXT),
    },
    image_tokens=image_tokens,
    audio_tokens=audio_tokens,
)
