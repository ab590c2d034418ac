"""Mamba-2 (Dao and Gu 2024): state-space duality mixers with one scalar decay per head,
grouped B and C (``n_groups``), a gated RMSNorm before the output projection; an untied LM
head by default."""

from __future__ import annotations

from ..ir import Node, Sym
from . import Family
from .blocks import base, embedding, lm_head, norm, stack, with_head
from .config import Cfg
from .ssm import mamba2_mixer, states

DEFAULTS = {
    "vocab_size": 32768,
    "hidden_size": 4096,
    "state_size": 128,
    "num_hidden_layers": 64,
    "num_heads": 128,
    "head_dim": 64,
    "expand": 2,
    "conv_kernel": 4,
    "n_groups": 8,
    "use_bias": False,
    "use_conv_bias": True,
    "tie_word_embeddings": False,
}


def inner(c: Cfg) -> Sym:
    return c.int("hidden_size") * c.int("expand")


def check(c: Cfg) -> None:
    if inner(c) != c.int("num_heads") * c.int("head_dim"):
        raise c.error(
            "num_heads",
            f"num_heads × head_dim ({int(c.int('num_heads') * c.int('head_dim')):,}) must equal "
            f"expand × hidden_size ({int(inner(c)):,}) for the mixer's reshapes",
        )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    mixer = mamba2_mixer(
        h,
        inner(c),
        c.int("num_heads"),
        c.int("n_groups"),
        c.int("state_size"),
        c.int("conv_kernel"),
        c.bool("use_bias"),
        c.bool("use_conv_bias"),
    )
    return (
        embedding("embeddings", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), norm("norm", h, bias=False), mixer),
        norm("norm_f", h, bias=False),
    )


def cache(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    n, i = int(c.int("num_hidden_layers")), int(inner(c))
    conv_dim = i + 2 * int(c.int("n_groups")) * int(c.int("state_size"))
    ssm = int(c.int("num_heads")) * int(c.int("head_dim")) * int(c.int("state_size"))
    kinds = states(n, f"0–{n - 1}" if n > 1 else "0", conv_dim * int(c.int("conv_kernel")), ssm)
    return kinds, ["Mamba-2 keeps no KV cache: a conv state and an SSM state per layer, whatever the context"]


FAMILY = Family(
    model_type="mamba2",
    defaults=DEFAULTS,
    backbone="Mamba2Model",
    check=check,
    cache_layout=cache,
    classes={
        "Mamba2Model": base(backbone),
        "Mamba2ForCausalLM": with_head(backbone, "backbone", lm_head("embeddings.weight")),
    },
)
