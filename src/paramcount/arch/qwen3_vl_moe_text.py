"""Qwen3-VL-MoE's language model (``Qwen3VLMoeTextModel``): Qwen3-MoE's decoder (routed experts,
no shared expert, dense layers by ``decoder_sparse_step`` and ``mlp_only_layers``) under the
text config's own defaults."""

from __future__ import annotations

from ..records import replace
from .blocks import base
from .qwen3_moe import FAMILY as QWEN3_MOE
from .qwen3_moe import backbone

DEFAULTS = {
    **QWEN3_MOE.defaults,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "tie_word_embeddings": True,
    "moe_intermediate_size": 1408,
    "num_experts_per_tok": 4,
    "num_experts": 60,
}


def cache_layout(c, model_type: str, cls: str, mla: str):
    """qwen3_moe's (no sliding window: the text config has none)."""
    from .cache import BUILDERS

    return BUILDERS["qwen3_moe"](c, "qwen3_moe", cls, mla)


FAMILY = replace(
    QWEN3_MOE,
    model_type="qwen3_vl_moe_text",
    defaults=DEFAULTS,
    backbone="Qwen3VLMoeTextModel",
    classes={"Qwen3VLMoeTextModel": base(backbone)},
    cache_layout=cache_layout,
)

__all__ = ["FAMILY"]
