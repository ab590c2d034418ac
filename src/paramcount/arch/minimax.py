"""MiniMax-01 (MiniMax 2025): lightning attention (linear attention with fused QKV, an RMSNorm
over all heads and a sigmoid output gate) interleaved with softmax GQA attention by
``layer_types`` (transformers' default alternates, starting with full attention), and Mixtral's
routed experts in every layer. The residual alpha/beta factors (``postnorm``) have no shape.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, llama, mistral, mixtral
from . import linear_attention as la
from .blocks import decoder_classes, typed_decoder
from .config import Cfg

DEFAULTS = {
    **mistral.DEFAULTS,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "layer_types": None,
}

ALIASES = mixtral.ALIASES


def layer_types(c: Cfg) -> list[str]:
    """``layer_types``, else full attention at even layers and lightning at odd ones (the
    config's ``__post_init__``; a checkpoint's own ``attn_type_list`` is not read by it)."""
    return la.layer_types(c, lambda i: la.FULL if i % 2 == 0 else la.LINEAR)


def layer(c: Cfg, layer_type: Hashable) -> tuple[Node, ...]:
    if layer_type == la.FULL:
        attn = mistral.self_attn(c)
    else:
        attn = la.lightning(c, c.int("num_attention_heads"), llama.head_dim(c))
    return llama.rms_layer(c, attn, mixtral.sparse_moe(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, layer_types(c), layer)


def check(c: Cfg) -> None:
    mixtral.check(c)
    layer_types(c)


def attn_type_note(c: Cfg) -> list[str]:
    """MiniMax's own checkpoints mark each layer in ``attn_type_list`` (0 lightning, 1 softmax);
    transformers' config ignores it and builds its default schedule unless ``layer_types`` is set."""
    given = c.raw.get("attn_type_list")
    if given is None or c.get("layer_types", None) is not None:
        return []
    if not isinstance(given, list) or not all(t in (0, 1) for t in given):
        return [f"attn_type_list = {given!r:.80} is not read by transformers, nor here"]
    mine = [1 if t == la.FULL else 0 for t in layer_types(c)]
    if given == mine:
        return []
    return [
        "attn_type_list is not read by transformers: it builds softmax attention at even layers and lightning "
        "at odd ones, as counted here; give layer_types (1 → full_attention, 0 → linear_attention) "
        "for the checkpoint's own schedule"
    ]


def notes(c: Cfg, cls: str) -> list[str]:
    out = attn_type_note(c)
    shared = c.raw.get("shared_intermediate_size")
    if shared not in (0, None):
        out.append(
            f"shared_intermediate_size = {shared!r}: transformers' MiniMax builds no shared expert, nor is one counted"
        )
    return out


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """MiniMaxCache: softmax layers keep every key and value (no window: it is built without the
    config), lightning layers one heads × d × d state each, in the model's dtype."""
    from .cache import LayerKind, state_kind

    kv, d, a = int(mistral.kv_heads(c)), int(llama.head_dim(c)), int(c.int("num_attention_heads"))
    kinds = la.hybrid_cache(
        c,
        layer_types(c),
        lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
        lambda n, where: [state_kind(n, a * d * d, "recurrent state", where)],
    )
    said = "lightning-attention layers keep one fixed-size state per head (head_dim × head_dim) instead of a KV cache"
    return kinds, [said]


FAMILY = Family(
    model_type="minimax",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="MiniMaxModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("MiniMax", backbone),
)
