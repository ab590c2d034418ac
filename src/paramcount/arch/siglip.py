"""SigLIP (Zhai et al. 2023): CLIP's two towers trained with a sigmoid loss. Unlike CLIP, the
vision tower has no class token and a biased patch convolution, its position embeddings cover
the patches alone, and it ends in an attention-pooling head (a learned probe attending over the
patches through ``nn.MultiheadAttention``, a LayerNorm and an MLP) unless ``vision_use_head`` is
false; the text tower ends in a biased ``head`` into ``projection_size`` (default: its width).
``SiglipModel`` adds a learned temperature and bias (``logit_scale``, ``logit_bias``).

The towers are families of their own too (``siglip_text_model``, ``siglip_vision_model``);
this module builds all three, and PaliGemma's, Gemma 3's and Idefics' vision towers reuse it.
"""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import block, embedding, linear, mlp, norm
from .clip import check_tower, layers
from .config import Cfg
from .vision import conv2d, no_cache

TEXT = {
    "vocab_size": 32000,
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "max_position_embeddings": 64,
    "projection_size": None,
}
VISION = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
    "vision_use_head": True,
}
DEFAULTS = {"text_config": None, "vision_config": None}


def text_cfg(c: Cfg) -> Cfg:
    return c.sub("text_config", TEXT)


def vision_cfg(c: Cfg) -> Cfg:
    return c.sub("vision_config", VISION)


def text_transformer(t: Cfg, name: str = "text_model") -> Block:
    h = t.int("hidden_size")
    emb = block(
        "embeddings",
        embedding("token_embedding", t.int("vocab_size"), h),
        embedding("position_embedding", t.int("max_position_embeddings"), h),
    )
    projection = t.int("projection_size") if t.get("projection_size") is not None else h
    head = linear("head", h, projection, kind="output_head")
    return block(name, emb, layers(t), norm("final_layer_norm", h), head, tower="text_encoder")


def patches(v: Cfg) -> int:
    """(image/patch)², as SiglipVisionEmbeddings computes it from square sizes."""
    image, patch = v.int("image_size"), v.int("patch_size")
    if patch > image:
        raise v.error("patch_size", f"a {int(patch)}-pixel patch does not fit a {int(image)}-pixel image")
    return (image // patch) ** 2


def patch_embeddings(v: Cfg) -> Block:
    """A biased patch convolution and one position embedding per patch: no class token."""
    h, patch = v.int("hidden_size"), v.int("patch_size")
    return block(
        "embeddings",
        conv2d("patch_embedding", v.int("num_channels"), h, patch, patch),
        embedding("position_embedding", patches(v), h),
        kind="embeddings",
    )


def pooling_head(v: Cfg) -> Block:
    """SiglipMultiheadAttentionPoolingHead: a probe token, ``nn.MultiheadAttention`` (packed
    in-projection, biased out-projection), a LayerNorm and the tower's MLP."""
    h = v.int("hidden_size")
    attention = block(
        "attention",
        Tensor("in_proj_weight", (3 * h, h)),
        Tensor("in_proj_bias", (3 * h,)),
        linear("out_proj", h, h),
        kind="attention",
    )
    return block(
        "head",
        Tensor("probe", (1, 1, h), kind="other"),
        attention,
        norm("layernorm", h),
        mlp("mlp", h, v.int("intermediate_size")),
    )


def vision_transformer(v: Cfg, name: str = "vision_model", embeddings=patch_embeddings) -> Block:
    """The vision tower; ``embeddings`` builds its input (SigLIP 2 flattens patches instead)."""
    head = pooling_head(v) if v.bool("vision_use_head") else None
    post = norm("post_layernorm", v.int("hidden_size"))
    return block(name, embeddings(v), layers(v), post, head, tower="vision_encoder")


def two_towers(c: Cfg, text: Cfg, vision: Cfg, vision_tower=vision_transformer) -> Block:
    scalars = (Tensor("logit_scale", (1,), kind="other"), Tensor("logit_bias", (1,), kind="other"))
    return Block("", (text_transformer(text), vision_tower(vision), *scalars), label="backbone")


def model(c: Cfg) -> Block:
    return two_towers(c, text_cfg(c), vision_cfg(c))


def classifier(vision: Cfg, c: Cfg, vision_tower=vision_transformer) -> Block:
    """``…ForImageClassification``: the vision tower and a linear head (none for 0 labels)."""
    labels = c.int("num_labels", low=0, default=2)
    head: tuple[Node, ...] = (
        (linear("classifier", vision.int("hidden_size"), labels, kind="output_head"),) if labels else ()
    )
    return Block("", (vision_tower(vision), *head))


def image_classifier(c: Cfg) -> Block:
    return classifier(vision_cfg(c), c)


def check_both(text: Cfg, vision: Cfg) -> None:
    check_tower(text)
    check_tower(vision)


def check(c: Cfg) -> None:
    check_both(text_cfg(c), vision_cfg(c))


def vision_tokens(v: Cfg) -> int:
    return int(patches(v))


FAMILY = Family(
    model_type="siglip",
    defaults=DEFAULTS,
    backbone="SiglipModel",
    check=check,
    cache_layout=no_cache,
    classes={"SiglipModel": model, "SiglipForImageClassification": image_classifier},
)

__all__ = ["FAMILY", "TEXT", "VISION", "text_transformer", "vision_transformer"]
