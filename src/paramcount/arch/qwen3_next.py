"""Qwen3-Next (Qwen team 2025): a hybrid of gated DeltaNet layers (``linear_attn``) and gated
full attention (``self_attn``: q_proj doubled for a per-head output gate, q/k RMSNorms, partial
rotary), every ``full_attention_interval``-th layer full (or per ``layer_types``); Qwen2-MoE's
feed-forward: routed experts plus a gated shared expert, dense layers by
``decoder_sparse_step`` and ``mlp_only_layers``.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, llama, mistral, qwen2_moe
from . import linear_attention as la
from .blocks import decoder_classes, typed_decoder
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 48,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "decoder_sparse_step": 1,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts_per_tok": 10,
    "num_experts": 512,
    "mlp_only_layers": None,
    "layer_types": None,
}


def mixer(c: Cfg, layer_type: str, fused: bool = True) -> Node:
    return la.gated_attention(c) if layer_type == la.FULL else la.gated_deltanet(c, fused)


def layer_kinds(c: Cfg) -> list[tuple[str, bool]]:
    """(mixer type, routes experts) of every layer."""
    sparse = [s for _, n, s in qwen2_moe.sparse_runs(c) for _ in range(n)]
    return list(zip(la.interval_types(c), sparse, strict=True))


@per_cfg
def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    layer_type, sparse = kind  # type: ignore[misc]
    return llama.rms_layer(c, mixer(c, layer_type), qwen2_moe.sparse_moe(c) if sparse else mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, layer_kinds(c), layer)


def check(c: Cfg) -> None:
    la.check_heads(c)
    la.check_deltanet(c)
    qwen2_moe.check_top_k(c)


def notes(c: Cfg, cls: str) -> list[str]:
    sparse = int(qwen2_moe.num_experts(c)) > 0
    return la.mtp_note(c, "num_nextn_predict_layers", layer(c, (la.FULL, sparse)))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """Full-attention layers cache keys and values (GQA heads × head_dim); DeltaNet layers keep
    a conv window and an fp32 recurrent state, constant in the context."""
    from .cache import LayerKind

    kv, d = int(c.int("num_key_value_heads")), int(c.int("head_dim"))
    kinds = la.hybrid_cache(
        c,
        la.interval_types(c),
        lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
        lambda n, where: la.deltanet_states(c, n, where),
    )
    return kinds, [la.RECURRENT_NOTE]


FAMILY = Family(
    model_type="qwen3_next",
    defaults=DEFAULTS,
    backbone="Qwen3NextModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("Qwen3Next", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "mixer"]
