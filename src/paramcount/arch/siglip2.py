"""SigLIP 2 (Tschannen et al. 2025): SigLIP's towers, with the NaFlex vision input: the image
arrives as a sequence of flattened patches, so the patch embedding is a Linear over
``num_channels · patch²`` values, and ``num_patches`` learned positions (resized to each
image's grid at run time) replace the fixed image size.

The towers are families too (``siglip2_text_model``, ``siglip2_vision_model``).
"""

from __future__ import annotations

from ..ir import Block
from . import Family
from .blocks import block, embedding, linear
from .config import Cfg
from .siglip import TEXT, check_both, classifier, two_towers, vision_transformer
from .vision import no_cache

VISION = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "patch_size": 16,
    "vision_use_head": True,
    "num_patches": 256,
}
DEFAULTS = {"text_config": None, "vision_config": None}


def text_cfg(c: Cfg) -> Cfg:
    return c.sub("text_config", TEXT)


def vision_cfg(c: Cfg) -> Cfg:
    return c.sub("vision_config", VISION)


def flat_patch_embeddings(v: Cfg) -> Block:
    """Siglip2VisionEmbeddings: a Linear over a flattened patch and ``num_patches`` positions."""
    h, patch = v.int("hidden_size"), v.int("patch_size", high=1 << 12)
    return block(
        "embeddings",
        linear("patch_embedding", v.int("num_channels", high=1 << 12) * patch * patch, h),
        embedding("position_embedding", v.int("num_patches"), h),
        kind="embeddings",
    )


def vision_tower(v: Cfg, name: str = "vision_model") -> Block:
    return vision_transformer(v, name, embeddings=flat_patch_embeddings)


def model(c: Cfg) -> Block:
    return two_towers(c, text_cfg(c), vision_cfg(c), vision_tower)


def image_classifier(c: Cfg) -> Block:
    return classifier(vision_cfg(c), c, vision_tower)


def two_checks(c: Cfg) -> None:
    check_both(text_cfg(c), vision_cfg(c))


FAMILY = Family(
    model_type="siglip2",
    defaults=DEFAULTS,
    backbone="Siglip2Model",
    check=two_checks,
    cache_layout=no_cache,
    classes={"Siglip2Model": model, "Siglip2ForImageClassification": image_classifier},
)

__all__ = ["FAMILY", "VISION", "vision_tower"]
