"""Qwen3.5-MoE (Qwen team 2026), the text tower as its own model (``text_config``, model_type
``qwen3_5_moe_text``): Qwen3.5's hybrid of gated DeltaNet (split input projections) and gated
attention, with every layer's feed-forward routed: ``num_experts_per_tok`` of ``num_experts``
plus a sigmoid-gated shared expert (Qwen3-Next's sparse block; no dense layers).
"""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, llama, qwen2_moe, qwen3_next
from . import linear_attention as la
from .blocks import base, lm_head, typed_decoder, with_head
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 248320,
    "hidden_size": 2048,
    "num_hidden_layers": 40,
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
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts_per_tok": 8,
    "num_experts": 256,
    "layer_types": None,
}


@per_cfg
def layer(c: Cfg, layer_type: Hashable) -> tuple[Node, ...]:
    return llama.rms_layer(c, qwen3_next.mixer(c, str(layer_type), fused=False), qwen2_moe.sparse_moe(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, la.interval_types(c), layer)


def check(c: Cfg) -> None:
    la.check_heads(c)
    la.check_deltanet(c)
    c.int("num_experts")  # every layer routes: at least one expert
    qwen2_moe.check_top_k(c)


def notes(c: Cfg, cls: str) -> list[str]:
    return la.mtp_note(c, "mtp_num_hidden_layers", layer(c, la.FULL))


FAMILY = Family(
    model_type="qwen3_5_moe_text",
    defaults=DEFAULTS,
    backbone="Qwen3_5MoeTextModel",
    check=check,
    notes=notes,
    cache_layout=qwen3_next.cache_layout,
    classes={
        "Qwen3_5MoeTextModel": base(backbone),
        "Qwen3_5MoeForCausalLM": with_head(backbone, "model", lm_head("embed_tokens.weight")),
    },
)
