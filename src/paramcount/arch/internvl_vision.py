"""InternVL's vision encoder (InternViT, ``InternVLVisionConfig``): ``InternVLVisionModel``, a
ViT with a class token (and a mask token with ``use_mask_token``), learned absolute positions
(unless ``use_absolute_position_embeddings`` is false), a biased patch convolution, layers of
q/k/v (biased with ``attention_bias``; RMS q/k norms over the whole width with ``use_qk_norm``)
and a biased output ``projection_layer``, a biased GELU MLP, LayerNorms or RMSNorms
(``norm_type``) and two layer-scale vectors; a final LayerNorm unless ``use_mean_pooling``."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import block, linear, mlp, norm, stack
from .config import Cfg
from .vision import no_cache, num_patches, patch_projection, token

DEFAULTS = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "attention_bias": False,
    "use_qk_norm": False,
    "intermediate_size": 4096,
    "norm_type": "layer_norm",
    "image_size": (448, 448),
    "patch_size": (14, 14),
    "num_channels": 3,
    "use_mask_token": False,
    "use_absolute_position_embeddings": True,
    "use_mean_pooling": True,
}
NORMS = ("layer_norm", "rms_norm")


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    if c.str("norm_type") not in NORMS:
        raise c.error("norm_type", f"expected one of {', '.join(NORMS)}, got {c.get('norm_type')!r}")


def embeddings(c: Cfg) -> Block:
    h = c.int("hidden_size")
    positions = (num_patches(c) + 1, h)
    return block(
        "embeddings",
        token("cls_token", h),
        token("mask_token", h) if c.bool("use_mask_token") else None,
        Tensor("position_embeddings", (1, *positions)) if c.bool("use_absolute_position_embeddings") else None,
        block("patch_embeddings", patch_projection(c, h)),
        kind="embeddings",
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h, bias, rms = c.int("hidden_size"), c.bool("attention_bias"), c.str("norm_type") == "rms_norm"
    qk = (norm("q_norm", h, bias=False), norm("k_norm", h, bias=False)) if c.bool("use_qk_norm") else ()
    attention = block(
        "attention",
        *(linear(p, h, h, bias) for p in ("q_proj", "k_proj", "v_proj")),
        linear("projection_layer", h, h),
        *qk,
        kind="attention",
    )
    scales = Block("", (Tensor("lambda_1", (h,)), Tensor("lambda_2", (h,))), kind="other")
    norms = (norm("layernorm_before", h, bias=not rms), norm("layernorm_after", h, bias=not rms))
    return (*scales.children, attention, mlp("mlp", h, c.int("intermediate_size")), *norms)


def encoder(c: Cfg) -> tuple[Node, ...]:
    final = None if c.bool("use_mean_pooling") else norm("layernorm", c.int("hidden_size"))
    layers = block("encoder", stack("layer", c.int("num_hidden_layers"), *layer(c)))
    return tuple(n for n in (embeddings(c), layers, final) if n is not None)


def model(c: Cfg) -> Block:
    return Block("", encoder(c), label="backbone")


FAMILY = Family(
    model_type="internvl_vision",
    defaults=DEFAULTS,
    backbone="InternVLVisionModel",
    check=check,
    cache_layout=no_cache,
    max_tokens=lambda c: int(num_patches(c)) + 1,
    classes={"InternVLVisionModel": model},
)
