"""Mistral 4 (Mistral AI 2026, ``mistral4``; Mistral Small 4's language model): DeepSeek-V3's
layer at Mistral's shapes, MLA (arch/mla.py; a direct q_proj where ``q_lora_rank`` is null), the
first ``first_k_dense_replace`` layers dense (none by default) and the rest DeepSeek MoE with
shared experts behind a softmax router that has no score-correction bias. The config's
``qk_head_dim`` and ``head_dim`` are recomputed as qk_nope + qk_rope by its ``__post_init__``;
the YaRN and Llama-4 attention scaling have no parameters."""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, mla
from .blocks import decoder_classes
from .config import Cfg, per_cfg
from .llama import rms_layer

# Mistral4Config's defaults (Mistral Small 4's shapes).
DEFAULTS = {
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "n_shared_experts": 1,
    "n_routed_experts": 128,
    "kv_lora_rank": 256,
    "q_lora_rank": 1024,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 64,
    "num_experts_per_tok": 4,
    "first_k_dense_replace": 0,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

# Mistral4Config.attribute_map.
ALIASES = {"n_routed_experts": ("num_local_experts",)}


@per_cfg  # alike in every layer of a kind: built once per count
def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    return rms_layer(c, mla.self_attn(c), mla.moe(c) if kind == "sparse" else mla.dense_mlp(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    """Mistral4DecoderLayer: MoE exactly when the layer's index reaches first_k_dense_replace."""
    return mla.backbone(c, mla.first_dense(c), lambda kind: layer(c, kind))


def check(c: Cfg) -> None:
    if "sparse" in mla.first_dense(c):
        mla.top_k(c)


FAMILY = Family(
    model_type="mistral4",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Mistral4Model",
    check=check,
    cache_layout=mla.cache_layout(),
    classes=decoder_classes(
        "Mistral4", backbone, heads=("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")
    ),
)

__all__ = ["FAMILY", "backbone", "layer"]
