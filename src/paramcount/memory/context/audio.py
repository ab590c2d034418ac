"""Audio in the context: how many tokens a clip of so many seconds becomes, as the model's
processor counts them, and the audio encoder's own working set.

A family with an audio encoder states its rule as ``Family.audio_tokens(cfg, seconds) ->
AudioTokens``: the tokens the clip adds to the language model's context (soft tokens and the
markers around them), the frames the encoder's layers run over, their widths, the elements of
its widest front-end tensor, and what was assumed (the feature extractor's defaults). A memory
plan adds the tokens to every sequence's context, as images are, and the encoder's activations
as an estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ...arch.media import AudioTokens
from ...errors import ParamcountError
from ..core.terms import Term

MAX_SECONDS = 24 * 3600  # a day of audio in one prompt
_SECONDS = re.compile(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*s?\s*")
# Speech models whose encoder input is fixed, so a clip's length changes nothing in the plan.
FIXED = {
    "whisper": "Whisper's feature extractor pads or cuts every clip to 30 s, so its encoder always sees 1,500 "
    "frames (the cross-attention cache's --encoder-length default): --audio changes nothing; longer audio "
    "is transcribed 30 s at a time",
}


@dataclass(frozen=True)
class Audio:
    seconds: Fraction
    each: AudioTokens

    @property
    def tokens(self) -> int:
        return self.each.tokens

    def activations(self, dtype_bytes: int, dtype: str) -> Term:
        """The audio encoder's widest tensors: its front end's or one layer's over every frame
        (an estimate, as the language model's activations are)."""
        e = self.each
        layer = e.frames * (4 * e.width + max(e.width, e.inner))
        size = max(e.front, layer) * dtype_bytes
        formula = (
            f"max(front, frames · (4h_a + max(h_a, I_a))) · b = max({e.front:,}, {e.frames:,} · (4·{e.width} + "
            f"max({e.width}, {e.inner}))) · {dtype_bytes} = {size:,} B"
        )
        assumption = f"one encoder layer's tensors alive at a time, {dtype}; the clip in one pass (--audio)"
        label = f"audio encoder activations ({seconds_text(self.seconds)} s)"
        return Term("audio_activations", label, size, formula, assumption, True, "the language model's estimate")


def parse_seconds(text: Any) -> Fraction:
    """``30``, ``12.5`` or ``90s``: seconds of audio, exactly (12.5 s is 200,000 samples at 16 kHz)."""
    if isinstance(text, bool):
        value = None
    elif isinstance(text, int | Fraction):
        value = Fraction(text)
    elif isinstance(text, float):
        value = Fraction(str(text))
    else:
        m = _SECONDS.fullmatch(str(text)) if isinstance(text, str) else None
        value = Fraction(m.group(1)) if m else None
    if value is None:
        raise ParamcountError(f"expected seconds of audio like 30 or 12.5, got {str(text)[:40]!r}", field="--audio")
    if not 0 < value <= MAX_SECONDS:
        raise ParamcountError(f"audio must be more than 0 and at most {MAX_SECONDS:,} s, got {text}", field="--audio")
    return value


def seconds_text(seconds: Fraction) -> str:
    return f"{float(seconds):g}"


def audio(model: Any, seconds: Any) -> Audio | None:
    """The clip of a plan, or None without ``--audio``; a model with no audio rule, or read
    without a config, is a one-line error."""
    if seconds is None:
        return None
    length = parse_seconds(seconds)
    from ...arch import family
    from .kv_layout import cfg_of

    if model.model_type in FIXED:
        raise ParamcountError(FIXED[model.model_type], field="--audio")
    rule = family(model.model_type, model.source).audio_tokens if model.counted_by == "paramcount" else None
    if rule is None:
        raise ParamcountError(
            f"no audio-token rule for {model.model_type!r} here (rules: {', '.join(RULES)})", field="--audio"
        )
    return Audio(length, rule(cfg_of(model), length))


RULES = ("gemma4",)

__all__ = ["RULES", "Audio", "audio", "parse_seconds"]
