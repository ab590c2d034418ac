"""Qwen2.5-VL (Bai et al. 2025): Qwen2-VL with a vision tower of RMSNorms and a biased SwiGLU
MLP (``intermediate_size``), whose width is ``hidden_size`` and whose merger projects to
``out_hidden_size``; windowed attention in most vision blocks changes no parameter. The language
model is Qwen2-VL's (``Qwen2_5_VLTextModel``, the same tree)."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family
from .blocks import block, gated_mlp, linear, norm
from .config import Cfg, per_cfg
from .qwen2_vl import DEFAULTS, cache, check_vision, image_rule, text_cfg, tied, vision_cfg, visual
from .qwen2_vl import QWEN2_5_VISION as VISION
from .qwen2_vl_text import backbone as text_backbone
from .qwen2_vl_text import check as text_check
from .towers import QWEN_VL_RENAMES, lm_head


def vision_block(v: Cfg) -> tuple[Node, ...]:
    h = v.int("hidden_size")
    attn = block("attn", linear("qkv", h, 3 * h), linear("proj", h, h), kind="attention")
    feed = gated_mlp("mlp", h, v.int("intermediate_size"), bias=True)
    return (norm("norm1", h, bias=False), norm("norm2", h, bias=False), attn, feed)


@per_cfg  # the class and its backbone both hold these: built once
def model(c: Cfg) -> tuple[Node, ...]:
    v, t = vision_cfg(c, VISION), text_cfg(c)
    check_vision(v, "hidden_size")
    text_check(t)
    h = v.int("hidden_size")
    language = Block("language_model", text_backbone(t).children, tower="language_model")
    return (visual(v, vision_block, h, v.int("out_hidden_size"), rms=True), language)


def backbone(c: Cfg) -> Block:
    return Block("", model(c), label="backbone")


def causal_lm(c: Cfg) -> Block:
    t = text_cfg(c)
    return Block("", (Block("model", model(c), label="backbone"), lm_head(t, tied(c, t))))


FAMILY = Family(
    model_type="qwen2_5_vl",
    defaults=DEFAULTS,
    backbone="Qwen2_5_VLModel",
    cache_layout=cache,
    classes={"Qwen2_5_VLModel": backbone, "Qwen2_5_VLForConditionalGeneration": causal_lm},
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule("hidden_size", lambda v: int(v.int("intermediate_size"))),
)
