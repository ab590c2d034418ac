"""Shared pieces of vision encoders: a patch embedding (a convolution with kernel = stride =
patch), a class token, learned position embeddings over the patches, and registers.

A sibling of ``blocks.py`` (a family module imports it; it is no family itself).
"""

from __future__ import annotations

from ..ir import Block, Sym, Tensor
from .blocks import block
from .config import Cfg


def pair(c: Cfg, field: str) -> tuple[Sym, Sym]:
    """``image_size`` / ``patch_size``: one integer for a square, or ``[height, width]``."""
    name, value = c.lookup(field)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        h, w = value
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 20 for v in (h, w)):
            return Sym(h, f"{field}_h"), Sym(w, f"{field}_w")
        raise c.error(name, f"expected two positive integers, got {value!r}")
    side = c.int(field, high=1 << 20)
    return side, side


def num_patches(c: Cfg, image: str = "image_size", patch: str = "patch_size") -> Sym:
    """Patches per image: (H/p)·(W/p), as the patch embedding's stride leaves them."""
    (ih, iw), (ph, pw) = pair(c, image), pair(c, patch)
    if ph > ih or pw > iw:
        raise c.error(patch, f"a {int(ph)}×{int(pw)} patch does not fit a {int(ih)}×{int(iw)} image")
    return (ih // ph) * (iw // pw)


def conv2d(name: str, c_in: int, c_out: int, kh: int, kw: int, bias: bool = True) -> Block:
    """nn.Conv2d: weight (out, in, kh, kw), bias (out)."""
    weight = Tensor("weight", (c_out, c_in, kh, kw))
    return Block(name, (weight, Tensor("bias", (c_out,))) if bias else (weight,))


def patch_projection(c: Cfg, hidden: Sym, name: str = "projection", channels: str = "num_channels") -> Block:
    """The patch embedding: a convolution from the image's channels to the width, one step a patch."""
    ph, pw = pair(c, "patch_size")
    return conv2d(name, c.int(channels), hidden, ph, pw)


def token(name: str, hidden: Sym, count: int = 1) -> Tensor:
    """A learned token (class, mask, register) as transformers stores it: (1, count, h)."""
    return Tensor(name, (1, count, hidden))


def embeddings(
    c: Cfg, hidden: Sym, *, mask: bool = False, registers: int = 0, mask_shape: str = "3d", name: str = "embeddings"
) -> Block:
    """ViT-style embeddings: class token, optional mask token and registers, position embeddings
    for the class token and every patch, and the patch projection."""
    mask_token = None
    if mask:
        mask_token = token("mask_token", hidden) if mask_shape == "3d" else Tensor("mask_token", (1, hidden))
    return block(
        name,
        token("cls_token", hidden),
        mask_token,
        token("register_tokens", hidden, registers) if registers else None,
        Tensor("position_embeddings", (1, num_patches(c) + 1, hidden)),
        block("patch_embeddings", patch_projection(c, hidden)),
        kind="embeddings",
    )


def no_cache(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """An image encoder attends over its whole input in one pass: it keeps no KV cache."""
    return [], ["an image encoder attends over all its patches in one pass and keeps no KV cache"]


def tokens(c: Cfg) -> int:
    """The tokens one image becomes: its patches and the class token."""
    return int(num_patches(c)) + 1
