"""Llama 4's image encoder (``Llama4VisionModel``): patches unfolded and projected by a bias-free
linear layer, a class embedding and a learned position per patch, biased LayerNorms before and
after ``num_hidden_layers`` layers (biased attention and GELU MLP), then the pixel-shuffle
adapter: two bias-free projections, ``intermediate_size`` → ``projector_input_dim`` and
``projector_output_dim`` → ``projector_output_dim``."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import base, block, linear, mlp, norm
from .config import Cfg

DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attn = block("self_attn", *(linear(n, h, h) for n in ("q_proj", "k_proj", "v_proj", "o_proj")), kind="attention")
    return (
        attn,
        mlp("mlp", h, c.int("intermediate_size"), names=("fc1", "fc2")),
        norm("input_layernorm", h),
        norm("post_attention_layernorm", h),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, p = c.int("hidden_size"), c.int("patch_size")
    n = (int(c.int("image_size")) // int(p)) ** 2 + 1
    out = c.int("projector_output_dim")
    adapter = block(
        "vision_adapter",
        block(
            "mlp",
            linear("fc1", c.int("intermediate_size"), c.int("projector_input_dim"), bias=False),
            linear("fc2", out, out, bias=False),
        ),
        kind="feed_forward",
    )
    return (
        Block("patch_embedding", (linear("linear", c.int("num_channels") * p * p, h, bias=False),), kind="embeddings"),
        Tensor("class_embedding", (h,), kind="embeddings"),
        Tensor("positional_embedding_vlm", (n, h), kind="embeddings"),
        norm("layernorm_pre", h),
        norm("layernorm_post", h),
        Block("model", (Block("layers", layer(c), repeat=c.int("num_hidden_layers"), label="layer"),)),
        adapter,
    )


def check(c: Cfg) -> None:
    for field in ("image_size", "patch_size"):
        if not isinstance(c.get(field), int):
            raise c.error(field, f"expected one whole number, got {c.get(field)!r:.40}")
    c.divides("hidden_size", "num_attention_heads")


FAMILY = Family(
    model_type="llama4_vision_model",
    defaults=DEFAULTS,
    backbone="Llama4VisionModel",
    check=check,
    classes={"Llama4VisionModel": base(backbone)},
)

__all__ = ["FAMILY", "backbone"]
