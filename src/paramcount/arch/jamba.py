"""Jamba (AI21 2024): Mamba (v1) mixers with softmax attention every ``attn_layer_period``-th
layer (from ``attn_layer_offset``) and routed experts every ``expert_layer_period``-th layer
(from ``expert_layer_offset``), the others a SwiGLU MLP. Jamba's Mamba mixer adds RMSNorms
over the step-size input, B and C; attention is bias-free GQA without positions.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from ..ir import Node, Sym
from . import Family, llama, mistral, moe
from .blocks import block, decoder_classes, fused_experts, norm, router, typed_decoder
from .config import Cfg, per_cfg
from .ssm import ATTENTION, MAMBA, STATE_NOTE, hybrid_cache, mamba_mixer, states

DEFAULTS = {
    "vocab_size": 65536,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": None,
    "tie_word_embeddings": False,
    "num_experts_per_tok": 2,
    "num_experts": 16,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_dt_rank": "auto",
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
}
ALIASES = {"num_experts": ("num_local_experts",)}


def inner(c: Cfg) -> Sym:
    return c.int("mamba_expand") * c.int("hidden_size")


def rank(c: Cfg) -> Sym:
    """``mamba_dt_rank``: "auto" is ceil(h / 16), as JambaConfig sets it."""
    if c.get("mamba_dt_rank") == "auto":
        return Sym(math.ceil(int(c.int("hidden_size")) / 16), "⌈h/16⌉")
    return c.int("mamba_dt_rank")


def every(c: Cfg, period: str, offset: str) -> tuple[int, int]:
    """(period, offset) of a layer schedule; the offset must fall inside the period."""
    p, o = int(c.int(period)), int(c.int(offset, low=0))
    if o >= p:
        raise c.error(offset, f"{o} must be smaller than {period} ({p})")
    return p, o


def layer_kinds(c: Cfg) -> list[tuple[str, bool]]:
    """(mixer type, routes experts) per layer, as ``layers_block_type`` and ``layers_num_experts``
    decide them: attention where i % attn_layer_period == attn_layer_offset, experts where
    i % expert_layer_period == expert_layer_offset (and there is more than one expert)."""
    ap, ao = every(c, "attn_layer_period", "attn_layer_offset")
    ep, eo = every(c, "expert_layer_period", "expert_layer_offset")
    routed = int(c.int("num_experts")) > 1
    return [
        (ATTENTION if i % ap == ao else MAMBA, routed and i % ep == eo) for i in range(int(c.int("num_hidden_layers")))
    ]


@per_cfg
def sparse_moe(c: Cfg) -> Node:
    h, n = c.int("hidden_size"), c.int("num_experts")
    k, inter = moe.top_k(c, n), c.int("intermediate_size")
    return block("feed_forward", router("router", h, n), fused_experts(n, h, inter, k))


@per_cfg
def mixer(c: Cfg, kind: str) -> Node:
    if kind == ATTENTION:
        return mistral.self_attn(c)
    h, conv_bias = c.int("hidden_size"), c.bool("mamba_conv_bias")
    state, kernel, bias = c.int("mamba_d_state"), c.int("mamba_d_conv"), c.bool("mamba_proj_bias")
    return mamba_mixer(h, inner(c), state, rank(c), kernel, bias, conv_bias, name="mamba", dt_norms=True)


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    mixer_type, sparse = kind  # type: ignore[misc]
    h = c.int("hidden_size")
    ff = sparse_moe(c) if sparse else mistral.swiglu(c, name="feed_forward")
    return mixer(c, mixer_type), ff, norm("input_layernorm", h, bias=False), norm("pre_ff_layernorm", h, bias=False)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, layer_kinds(c), layer, final_norm="final_layernorm")


def check(c: Cfg) -> None:
    llama.check(c)
    moe.top_k(c, c.int("num_experts"))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """Attention layers cache keys and values; Mamba layers a conv window (I × K) and an fp32
    SSM state (I × S), constant in the context."""
    from .cache import LayerKind

    kv, d, i = int(mistral.kv_heads(c)), int(llama.head_dim(c)), int(inner(c))
    conv, ssm = i * int(c.int("mamba_d_conv")), i * int(c.int("mamba_d_state"))
    kinds = hybrid_cache(
        c,
        "attn_layer_period",
        [t for t, _ in layer_kinds(c)],
        {
            ATTENTION: lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
            MAMBA: lambda n, where: states(n, where, conv, ssm),
        },
    )
    return kinds, [STATE_NOTE]


FAMILY = Family(
    model_type="jamba",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="JambaModel",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes("Jamba", backbone, heads=("ForCausalLM", "ForSequenceClassification")),
)
