"""Qwen3-MoE (Qwen team 2025): Qwen3 attention (per-head q/k RMSNorms, explicit
``head_dim``) with routed experts and no shared expert; dense layers by
``decoder_sparse_step`` and ``mlp_only_layers`` as in Qwen2-MoE."""

from __future__ import annotations

from ..ir import Node, Sym
from . import Family, llama, mistral, qwen2_moe, qwen3
from .blocks import block, decoder_classes
from .config import Cfg

# Qwen3MoeConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "decoder_sparse_step": 1,
    "moe_intermediate_size": 768,
    "num_experts_per_tok": 8,
    "num_experts": 128,
    "mlp_only_layers": None,
}

ALIASES = {"num_experts": ("num_local_experts",)}


def num_experts(c: Cfg) -> Sym:
    """attribute_map stores ``num_experts`` as ``num_local_experts``, and a file's own
    ``num_local_experts`` is set after the field, so it wins when a file has both."""
    field = "num_local_experts" if c.raw.get("num_local_experts") is not None else "num_experts"
    return c.int(field, low=0)


def check(c: Cfg) -> None:
    mistral.check(c)
    qwen2_moe.check_top_k(c, num_experts)


def layer(c: Cfg, sparse: bool) -> tuple[Node, ...]:
    ff = block("mlp", *qwen2_moe.routed(c, num_experts)) if sparse else mistral.swiglu(c)
    return llama.rms_layer(c, qwen3.self_attn(c), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return qwen2_moe.layer_runs(c, layer, num_experts)


FAMILY = Family(
    model_type="qwen3_moe",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Qwen3MoeModel",
    check=check,
    classes=decoder_classes("Qwen3Moe", backbone, qa_attr="transformer"),
)
