"""GLM-4.5V (Z.ai 2025, ``glm4v_moe``): GLM-4.1V's vision model over GLM-4.5-Air's MoE decoder
(``Glm4vMoeTextModel``, arch/glm4v_moe_text.py).

The vision model (``Glm4vMoeVisionModel``): a biased Conv3d over ``temporal_patch_size`` frames of
``patch_size``² pixels, an RMSNorm after it (``post_conv_layernorm``), a learned table of
(image_size / patch_size)² positions resampled to each image's grid, ``depth`` RMSNorm blocks
(a fused ``qkv`` biased behind ``attention_bias``, a bias-free ``proj``, a bias-free SwiGLU MLP
whose width is ``out_hidden_size``, not ``intermediate_size``) and a last RMSNorm: the vision
encoder. Then the projector: a biased Conv2d folding each m×m block of patches into
``out_hidden_size`` (``downsample``) and the patch merger (a bias-free Linear, a biased LayerNorm
and a bias-free SwiGLU of ``intermediate_size``). transformers builds each part from its own
class, whatever a nested ``model_type`` says (GLM-4.5V's vision_config says ``glm4v_moe``)."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, Node, Tensor
from . import Family, glm4_moe
from .blocks import block, embedding, gated_mlp, linear, norm
from .config import Cfg, per_cfg
from .glm4v_moe_text import ALIASES as TEXT_ALIASES
from .glm4v_moe_text import DEFAULTS as TEXT
from .glm4v_moe_text import FAMILY as TEXT_FAMILY
from .glm4v_moe_text import backbone as text_backbone
from .towers import lm_head

# Glm4vMoeVisionConfig's defaults.
VISION = {
    "depth": 24,
    "hidden_size": 1536,
    "attention_bias": False,
    "num_heads": 12,
    "in_channels": 3,
    "image_size": 336,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 4096,
    "intermediate_size": 13696,
}
# Glm4vMoeVisionConfig.attribute_map.
VISION_ALIASES = {"num_heads": ("num_attention_heads",), "depth": ("num_hidden_layers",)}
DEFAULTS = {"text_config": None, "vision_config": None, "tie_word_embeddings": False}


def text_cfg(c: Cfg) -> Cfg:
    t = c.sub("text_config", TEXT, TEXT_ALIASES)
    glm4_moe.check(t)
    return t


def vision_cfg(c: Cfg) -> Cfg:
    return c.sub("vision_config", VISION, VISION_ALIASES)


def vision_block(v: Cfg) -> tuple[Node, ...]:
    h, out = v.int("hidden_size"), v.int("out_hidden_size")
    attn = block(
        "attn", linear("qkv", h, 3 * h, v.bool("attention_bias")), linear("proj", h, h, False), kind="attention"
    )
    return (norm("norm1", h, bias=False), norm("norm2", h, bias=False), attn, gated_mlp("mlp", h, out))


def encoder(v: Cfg) -> tuple[Node, ...]:
    """Patch embedding, its norm, the position table, the blocks and the last norm."""
    h, t, p = v.int("hidden_size"), v.int("temporal_patch_size", high=1 << 10), v.int("patch_size", high=1 << 12)
    side = v.int("image_size", high=1 << 16) // p
    kernel = Tensor("weight", (h, v.int("in_channels", high=1 << 12), t, p, p))
    positions = embedding("position_embedding", side * side, h)
    return (
        Block(
            "patch_embed", (Block("proj", (kernel, Tensor("bias", (h,)))),), kind="embeddings", tower="vision_encoder"
        ),
        Block("post_conv_layernorm", norm("", h, bias=False).children, kind="norms", tower="vision_encoder"),
        Block("embeddings", (positions,), kind="embeddings", tower="vision_encoder"),
        Block("blocks", vision_block(v), repeat=v.int("depth"), label="layer", tower="vision_encoder"),
        Block("post_layernorm", norm("", h, bias=False).children, kind="norms", tower="vision_encoder"),
    )


def projector(v: Cfg) -> tuple[Node, ...]:
    """The m×m Conv2d into out_hidden_size, then the merger."""
    h, out, m = v.int("hidden_size"), v.int("out_hidden_size"), v.int("spatial_merge_size", high=1 << 8)
    down = (Tensor("weight", (out, h, m, m)), Tensor("bias", (out,)))
    merger = block(
        "merger",
        linear("proj", out, out, False),
        norm("post_projection_norm", out),
        *gated_mlp("", out, v.int("intermediate_size")).children,
        kind="feed_forward",
        tower="projector",
    )
    return (Block("downsample", down, kind="feed_forward", tower="projector"), merger)


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v, t = vision_cfg(c), text_cfg(c)
    visual = Block("visual", (*encoder(v), *projector(v)))
    return (visual, Block("language_model", text_backbone(t), tower="language_model"))


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def tied(c: Cfg, text: Cfg) -> bool:
    """Glm4vMoeConfig.__post_init__: a text config's true tie_word_embeddings ties the head (pre-v5 saves)."""
    return c.bool("tie_word_embeddings") or text.raw.get("tie_word_embeddings") is True


def causal_lm(c: Cfg) -> Block:
    t = text_cfg(c)
    return Block("", (Block("model", model(c), label="backbone"), lm_head(t, tied(c, t))))


def notes(c: Cfg, cls: str) -> list[str]:
    return TEXT_FAMILY.notes(text_cfg(c), cls) if TEXT_FAMILY.notes else []


def cache(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    kinds, said = glm4_moe.FAMILY.cache_layout(text_cfg(c), model_type, cls, mla)
    return kinds, ["the language model (glm4v_moe_text) keeps the cache", *said]


# Glm4vImageProcessor's defaults: size {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 15000}
# (a checkpoint's preprocessor_config.json may set others)
MIN_PIXELS, MAX_PIXELS = 112 * 112, 28 * 28 * 15000


def glm_resize(height: int, width: int, factor: int, frames: int, low: int, high: int) -> tuple[int, int]:
    """transformers' glm4v ``smart_resize`` for one image (``num_frames`` = ``temporal_factor`` =
    ``frames``): a side below ``factor`` scaled up first, both sides multiples of ``factor``, and
    frames × area within [low, high]."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ParamcountError(
            f"an aspect ratio past 200 ({width}x{height}): the processor refuses it", field="--image-size"
        )
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if frames * h_bar * w_bar > high:
        beta = math.sqrt((frames * height * width) / high)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif frames * h_bar * w_bar < low:
        beta = math.sqrt(low / (frames * height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(c: Cfg, width: int, height: int) -> Any:
    """Glm4vImageProcessor at its defaults: the image resized to multiples of patch × merge pixels
    (glm_resize), cut into patches (one temporal step: the frame repeated), merged m×m into tokens
    (Glm4vProcessor: grid_t·grid_h·grid_w / m²)."""
    from .media import ImageTokens

    v = vision_cfg(c)
    p, m = int(v.int("patch_size", high=1 << 12)), int(v.int("spatial_merge_size", high=1 << 8))
    t = int(v.int("temporal_patch_size", high=1 << 10))
    h_bar, w_bar = glm_resize(height, width, p * m, t, MIN_PIXELS, MAX_PIXELS)
    patches = (h_bar // p) * (w_bar // p)
    said = (
        f"Glm4vImageProcessor at its defaults: resized to {w_bar}x{h_bar} (multiples of {p * m} px, {MIN_PIXELS:,} to"
        f" {MAX_PIXELS:,} pixels over {t} frames; a checkpoint's preprocessor_config.json may set others), {patches:,}"
        f" {p}-px patches merged {m}x{m} into {patches // (m * m):,} image tokens; the <|begin_of_image|> and"
        " <|end_of_image|> around them are text"
    )
    return ImageTokens(patches // (m * m), patches, int(v.int("hidden_size")), int(v.int("out_hidden_size")), said)


FAMILY = Family(
    model_type="glm4v_moe",
    defaults=DEFAULTS,
    backbone="Glm4vMoeModel",
    notes=notes,
    cache_layout=cache,
    classes={"Glm4vMoeModel": backbone, "Glm4vMoeForConditionalGeneration": causal_lm},
    image_tokens=image_tokens,
)

__all__ = ["FAMILY", "backbone", "model"]
