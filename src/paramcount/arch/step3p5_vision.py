"""Step 3.7's image encoder on its own (``Step3p7VisionConfig``, model_type ``step3p5_vision``):
a Perception Encoder ViT. A bias-free convolution over ``patch_size``² patches, a learned
position table of (image_size / patch_size)² rows (resampled to other grids; 2-D rotary
positions add no parameter), a LayerNorm before the layers, then pre-norm layers of biased
q/k/v/out projections and a biased MLP of ``int(hidden_size · mlp_ratio)`` (the config sets
``intermediate_size`` so, whatever a file says), with a LayerScale (one learned scale per
channel) after attention and after the MLP. Two stride-2 3×3 convolutions then shrink the grid
4× a side and widen it to 4h: what the composite's projector reads.

The released config.json names the widths the Perception Encoder way (``width``, ``layers``,
``heads``); the config class takes those over ``hidden_size``, ``num_hidden_layers`` and
``num_attention_heads`` when a file has both.
"""

from __future__ import annotations

from ..ir import Block, Node, Sym, Tensor
from . import Family, bart
from .blocks import base, block, embedding, mlp, norm
from .config import MAX_DIM, MAX_FACTOR, SYMBOLS, Cfg
from .vision import conv2d, no_cache

DEFAULTS = {
    "hidden_size": 1536,
    "num_hidden_layers": 47,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 728,
    "patch_size": 14,
    "mlp_ratio": 8960 / 1536,
}
# Step3p7VisionConfig.__post_init__ pops these and lets them win over the fields.
LEGACY = {"hidden_size": "width", "num_hidden_layers": "layers", "num_attention_heads": "heads"}


def named(c: Cfg, field: str) -> str:
    """The name a field is read under: its Perception Encoder name where the file has that."""
    legacy = LEGACY[field]
    return legacy if c.raw.get(legacy) is not None else field


def dim(c: Cfg, field: str) -> Sym:
    return Sym(int(c.int(named(c, field))), SYMBOLS.get(field, field))  # the field's symbol, either name


def grid(c: Cfg) -> Sym:
    """Patches a side at ``image_size``: the position table has its square."""
    side, patch = c.int("image_size", high=1 << 20), c.int("patch_size", high=1 << 12)
    if patch > side:
        raise c.error("patch_size", f"a {int(patch)}-px patch does not fit a {int(side)}-px image")
    return side // patch


def inner(c: Cfg) -> Sym:
    """``int(hidden_size · mlp_ratio)``, as ``__post_init__`` overwrites ``intermediate_size``."""
    h, ratio = dim(c, "hidden_size"), c.number("mlp_ratio", low=0, high=MAX_FACTOR)
    width = int(int(h) * ratio)
    if not 1 <= width <= MAX_DIM:
        raise c.error("mlp_ratio", f"{ratio!r} gives an MLP width of {width:,} (hidden size {int(h)})")
    return Sym(width, "I")


def check(c: Cfg) -> None:
    h, a = dim(c, "hidden_size"), dim(c, "num_attention_heads")
    if h % a:
        raise c.error(named(c, "hidden_size"), f"{int(h)} is not divisible by the {int(a)} attention heads")
    inner(c)
    grid(c)


def layer(c: Cfg) -> tuple[Node, ...]:
    h = dim(c, "hidden_size")
    attn = bart.attention("self_attn", h)  # biased k, v, q, out projections, h → h
    scales = [Tensor(f"lambda_{i}", (h,), kind="other") for i in (1, 2)]  # LayerScale
    return (attn, mlp("mlp", h, inner(c)), norm("layernorm_before", h), norm("layernorm_after", h), *scales)


def encoder(c: Cfg) -> tuple[Node, ...]:
    """Everything before the downsampler: patches, positions, the pre-norm and the layers."""
    h = dim(c, "hidden_size")
    patches = conv2d("patch_embedding", c.int("num_channels"), h, c.int("patch_size"), c.int("patch_size"), bias=False)
    side = grid(c)
    positions = embedding("position_embedding", side * side, h)
    return (
        block("embeddings", patches, positions, kind="embeddings"),
        norm("pre_layernorm", h),
        Block("layers", layer(c), repeat=dim(c, "num_hidden_layers"), label="layer"),
    )


def downsampler(c: Cfg) -> tuple[Block, ...]:
    """Two 3×3 stride-2 convolutions, h → 2h → 4h (biased)."""
    h = dim(c, "hidden_size")
    return (
        Block("downsampler1", conv2d("", h, 2 * h, 3, 3).children, kind="feed_forward"),
        Block("downsampler2", conv2d("", 2 * h, 4 * h, 3, 3).children, kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    return (*encoder(c), *downsampler(c))


def tokens(c: Cfg) -> int:
    """The patches of one image at the config's size (the encoder runs over them all)."""
    return int(grid(c)) ** 2


FAMILY = Family(
    model_type="step3p5_vision",
    defaults=DEFAULTS,
    aliases={f: (legacy,) for f, legacy in LEGACY.items()},
    backbone="Step3p7VisionModel",
    check=check,
    cache_layout=no_cache,
    max_tokens=tokens,
    extra_fields=tuple(LEGACY.values()),
    classes={"Step3p7VisionModel": base(backbone)},
)

__all__ = ["FAMILY", "backbone", "dim", "downsampler", "encoder", "grid", "inner"]
