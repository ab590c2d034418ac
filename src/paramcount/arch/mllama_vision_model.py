"""Llama 3.2 Vision's image encoder (``MllamaVisionModel``): a bias-free Conv2d over
``patch_size``² pixels of each of ``max_num_tiles`` tiles, a class embedding, gated position
embeddings (one per patch, and one per patch per tile per aspect ratio), gated tile embeddings
before and after the local encoder, then ``num_hidden_layers`` local layers and
``num_global_layers`` global ones (the latter with tanh gates on attention and MLP). Attention
projections are bias-free, the GELU MLP biased, the LayerNorms biased."""

from __future__ import annotations

from ..ir import Block, Node, Sym, Tensor
from . import Family
from .blocks import base, block, linear, mlp, norm
from .config import Cfg

DEFAULTS = {
    "hidden_size": 1280,
    "num_hidden_layers": 32,
    "num_global_layers": 8,
    "attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5120,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "max_num_tiles": 4,
    "supported_aspect_ratios": None,
}
ASPECT_RATIOS = 8  # MllamaVisionConfig.__post_init__'s default list: 1×1 … 4×1


def aspect_ratios(c: Cfg) -> int:
    """``max_aspect_ratio_id``: how many supported aspect ratios (the default list has 8)."""
    value = c.get("supported_aspect_ratios")
    if value is None:
        return ASPECT_RATIOS
    if not isinstance(value, list):
        raise c.error("supported_aspect_ratios", f"expected a list of [rows, columns], got {value!r:.60}")
    return len(value)


def patches(c: Cfg) -> Sym:
    """Patches per tile plus the class token, kept symbolic: the tile table's width holds it, so
    a printout (which shows that table, not the position table) can solve for it."""
    side = c.int("image_size") // c.int("patch_size")
    return side * side + 1


def layer(c: Cfg, gated: bool) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attn = block(
        "self_attn", *(linear(n, h, h, bias=False) for n in ("q_proj", "k_proj", "v_proj", "o_proj")), kind="attention"
    )
    gates = (
        (Tensor("gate_attn", (1,), kind="attention"), Tensor("gate_ffn", (1,), kind="feed_forward")) if gated else ()
    )
    return (
        attn,
        mlp("mlp", h, c.int("intermediate_size"), names=("fc1", "fc2")),
        norm("input_layernorm", h),
        norm("post_attention_layernorm", h),
        *gates,
    )


def tile_embedding(name: str, c: Cfg) -> Block:
    h, ratios, tiles = c.int("hidden_size"), aspect_ratios(c), c.int("max_num_tiles")
    # an nn.Embedding of one row per aspect-ratio id (MllamaPrecomputedAspectRatioEmbedding)
    table = Block("embedding", (Tensor("weight", (ratios + 1, tiles * h)),), kind="embeddings")
    return block(name, table, Tensor("gate", (1,)), kind="embeddings")


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, p, n = c.int("hidden_size"), c.int("patch_size"), patches(c)
    ratios, tiles = aspect_ratios(c), c.int("max_num_tiles")
    positions = block(
        "gated_positional_embedding",
        Tensor("gate", (1,)),
        Tensor("embedding", (n, h)),
        # an nn.Embedding too (MllamaPrecomputedPositionEmbedding.tile_embedding)
        Block("tile_embedding", (Tensor("weight", (ratios + 1, tiles * n * h)),), kind="embeddings"),
        kind="embeddings",
    )
    local = Block("layers", layer(c, False), repeat=c.int("num_hidden_layers"), label="layer")
    global_ = Block("layers", layer(c, True), repeat=c.int("num_global_layers", low=0), label="layer")
    return (
        Block("patch_embedding", (Tensor("weight", (h, c.int("num_channels"), p, p)),), kind="embeddings"),
        Tensor("class_embedding", (h,), kind="embeddings"),
        positions,
        tile_embedding("pre_tile_positional_embedding", c),
        tile_embedding("post_tile_positional_embedding", c),
        norm("layernorm_pre", h),
        norm("layernorm_post", h),
        Block("transformer", (local,)),
        Block("global_transformer", (global_,)),
    )


def check(c: Cfg) -> None:
    for field in ("image_size", "patch_size"):
        if not isinstance(c.get(field), int):
            raise c.error(field, f"expected one whole number, got {c.get(field)!r:.40}")
    c.divides("hidden_size", "attention_heads")


FAMILY = Family(
    model_type="mllama_vision_model",
    defaults=DEFAULTS,
    backbone="MllamaVisionModel",
    check=check,
    classes={"MllamaVisionModel": base(backbone)},
)

__all__ = ["FAMILY", "backbone", "patches"]
