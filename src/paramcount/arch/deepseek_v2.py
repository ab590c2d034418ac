"""DeepSeek-V2 (DeepSeek-AI 2024): multi-head latent attention (a direct q_proj when
``q_lora_rank`` is null, as in V2-Lite), the first ``first_k_dense_replace`` layers dense, the
rest mixture-of-experts with shared experts behind a softmax router (``greedy`` or
``group_limited_greedy``: no shape) that has no score-correction bias. ``mlp_bias`` biases the
dense MLPs and the shared experts alike."""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, mla
from .blocks import decoder_classes
from .config import Cfg
from .llama import rms_layer

DEFAULTS = {
    "vocab_size": 102400,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "moe_intermediate_size": 1407,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "n_shared_experts": 2,
    "n_routed_experts": 64,
    "num_experts_per_tok": None,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "first_k_dense_replace": 0,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}

# DeepseekV2Config.attribute_map.
ALIASES = {"n_routed_experts": ("num_experts",)}

NO_TOP_K = (
    "num_experts_per_tok is null (the DeepseekV2Config default): transformers builds the experts but its "
    "router cannot pick any, so the active figure counts every routed expert"
)


def top_k(c: Cfg) -> int:
    """k, or all E where the field is null (the model then cannot route; said in a note)."""
    if c.get("num_experts_per_tok") is None:
        return int(c.int("n_routed_experts"))
    return int(mla.top_k(c))


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    bias = c.bool("mlp_bias")
    ff = mla.moe(c, shared_bias=bias, k=top_k(c)) if kind == "sparse" else mla.dense_mlp(c, bias)
    return rms_layer(c, mla.self_attn(c), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return mla.backbone(c, mla.first_dense(c), lambda kind: layer(c, kind))


def notes(c: Cfg, cls: str) -> list[str]:
    moe = "sparse" in mla.first_dense(c)
    return [*mla.moe_layer_freq_note(c), *([NO_TOP_K] if moe and c.get("num_experts_per_tok") is None else [])]


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")  # DeepseekV2Config.validate_architecture
    top_k(c)


FAMILY = Family(
    model_type="deepseek_v2",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="DeepseekV2Model",
    check=check,
    notes=notes,
    cache_layout=mla.cache_layout(),
    classes=decoder_classes("DeepseekV2", backbone, heads=("ForCausalLM", "ForSequenceClassification")),
)

__all__ = ["FAMILY", "backbone", "layer"]
