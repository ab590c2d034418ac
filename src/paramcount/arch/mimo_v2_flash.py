"""MiMo-V2-Flash (Xiaomi 2025): a hybrid of sliding-window and full attention (``layer_types``;
by default full at layer 0 and every sixth layer from 5, sliding elsewhere) where the two kinds
differ in shape: sliding layers have twice the KV heads and a learned attention sink per query
head (``sinks``), full layers neither. Queries and keys are ``head_dim`` wide, values
``v_head_dim``; q/k/v are biased behind ``attention_bias``, o_proj never. The MLP is dense or
sparse per layer (``mlp_layer_types``; by default layer 0 dense): sparse layers route top-k over
``n_routed_experts`` experts with a sigmoid router whose ``e_score_correction_bias`` is a buffer,
and no shared expert."""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor
from . import Family, gpt_oss, llama, moe
from .blocks import block, decoder_classes, embedding, gated_mlp, linear, norm, typed_stacks
from .config import Cfg

DEFAULTS = {
    "vocab_size": 152576,
    "hidden_size": 4096,
    "intermediate_size": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 2048,
    "num_experts_per_tok": 8,
    "n_routed_experts": 256,
    "sliding_window": 129,
    "layer_types": None,
    "mlp_layer_types": None,
}

# MiMoV2FlashConfig.attribute_map: the mapped name wins when a file has both.
ALIASES = {"n_routed_experts": ("num_local_experts",)}
MLP_TYPES = ("dense", "sparse")
# Fields of Xiaomi's own config.json that transformers' MiMoV2FlashConfig does not read.
UNREAD = ("hybrid_layer_pattern", "moe_layer_freq", "swa_num_attention_heads", "swa_num_key_value_heads")


def routed(c: Cfg) -> Any:
    field = "num_local_experts" if c.raw.get("num_local_experts") is not None else "n_routed_experts"
    return c.int(field)


def attention_types(c: Cfg) -> list[str]:
    n = int(c.int("num_hidden_layers"))
    default = ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    return gpt_oss.layer_types(c, default)


def mlp_types(c: Cfg) -> list[str]:
    n = int(c.int("num_hidden_layers"))
    types: Any = c.get("mlp_layer_types")
    if types is None:
        return ["dense"] + ["sparse"] * (n - 1)
    if not isinstance(types, list) or len(types) != n or any(t not in MLP_TYPES for t in types):
        raise c.error("mlp_layer_types", f"expected a list of {n} entries, each 'dense' or 'sparse', got {types!r}")
    return types


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, ("num_key_value_heads", "head_dim", "v_head_dim"))
    gpt_oss.check_heads(c, c.int("num_key_value_heads"))
    moe.top_k(c, routed(c))
    attention_types(c)
    mlp_types(c)


def kv_heads(c: Cfg, sliding: bool) -> Any:
    """Sliding layers keep twice the configured KV heads."""
    kv = c.int("num_key_value_heads")
    return 2 * kv if sliding else kv


def self_attn(c: Cfg, sliding: bool) -> Block:
    """Q/K of head_dim, V of v_head_dim; o_proj reads a·v_head_dim; a sink per head when sliding."""
    h, a, d, dv = (c.int(f) for f in ("hidden_size", "num_attention_heads", "head_dim", "v_head_dim"))
    kv, bias = kv_heads(c, sliding), c.bool("attention_bias")
    return block(
        "self_attn",
        linear("q_proj", h, a * d, bias),
        linear("k_proj", h, kv * d, bias),
        linear("v_proj", h, kv * dv, bias),
        linear("o_proj", a * dv, h, bias=False),
        Tensor("sinks", (a,)) if sliding else None,  # one learned logit per head that soaks up attention
        kind="attention",
    )


def mlp(c: Cfg, sparse: bool) -> Block:
    h = c.int("hidden_size")
    if not sparse:
        return gated_mlp("mlp", h, c.int("intermediate_size"))
    n = routed(c)
    return block("mlp", moe.experts(n, h, c.int("moe_intermediate_size"), moe.top_k(c, n)), moe.router("gate", h, n))


def backbone(c: Cfg) -> tuple[Node, ...]:
    """One stack per run of alike (attention, MLP) kinds; each attention and MLP built once."""
    h, n = c.int("hidden_size"), c.int("num_hidden_layers")
    attn = {t: self_attn(c, t == "sliding_attention") for t in set(attention_types(c))}
    ffn = {t: mlp(c, t == "sparse") for t in set(mlp_types(c))}
    kinds = list(zip(attention_types(c), mlp_types(c), strict=True))
    layers = typed_stacks("layers", kinds, lambda kind: llama.rms_layer(c, attn[kind[0]], ffn[kind[1]]), count=n)
    return (embedding("embed_tokens", c.int("vocab_size"), h), *layers, norm("norm", h, bias=False))


def notes(c: Cfg, cls: str) -> list[str]:
    out = moe.correction_note([(0, 1, "sparse" in mlp_types(c))])
    unread = [f for f in UNREAD if f in c.raw]
    if unread:
        out.append(
            f"{', '.join(unread)}: fields of Xiaomi's own config that transformers does not read (it takes "
            "layer_types and mlp_layer_types, or their defaults); counted as transformers builds the model"
        )
    return out


def window(c: Cfg) -> int:
    """``sliding_window``, or Xiaomi's ``sliding_window_size`` + 1 (the query too), as the config sets it."""
    size = c.raw.get("sliding_window_size")
    if size is not None:
        return int(c.int("sliding_window_size")) + 1
    return int(c.int("sliding_window"))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import LayerKind, typed_groups, window_notes

    n, d, dv = (int(c.int(f)) for f in ("num_hidden_layers", "head_dim", "v_head_dim"))
    kinds = []
    for name, (count, where) in typed_groups(c, "layer_types", attention_types(c), n).items():
        sliding = name == "sliding_attention"
        w = window(c) if sliding else None
        kinds.append(LayerKind("sliding" if sliding else "full", count, int(kv_heads(c, sliding)), d, dv, w, where))
    return kinds, window_notes(kinds)


FAMILY = Family(
    model_type="mimo_v2_flash",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="MiMoV2FlashModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("MiMoV2Flash", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY"]
