"""Qwen2-VL (Wang et al. 2024): a ViT over 3-D patches (a bias-free Conv3d over
``temporal_patch_size`` frames of ``patch_size``² pixels; 2-D rotary positions, no parameters)
with pre-norm LayerNorm blocks (a fused biased ``qkv``, a GELU MLP of ``mlp_ratio``), a patch
merger (a LayerNorm, then an MLP over each 2×2 block of patches into the language model's
width: the projector), and Qwen2's decoder as ``language_model`` (``Qwen2VLTextModel``).

transformers builds the towers from their own classes whatever the nested ``model_type`` says,
and a Hub ``config.json`` is often flat: without ``text_config``, the language model's fields
are the top-level ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir import Block, Node, Tensor
from ..records import replace
from . import Family
from .blocks import block, linear, mlp, norm, stack
from .config import Cfg, per_cfg
from .qwen2_vl_text import DEFAULTS as TEXT
from .qwen2_vl_text import backbone as text_backbone
from .qwen2_vl_text import cache_layout as text_layout
from .qwen2_vl_text import check as text_check
from .towers import QWEN_VL_RENAMES, lm_head

VISION = {
    "depth": 32,
    "embed_dim": 1280,
    "hidden_size": 3584,
    "mlp_ratio": 4,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}

# Qwen2.5-VL's vision tower defaults (Qwen2_5_VLVisionConfig), which a Qwen2-VL config with
# hidden_size (not embed_dim) takes: qwen2_5_vl.py's own.
QWEN2_5_VISION = {
    "depth": 32,
    "hidden_size": 3584,
    "intermediate_size": 3420,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
}
VISION_ALIASES = {"num_heads": ("num_attention_heads",), "depth": ("num_hidden_layers",)}
DEFAULTS = {"text_config": None, "vision_config": None, "tie_word_embeddings": False}
NESTED = ("text_config", "vision_config", "model_type", "architectures")


def text_cfg(c: Cfg, defaults: Mapping[str, Any] = TEXT) -> Cfg:
    """The language model's fields: ``text_config``, else the flat file's own."""
    flat = {k: v for k, v in c.raw.items() if k not in NESTED}
    return c.sub("text_config", defaults, absent=flat)


def vision_cfg(c: Cfg, defaults: Mapping[str, Any] = VISION) -> Cfg:
    return c.sub("vision_config", defaults, VISION_ALIASES)


def patch_embed(v: Cfg, width: int) -> Block:
    """A bias-free Conv3d, kernel = stride = (frames, patch, patch)."""
    t, p = v.int("temporal_patch_size", high=1 << 10), v.int("patch_size", high=1 << 12)
    weight = Tensor("weight", (width, v.int("in_channels", high=1 << 12), t, p, p))
    return Block("patch_embed", (Block("proj", (weight,)),), kind="embeddings", tower="vision_encoder")


def merger(v: Cfg, width: int, out: int, rms: bool = False) -> Block:
    """The patch merger: a norm of the vision width, then Linear(m²·w, m²·w), GELU, Linear(m²·w, out)."""
    m = v.int("spatial_merge_size", high=1 << 8)
    wide = width * m * m
    head = block("mlp", linear("0", wide, wide), linear("2", wide, out))
    return block("merger", norm("ln_q", width, bias=not rms), head, kind="feed_forward", tower="projector")


def vision_block(v: Cfg) -> tuple[Node, ...]:
    e = v.int("embed_dim")
    attn = block("attn", linear("qkv", e, 3 * e), linear("proj", e, e), kind="attention")
    inner = e * v.int("mlp_ratio", high=1 << 10)
    return (norm("norm1", e), norm("norm2", e), attn, mlp("mlp", e, inner))


def visual(v: Cfg, layer: Callable[[Cfg], tuple[Node, ...]], width: int, out: int, rms: bool = False) -> Block:
    """The vision model: its patch embedding and blocks are the vision encoder, its merger the projector."""
    blocks = replace(stack("blocks", v.int("depth"), *layer(v)), tower="vision_encoder")
    return Block("visual", (patch_embed(v, width), blocks, merger(v, width, out, rms)))


def check_vision(v: Cfg, width: str) -> None:
    v.divides(width, "num_heads")


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v, t = vision_cfg(c), text_cfg(c)
    check_vision(v, "embed_dim")
    text_check(t)
    e = v.int("embed_dim")
    language = Block("language_model", text_backbone(t).children, tower="language_model")
    return (visual(v, vision_block, e, v.int("hidden_size")), language)


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def cache(c: Cfg, model_type: str, cls: str, mla: str):
    kinds, notes = text_layout(text_cfg(c), model_type, cls, mla)
    return kinds, ["the language model (qwen2_vl_text) keeps the cache", *notes]


def tied(c: Cfg, text: Cfg) -> bool:
    """The composite's ``tie_word_embeddings``, which a text config's true one sets (pre-v5 saves)."""
    return c.bool("tie_word_embeddings") or text.raw.get("tie_word_embeddings") is True


def causal_lm(c: Cfg) -> Block:
    t = text_cfg(c)
    return Block("", (Block("model", model(c), label="backbone"), lm_head(t, tied(c, t))))


# Qwen2VLImageProcessor's defaults (min_pixels, max_pixels); a checkpoint's preprocessor_config.json may differ
MIN_PIXELS, MAX_PIXELS = 56 * 56, 28 * 28 * 1280


def image_rule(width_field: str, inner: Callable[[Cfg], int]) -> Callable[[Cfg, int, int], Any]:
    """Qwen2-VL's processor: the image resized (``smart_resize``) to multiples of patch × merge
    pixels within [MIN_PIXELS, MAX_PIXELS], cut into patches, merged m×m into image tokens."""

    def rule(c: Cfg, width: int, height: int) -> Any:
        from .media import ImageTokens, smart_resize

        v = vision_cfg(c, VISION if width_field == "embed_dim" else QWEN2_5_VISION)
        p, m = int(v.int("patch_size")), int(v.int("spatial_merge_size"))
        h_bar, w_bar = smart_resize(height, width, p * m, MIN_PIXELS, MAX_PIXELS)
        patches = (h_bar // p) * (w_bar // p)
        said = (
            f"Qwen2VLImageProcessor at its defaults: resized to {w_bar}x{h_bar} (multiples of {p * m} px, "
            f"{MIN_PIXELS:,} to {MAX_PIXELS:,} pixels; a checkpoint's preprocessor_config.json may set others), "
            f"{patches:,} {p}-px patches merged {m}x{m} into {patches // (m * m):,} image tokens; the "
            "<|vision_start|> and <|vision_end|> around them are text"
        )
        return ImageTokens(patches // (m * m), patches, int(v.int(width_field)), inner(v), said)

    return rule


FAMILY = Family(
    model_type="qwen2_vl",
    defaults=DEFAULTS,
    backbone="Qwen2VLModel",
    cache_layout=cache,
    classes={"Qwen2VLModel": backbone, "Qwen2VLForConditionalGeneration": causal_lm},
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule("embed_dim", lambda v: int(v.int("embed_dim")) * int(v.int("mlp_ratio", high=1 << 10))),
)
