"""Llama 4's text model (Meta 2025): Llama attention (GQA, parameter-free L2 q/k norm, no-RoPE
layers) with MoE layers at ``moe_layers`` (default every ``interleave_moe_layer_step``-th):
one routed expert of ``intermediate_size`` per token plus an always-active shared expert;
the other layers are dense MLPs of ``intermediate_size_mlp``. transformers holds the experts
as (E, h, 2I) and (E, I, h) tensors."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor
from . import Family, llama
from .blocks import attention, base, embedding, gated_mlp, lm_head, norm, router, typed_stacks, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 202048,
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": False,
    "num_experts_per_tok": 1,
    "num_local_experts": 16,
    "moe_layers": None,
    "interleave_moe_layer_step": 1,
    "attention_bias": False,
}


def moe_layers(c: Cfg) -> set[int]:
    """``moe_layers``, else every ``interleave_moe_layer_step``-th layer from step − 1."""
    given = c.raw.get("moe_layers")
    if given is not None:
        if not isinstance(given, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in given):
            raise c.error("moe_layers", f"expected a list of layer indices, got {given!r:.60}")
        return set(given)
    step = int(c.int("interleave_moe_layer_step"))
    if step < 1:
        raise c.error("interleave_moe_layer_step", f"must be at least 1, got {step}")
    return set(range(step - 1, int(c.int("num_hidden_layers")), step))


def moe(c: Cfg) -> Block:
    h, i, e = c.int("hidden_size"), c.int("intermediate_size"), c.int("num_local_experts")
    k = c.int("num_experts_per_tok")
    per_expert = gated_mlp("", h, i, kind="experts").children
    active = (int(k), int(e))
    experts = Block(
        "experts",
        (Tensor("gate_up_proj", (e, h, 2 * i)), Tensor("down_proj", (e, i, h))),
        kind="experts",
        active=active,
        checkpoint=Block("experts", per_expert, repeat=e, kind="experts", active=active),
    )
    shared = gated_mlp("shared_expert", h, i, kind="feed_forward")
    return Block("feed_forward", (experts, router("router", h, e), shared), kind="experts")


def layer(c: Cfg, is_moe: bool) -> tuple[Node, ...]:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    kv = c.opt_int("num_key_value_heads") or a
    attn = attention("self_attn", h, a, kv, llama.head_dim(c), bias=c.bool("attention_bias"))
    ff = moe(c) if is_moe else gated_mlp("feed_forward", h, c.int("intermediate_size_mlp"))
    return attn, ff, norm("input_layernorm", h, bias=False), norm("post_attention_layernorm", h, bias=False)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), int(c.int("num_hidden_layers"))
    sparse = moe_layers(c)
    kinds = [i in sparse for i in range(n)]
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        *typed_stacks("layers", kinds, lambda is_moe: layer(c, bool(is_moe)), count=c.int("num_hidden_layers")),
        norm("norm", h, bias=False),
    )


def check(c: Cfg) -> None:
    a = c.int("num_attention_heads")
    kv = c.opt_int("num_key_value_heads") or a
    if int(a) % int(kv):
        raise c.error("num_key_value_heads", f"{kv} does not divide num_attention_heads ({a})")
    moe_layers(c)


def layer_types(c: Cfg) -> list[str]:
    """``layer_types`` as the config builds it: RoPE layers (``no_rope_layers`` 1, by default
    all but every ``no_rope_layer_interval``-th) use chunked attention, NoPE layers full."""
    given = c.raw.get("layer_types")
    if given is not None:
        return given
    n = int(c.int("num_hidden_layers"))
    rope = c.raw.get("no_rope_layers")
    if not rope:
        interval = c.raw.get("no_rope_layer_interval", 4)
        if not isinstance(interval, int) or interval < 1:
            raise c.error("no_rope_layer_interval", f"must be a positive integer, got {interval!r}")
        rope = [int((i + 1) % interval != 0) for i in range(n)]
    return ["chunked_attention" if r else "full_attention" for r in rope]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Chunked layers keep at most ``attention_chunk_size`` tokens (DynamicCache treats the
    chunk as a sliding window); the NoPE layers keep every token."""
    from .cache import self_kinds

    chunk = c.raw.get("attention_chunk_size", 8192)
    raw = {**c.raw, "layer_types": layer_types(c), "attention_chunk_size": chunk}
    seen = Cfg(raw, c.defaults, c.source, c.aliases)
    a = c.int("num_attention_heads")
    kv, d = int(c.opt_int("num_key_value_heads") or a), int(llama.head_dim(c))
    return self_kinds(seen, model_type, (kv, d, d))


FAMILY = Family(
    model_type="llama4_text",
    defaults=DEFAULTS,
    backbone="Llama4TextModel",
    check=check,
    cache_layout=cache_layout,
    classes={
        "Llama4TextModel": base(backbone),
        "Llama4ForCausalLM": with_head(backbone, "model", lm_head("embed_tokens.weight")),
    },
)
