"""Images in the context: how many tokens each becomes, as the model's processor counts them,
and the vision encoder's own working set.

A family that reads images states its rule as ``Family.image_tokens(cfg, width, height) ->
ImageTokens``: the tokens one image adds to the language model's context (image tokens and the
markers around them), the patches its vision encoder runs over, that encoder's widths, and what
was assumed (the processor's defaults). A memory plan adds ``count × tokens`` to the context of
every sequence, so the KV cache and the activations grow with them, and adds the vision
encoder's activations as an estimate. Two processors need more than a count per image:
LLaVA-OneVision tiles an image only when it is alone in its prompt (``several`` is what each
of several becomes), and Llama 3.2 Vision puts one token in the context while its
cross-attention layers cache the image's vision states (``cross``: those layers, each image's
states as their ``source``), which the plan adds to the KV cache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ...arch.media import ImageTokens
from ...errors import ParamcountError
from ..core.terms import Term

MAX_IMAGES = 1 << 12  # 4,096 images in one prompt
MAX_SIDE = 1 << 15  # 32,768 px a side
_SIZE = re.compile(r"\s*(\d{1,6})\s*[x×]\s*(\d{1,6})\s*")


@dataclass(frozen=True)
class Images:
    count: int
    size: tuple[int, int]  # width, height in pixels
    each: ImageTokens

    @property
    def tokens(self) -> int:
        return self.count * self.each.tokens

    @property
    def states(self) -> int:
        """Vision states each cross-attention layer caches for all the images (0 without such layers)."""
        return self.count * max((k.source for k in self.each.cross), default=0)

    def layout(self, layout: Any) -> Any:
        """The language model's cache layout with the cross-attention layers the images fill
        (their keys and values over every image's states), else the layout as it is."""
        if not self.states:
            return layout
        kinds = tuple(replace(k, source=self.states) for k in self.each.cross)
        return replace(layout, kinds=(*layout.kinds, *kinds), source="vision states")

    def activations(self, dtype_bytes: int, dtype: str) -> Term:
        """The vision encoder's widest layer over every image's patches at once (an estimate, as
        the language model's activations are)."""
        e, per = self.each, 4 * self.each.width + max(self.each.width, self.each.inner)
        size = self.count * e.patches * per * dtype_bytes
        formula = (
            f"images · patches · (4h_v + max(h_v, I_v)) · b = {self.count} · {e.patches:,} · (4·{e.width} + "
            f"max({e.width}, {e.inner})) · {dtype_bytes} = {size:,} B"
        )
        assumption = f"one vision layer's tensors alive at a time, {dtype}; all images in one pass (--images)"
        label = f"vision encoder activations ({self.count} image{'s' * (self.count != 1)})"
        return Term("vision_activations", label, size, formula, assumption, True, "the language model's estimate")


def parse_size(text: Any) -> tuple[int, int]:
    """``1024x1024`` (width × height in pixels)."""
    if isinstance(text, tuple) and len(text) == 2:
        width, height = text
    else:
        m = _SIZE.fullmatch(str(text)) if isinstance(text, str) else None
        if m is None:
            raise ParamcountError(
                f"expected WIDTHxHEIGHT in pixels like 1024x768, got {str(text)[:40]!r}", field="--image-size"
            )
        width, height = int(m.group(1)), int(m.group(2))
    for side in (width, height):
        if isinstance(side, bool) or not isinstance(side, int) or not 1 <= side <= MAX_SIDE:
            raise ParamcountError(f"image sides must be 1..{MAX_SIDE:,} px, got {width}x{height}", field="--image-size")
    return width, height


def images(model: Any, count: int | None, size: Any) -> Images | None:
    """The images of a plan, or None without ``--images``; a family with no rule for its
    processor, or a model read without a config, is a one-line error."""
    if count is None:
        if size is not None:
            raise ParamcountError("give --images N with it", field="--image-size")
        return None
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_IMAGES:
        raise ParamcountError(f"expected 0..{MAX_IMAGES:,} images, got {count!r}", field="--images")
    if size is None:
        raise ParamcountError("give the images' size too, like --image-size 1024x768", field="--images")
    width, height = parse_size(size)
    from ...arch import family
    from .kv_layout import cfg_of

    rule = family(model.model_type, model.source).image_tokens if model.counted_by == "paramcount" else None
    if rule is None:
        raise ParamcountError(
            f"no image-token rule for {model.model_type!r} here (rules: {', '.join(RULES)})", field="--images"
        )
    one = rule(cfg_of(model), width, height)
    return Images(count, (width, height), one.several if count > 1 and one.several else one)


RULES = ("llava", "paligemma", "gemma3", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")
RULES += ("step3p7", "llava_onevision", "mllama", "idefics3", "smolvlm", "internvl", "mistral3", "llama4", "gemma4")


__all__ = ["RULES", "Images", "images", "parse_size"]
