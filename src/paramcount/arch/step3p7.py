"""Step 3.7 Flash (StepFun 2026), image and text: the Perception Encoder vision model
(``step3p5_vision``), one bias-switchable linear projector (``projector_bias``) from its
downsampled 4h-wide features to the text width, and the Step 3.5 language model (``step3p5``).
The LM head is untied unless the composite's own ``tie_word_embeddings`` says otherwise (the text
config's is not read for it).

transformers builds each part from its own config class whatever a nested ``model_type`` says
(the released config.json calls the vision tower ``perception_encoder``), so the towers here
are those two families' always. Within the vision model the two stride-2 convolutions that
merge 4×4 patches are counted as the projector, as Qwen's patch merger is.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node
from ..records import replace
from . import Family, family
from .blocks import block, linear
from .config import Cfg, per_cfg
from .step3p5_vision import dim, downsampler, encoder, inner
from .towers import lm_head

DEFAULTS = {"text_config": None, "vision_config": None, "projector_bias": False}
TEXT, VISION = "step3p5", "step3p5_vision"
# Step3p7ImageProcessor's defaults: local tiles of 504 px, images above 3,024 px a side scaled
# down; the global view is resized to the vision tower's image_size (728 px, the processor's
# size too). Each tower output pixel is a 4×4 block of patches (two stride-2 convolutions).
TILE, MAX_SIDE, STRIDE = 504, 3024, 4


def part(c: Cfg, field: str, model_type: str) -> Cfg:
    """The nested config through its own family (the one transformers builds), checked."""
    key = ("step3p7.part", field)
    if key not in c.memo:
        fam = family(model_type)
        sub = c.sub(field, fam.defaults, fam.aliases)
        if fam.check:
            fam.check(sub)
        c.memo[key] = sub
    return c.memo[key]


def vision_model(c: Cfg) -> Block:
    """``vision_model``: the encoder's modules are the vision encoder, the downsampler the projector."""
    v = part(c, "vision_config", VISION)
    parts = [replace(n, tower="vision_encoder") for n in encoder(v)]
    merge = [replace(n, tower="projector") for n in downsampler(v)]
    return Block("vision_model", (*parts, *merge))


def projector(c: Cfg) -> Block:
    """One linear layer from the downsampled 4h-wide features to the text width."""
    width = 4 * dim(part(c, "vision_config", VISION), "hidden_size")
    h_t = part(c, "text_config", TEXT).int("hidden_size")
    return block(
        "multi_modal_projector",
        *linear("", width, h_t, c.bool("projector_bias")).children,
        kind="feed_forward",
        tower="projector",
    )


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    text = family(TEXT)
    language = text.classes[text.backbone](part(c, "text_config", TEXT))
    return (vision_model(c), Block("language_model", language.children, tower="language_model"), projector(c))


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def generation(c: Cfg) -> Block:
    """The model and a bias-free LM head, tied to the token embedding only by the composite's
    ``tie_word_embeddings`` (absent: untied)."""
    tie = bool(c.get("tie_word_embeddings", False))  # transformers reads it so, absent as false
    return Block("", (Block("model", model(c), label="backbone"), lm_head(part(c, "text_config", TEXT), tie)))


def notes(c: Cfg, cls: str) -> list[str]:
    """The language model's notes (its MTP layers, the router's buffer), said of it."""
    text = part(c, "text_config", TEXT)
    return [f"the language model: {n}" for n in family(TEXT).notes(text, cls)]  # type: ignore[misc]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    kinds, said = family(TEXT).cache_layout(part(c, "text_config", TEXT), TEXT, cls, mla)  # type: ignore[misc]
    return kinds, [f"the language model ({TEXT}) keeps the cache", *said]


def tile_side(short: int, long: int, view: int) -> int:
    """The tile Step3p7ImageProcessor cuts: none for a near-square image that fits the global
    view, its short side for a long one that does or a very long one that does not."""
    if long <= view:
        return short if long / short > 1.5 else 0
    return min(short, TILE) if long / short > 4 else TILE


def local_tiles(width: int, height: int, view: int) -> tuple[int, int]:
    """(tiles across, tiles down) as Step3p7ImageProcessor._plan_patches lays an image out."""
    if min(width, height) < 32 and max(width / height, height / width) > 4:
        width = height = max(width, height)  # padded to a square first
    if max(width, height) > MAX_SIDE:
        scale = MAX_SIDE / max(width, height)
        width, height = int(width * scale), int(height * scale)
    window = tile_side(min(width, height), max(width, height), view)
    if not window:
        return 0, 0

    def tiles(d: int) -> int:  # snapped up to a whole window when over a fifth of one is left
        crop = window * (d // window + (d % window > 0.2 * window)) if d >= window else d
        return max(1, crop // window)

    return tiles(width), tiles(height)


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """Step3p7Processor: per local tile <patch_start>, (504 / 4p)² image tokens, <patch_end>, a
    <patch_newline> after each row but the last; then <im_start>, (image_size / 4p)² tokens for
    the global view, <im_end>. The markers are counted: the processor puts them in."""
    from .media import ImageTokens

    v = part(c, "vision_config", VISION)
    side, p = int(v.int("image_size")), int(v.int("patch_size"))
    across, down = local_tiles(width, height, side)
    local, view = (TILE // (p * STRIDE)) ** 2, (side // (p * STRIDE)) ** 2
    tiles = across * down
    tokens = tiles * (local + 2) + max(down - 1, 0) + view + 2
    patches = (side // p) ** 2 + tiles * (TILE // p) ** 2
    said = (
        f"Step3p7Processor at its defaults ({TILE}-px tiles, images over {MAX_SIDE:,} px a side scaled down): "
        f"the {side}-px global view and {tiles} tile(s) ({across}×{down}) of {p}-px patches merged 4×4, "
        f"{tokens:,} tokens with the markers around each tile and the view"
    )
    return ImageTokens(tokens, patches, int(dim(v, "hidden_size")), int(inner(v)), said)


FAMILY = Family(
    model_type="step3p7",
    defaults=DEFAULTS,
    backbone="Step3p7Model",
    notes=notes,
    cache_layout=cache_layout,
    classes={"Step3p7Model": backbone, "Step3p7ForConditionalGeneration": generation},
    image_tokens=image_tokens,
)

__all__ = ["FAMILY", "image_tokens", "local_tiles"]
