"""Granite 4.0 (IBM 2025, GraniteMoeHybrid): per ``layer_types``, each layer's mixer is a Mamba-2
mixer (``mamba``) or Granite attention (``self_attn``); every layer then has GraniteMoE's routed
experts (left out when ``num_local_experts`` is 0) plus an always-on ``shared_mlp`` (a fused
SwiGLU: ``input_linear`` h → 2·S, ``output_linear`` S → h). No positions by default (NoPE);
its multipliers change no shape.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node, Sym
from . import Family, granitemoe, llama, mistral, moe
from .blocks import block, decoder_classes, linear, norm, typed_decoder
from .config import Cfg
from .ssm import ATTENTION, MAMBA, STATE_NOTE, check_mamba2, hybrid_cache, layer_types, mamba2_mixer, mamba2_states

DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "shared_intermediate_size": 1024,
    "layer_types": None,
    "mamba_n_heads": 128,
    "mamba_n_groups": 1,
    "mamba_d_state": 256,
    "mamba_d_head": "auto",
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
}
ALIASES = {"layer_types": ("layers_block_type",)}


def inner(c: Cfg) -> Sym:
    return c.int("mamba_expand") * c.int("hidden_size")


def head_dim(c: Cfg) -> Sym | None:
    """``mamba_d_head``: "auto" is I / mamba_n_heads (None here: nothing to check)."""
    return None if c.get("mamba_d_head") == "auto" else c.int("mamba_d_head")


def kinds(c: Cfg) -> list[str]:
    """Each layer's mixer: ``layer_types`` (legacy ``mamba``/``attention`` mapped), all Mamba by default."""
    n = int(c.int("num_hidden_layers"))
    if c.get("layer_types") is None:
        return [MAMBA] * n
    return layer_types(c, "layer_types", n, (MAMBA, ATTENTION))


def mamba(c: Cfg) -> Node:
    h, heads, groups = c.int("hidden_size"), c.int("mamba_n_heads"), c.int("mamba_n_groups")
    state, kernel = c.int("mamba_d_state"), c.int("mamba_d_conv")
    bias, conv_bias = c.bool("mamba_proj_bias"), c.bool("mamba_conv_bias")
    return mamba2_mixer(h, inner(c), heads, groups, state, kernel, bias, conv_bias, name="mamba")


def shared_mlp(c: Cfg) -> Node:
    h, s = c.int("hidden_size"), c.int("shared_intermediate_size")
    return block(
        "shared_mlp",
        linear("input_linear", h, 2 * s, bias=False),
        linear("output_linear", s, h, bias=False),
        kind="feed_forward",
    )


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), c.int("num_local_experts", low=0)
    mixer = mistral.self_attn(c, bias=c.bool("attention_bias")) if kind == ATTENTION else mamba(c)
    return (
        mixer,
        granitemoe.sparse_moe(c, n) if n else None,
        shared_mlp(c),
        norm("input_layernorm", h, bias=False),
        norm("post_attention_layernorm", h, bias=False),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, kinds(c), layer)


def check(c: Cfg) -> None:
    mistral.check(c)
    check_mamba2(c, inner(c), "mamba_n_heads", "mamba_n_groups", head_dim(c))
    n = c.int("num_local_experts", low=0)
    if n:
        moe.top_k(c, n)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """Attention layers cache keys and values; Mamba layers a conv window over I + 2·G·S
    channels and an fp32 SSM state (I × S), constant in the context."""
    from .cache import LayerKind

    kv, d = int(mistral.kv_heads(c)), int(llama.head_dim(c))
    i, g, s, k = (int(x) for x in (inner(c), c.int("mamba_n_groups"), c.int("mamba_d_state"), c.int("mamba_d_conv")))
    found = hybrid_cache(
        c,
        "layer_types",
        kinds(c),
        {
            ATTENTION: lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
            MAMBA: lambda n, where: mamba2_states(n, where, i, g, s, k),
        },
    )
    return found, [STATE_NOTE]


FAMILY = Family(
    model_type="granitemoehybrid",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GraniteMoeHybridModel",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes("GraniteMoeHybrid", backbone, heads=("ForCausalLM",)),
)
