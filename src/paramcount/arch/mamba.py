"""Mamba (Gu and Dao 2023): an attention-free stack of selective state-space mixers, each
behind one RMSNorm; a tied LM head by default."""

from __future__ import annotations

import math

from ..ir import Node, Sym
from . import Family
from .blocks import base, embedding, lm_head, norm, stack, with_head
from .config import Cfg
from .ssm import mamba_mixer, states

DEFAULTS = {
    "vocab_size": 50280,
    "hidden_size": 768,
    "state_size": 16,
    "num_hidden_layers": 32,
    "expand": 2,
    "conv_kernel": 4,
    "use_bias": False,
    "use_conv_bias": True,
    "time_step_rank": "auto",
    "tie_word_embeddings": True,
}


def inner(c: Cfg) -> Sym:
    return c.int("hidden_size") * c.int("expand")


def rank(c: Cfg) -> Sym:
    """``time_step_rank``: "auto" is ceil(h / 16), as MambaConfig sets it."""
    value = c.get("time_step_rank")
    if value == "auto":
        return Sym(math.ceil(int(c.int("hidden_size")) / 16), "⌈h/16⌉")
    return c.int("time_step_rank")


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    mixer = mamba_mixer(
        h, inner(c), c.int("state_size"), rank(c), c.int("conv_kernel"), c.bool("use_bias"), c.bool("use_conv_bias")
    )
    return (
        embedding("embeddings", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), norm("norm", h, bias=False), mixer),
        norm("norm_f", h, bias=False),
    )


def cache(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    n, i = int(c.int("num_hidden_layers")), int(inner(c))
    where = f"0–{n - 1}" if n > 1 else "0"
    kinds = states(n, where, i * int(c.int("conv_kernel")), i * int(c.int("state_size")))
    return kinds, ["Mamba keeps no KV cache: a conv state and an SSM state per layer, whatever the context"]


FAMILY = Family(
    model_type="mamba",
    defaults=DEFAULTS,
    backbone="MambaModel",
    cache_layout=cache,
    classes={
        "MambaModel": base(backbone),
        "MambaForCausalLM": with_head(backbone, "backbone", lm_head("embeddings.weight")),
    },
)
