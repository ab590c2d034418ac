"""CLIP (Radford et al. 2021): a text transformer and a vision transformer side by side, each
projected (without bias) into one embedding space of ``projection_dim``, with a learned
temperature (``logit_scale``, one parameter). The text tower is GPT-like (token and learned
position embeddings, pre-norm layers, a final LayerNorm); the vision tower is a ViT with a
class embedding, a bias-free patch convolution and a LayerNorm before and after the encoder.

The towers are families of their own too (``clip_text_model``, ``clip_vision_model``: their
config classes build ``CLIPTextModel`` and ``CLIPVisionModel``); this module builds all three.
"""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family, bart
from .blocks import block, embedding, linear, mlp, norm, stack
from .config import Cfg
from .vision import conv2d, no_cache

TEXT = {
    "vocab_size": 49408,
    "hidden_size": 512,
    "intermediate_size": 2048,
    "projection_dim": 512,
    "num_hidden_layers": 12,
    "num_attention_heads": 8,
    "max_position_embeddings": 77,
}
VISION = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "projection_dim": 512,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 32,
}
DEFAULTS = {"projection_dim": 512, "text_config": None, "vision_config": None}


def text_cfg(c: Cfg) -> Cfg:
    return c.sub("text_config", TEXT, legacy="text_config_dict")


def vision_cfg(c: Cfg) -> Cfg:
    return c.sub("vision_config", VISION, legacy="vision_config_dict")


def check_tower(t: Cfg) -> None:
    t.divides("hidden_size", "num_attention_heads")


def layers(t: Cfg) -> Block:
    """The pre-norm encoder layers both towers share: biased q/k/v/out projections, a GELU MLP."""
    h = t.int("hidden_size")
    attn = bart.attention("self_attn", h)  # biased k, v, q, out projections, h → h
    layer = (attn, norm("layer_norm1", h), mlp("mlp", h, t.int("intermediate_size")), norm("layer_norm2", h))
    return block("encoder", stack("layers", t.int("num_hidden_layers"), *layer))


def text_transformer(t: Cfg, name: str = "text_model") -> Block:
    h = t.int("hidden_size")
    emb = block(
        "embeddings",
        embedding("token_embedding", t.int("vocab_size"), h),
        embedding("position_embedding", t.int("max_position_embeddings"), h),
    )
    return block(name, emb, layers(t), norm("final_layer_norm", h), tower="text_encoder")


def vision_transformer(v: Cfg, name: str = "vision_model") -> Block:
    h, image, patch = v.int("hidden_size"), v.int("image_size"), v.int("patch_size")  # square: CLIP takes one side
    if patch > image:
        raise v.error("patch_size", f"a {int(patch)}-pixel patch does not fit a {int(image)}-pixel image")
    side = image // patch
    emb = block(
        "embeddings",
        Tensor("class_embedding", (h,)),
        conv2d("patch_embedding", v.int("num_channels"), h, patch, patch, bias=False),
        embedding("position_embedding", side * side + 1, h),
        kind="embeddings",
    )
    return block(name, emb, norm("pre_layrnorm", h), layers(v), norm("post_layernorm", h), tower="vision_encoder")


def _projection(name: str, d_in: int, d_out: int) -> Block:
    """A bias-free projection into the shared space, as its own module."""
    return Block(name, (Tensor("weight", (d_out, d_in)),), kind="output_head", tower="projector")


def model(c: Cfg) -> Block:
    t, v = text_cfg(c), vision_cfg(c)
    dim = c.int("projection_dim")
    return Block(
        "",
        (
            Tensor("logit_scale", (), kind="other"),
            text_transformer(t),
            vision_transformer(v),
            _projection("visual_projection", v.int("hidden_size"), dim),
            _projection("text_projection", t.int("hidden_size"), dim),
        ),
        label="backbone",
    )


def image_classifier(c: Cfg) -> Block:
    v = vision_cfg(c)
    labels = c.int("num_labels", low=0, default=2)
    head: tuple[Node, ...] = (linear("classifier", v.int("hidden_size"), labels, kind="output_head"),) if labels else ()
    return Block("", (vision_transformer(v), *head))


def check(c: Cfg) -> None:
    check_tower(text_cfg(c))
    check_tower(vision_cfg(c))


FAMILY = Family(
    model_type="clip",
    defaults=DEFAULTS,
    backbone="CLIPModel",
    check=check,
    cache_layout=no_cache,
    classes={"CLIPModel": model, "CLIPForImageClassification": image_classifier},
)

__all__ = ["FAMILY", "TEXT", "VISION", "check_tower", "text_transformer", "vision_transformer"]
