"""Falcon-H1 (TII 2025): every layer runs attention and a Mamba-2 mixer in parallel on the same
normed input and sums them, then a SwiGLU MLP. The mixer's width is ``mamba_d_ssm`` (else
``mamba_expand`` × h); its gated RMSNorm exists only with ``mamba_rms_norm``; ``projectors_bias``
biases its output projection alone. The µP multipliers (``*_multiplier(s)``) scale activations
and change no shape.
"""

from __future__ import annotations

from typing import Any

from ..ir import Node, Sym
from . import Family, llama, mistral
from .blocks import decoder_classes, embedding, gated_mlp, norm, stack
from .config import Cfg
from .ssm import STATE_NOTE, check_mamba2, mamba2_mixer, mamba2_states

# FalconH1Config has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 128000,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "mamba_d_ssm": 1024,
    "mamba_n_heads": 128,
    "mamba_d_head": "auto",
    "mamba_n_groups": 1,
    "mamba_d_state": 256,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "mamba_rms_norm": False,
    "projectors_bias": False,
}


def inner(c: Cfg) -> Sym:
    """``mamba_d_ssm`` (absent: the class default), or ``mamba_expand`` × h where the file sets it null."""
    if "mamba_d_ssm" in c.raw and c.raw["mamba_d_ssm"] is None:
        return c.int("mamba_expand") * c.int("hidden_size")
    return c.int("mamba_d_ssm")


def mamba(c: Cfg) -> Node:
    h, heads, groups = c.int("hidden_size"), c.int("mamba_n_heads"), c.int("mamba_n_groups")
    state, kernel = c.int("mamba_d_state"), c.int("mamba_d_conv")
    return mamba2_mixer(
        h,
        inner(c),
        heads,
        groups,
        state,
        kernel,
        c.bool("mamba_proj_bias"),
        c.bool("mamba_conv_bias"),
        name="mamba",
        out_bias=c.bool("projectors_bias"),
        gated_norm=c.bool("mamba_rms_norm"),
    )


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        gated_mlp("feed_forward", h, c.int("intermediate_size"), bias=c.bool("mlp_bias")),
        mamba(c),
        mistral.self_attn(c, bias=c.bool("attention_bias")),
        norm("input_layernorm", h, bias=False),
        norm("pre_ff_layernorm", h, bias=False),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("final_layernorm", h, bias=False),
    )


def check(c: Cfg) -> None:
    mistral.check(c)
    head = None if c.get("mamba_d_head") == "auto" else c.int("mamba_d_head")
    check_mamba2(c, inner(c), "mamba_n_heads", "mamba_n_groups", head)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Every layer is attention and Mamba at once: keys and values, plus a conv window and an
    fp32 SSM state, in every layer."""
    from .cache import LayerKind

    n = int(c.int("num_hidden_layers"))
    where = f"0–{n - 1}" if n > 1 else "0"
    kv, d = int(mistral.kv_heads(c)), int(llama.head_dim(c))
    i, g, s, k = (int(x) for x in (inner(c), c.int("mamba_n_groups"), c.int("mamba_d_state"), c.int("mamba_d_conv")))
    return [LayerKind("full", n, kv, d, d, where=where), *mamba2_states(n, where, i, g, s, k)], [STATE_NOTE]


FAMILY = Family(
    model_type="falcon_h1",
    defaults=DEFAULTS,
    backbone="FalconH1Model",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes("FalconH1", backbone, heads=("ForCausalLM",)),
)
