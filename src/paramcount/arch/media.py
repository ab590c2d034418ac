"""What an image or a clip becomes in a model's context, as its processor counts it: the types a
family's ``image_tokens`` and ``audio_tokens`` rules return, and the resizing rule they share.
The planners add these tokens to the context and the encoders' working set
(:mod:`paramcount.memory.context.images`, :mod:`paramcount.memory.context.audio`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError


@dataclass(frozen=True)
class ImageTokens:
    """One image: ``tokens`` in the language model's context, ``patches`` the vision encoder
    runs over (of ``width`` hidden units, ``inner`` in its MLP), ``said`` the rule and its
    assumptions."""

    tokens: int
    patches: int
    width: int
    inner: int
    said: str
    several: ImageTokens | None = None  # each image of a prompt holding more than one, where that differs
    cross: tuple[Any, ...] = ()  # cross-attention LayerKinds one image fills, its states as their source


@dataclass(frozen=True)
class AudioTokens:
    """One clip: ``tokens`` in the language model's context, ``frames`` the encoder's layers run
    over (of ``width`` hidden units, ``inner`` in their MLP), ``front`` elements in the widest
    tensor before them (a subsampling convolution's output), ``said`` the rule and its assumptions."""

    tokens: int
    frames: int
    width: int
    inner: int
    front: int
    said: str


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' Qwen2-VL ``smart_resize``: both sides multiples of ``factor``, the area within
    [min_pixels, max_pixels], the aspect ratio kept as near as may be."""
    if max(height, width) / min(height, width) > 200:
        raise ParamcountError(
            f"an aspect ratio past 200 ({width}x{height}): the processor refuses it", field="--image-size"
        )
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar
