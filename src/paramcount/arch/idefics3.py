"""Idefics3 (Laurençon et al. 2024): a SigLIP-like vision transformer (``vision_model``: a biased
patch convolution, one position per patch, SigLIP's encoder layers and a final LayerNorm, no
pooling head), a connector that pixel-shuffles each ``scale_factor``² block of patches into one
token and projects it with one bias-free Linear (``connector.modality_projection.proj``), and a
language model (``text_model``, Llama by default) with an untied LM head by default.
SmolVLM has the same tree (``smolvlm``)."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, linear, norm
from .clip import check_tower, layers
from .config import Cfg, per_cfg
from .siglip import patch_embeddings
from .towers import lm_head, text_cache, tower, tower_cfg

VISION = {
    "hidden_size": 1152,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 32,
}
DEFAULTS = {"text_config": None, "vision_config": None, "scale_factor": 2, "tie_word_embeddings": False}
TEXT = "llama"
TEXT_ABSENT = {"rms_norm_eps": 1e-5}  # the config's SubConfigSpec: no shape field


def vision_cfg(c: Cfg) -> Cfg:
    v = c.sub("vision_config", VISION)
    check_tower(v)
    return v


def vision_model(v: Cfg) -> Block:
    post = norm("post_layernorm", v.int("hidden_size"))
    return block("vision_model", patch_embeddings(v), layers(v), post, tower="vision_encoder")


def connector(c: Cfg, v: Cfg) -> Block:
    s = c.int("scale_factor", high=1 << 8)
    t = tower_cfg(c, "text_config", TEXT, TEXT_ABSENT)
    proj = linear("proj", v.int("hidden_size") * s * s, t.int("hidden_size"), bias=False)
    return block("connector", block("modality_projection", proj), kind="feed_forward", tower="projector")


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v = vision_cfg(c)
    text = tower(c, "text_config", TEXT, "text_model", "language_model", TEXT_ABSENT)
    return (vision_model(v), connector(c, v), text)


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def causal_lm(c: Cfg) -> Block:
    t = tower_cfg(c, "text_config", TEXT, TEXT_ABSENT)
    head = lm_head(t, c.bool("tie_word_embeddings"), "model.text_model.embed_tokens.weight")
    return Block("", (Block("model", model(c), label="backbone"), head))


FAMILY = Family(
    model_type="idefics3",
    defaults=DEFAULTS,
    backbone="Idefics3Model",
    cache_layout=text_cache("text_config", TEXT, TEXT_ABSENT),
    classes={"Idefics3Model": backbone, "Idefics3ForConditionalGeneration": causal_lm},
)
