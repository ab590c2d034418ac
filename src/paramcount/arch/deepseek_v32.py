"""DeepSeek-V3.2 (DeepSeek-AI 2025): DeepSeek-V3 with DeepSeek Sparse Attention. Each layer's
MLA (always with the query bottleneck) carries a lightning indexer (``wq_b`` from the query
latent, a shared ``wk`` key with a biased LayerNorm, per-head ``weights_proj``) that picks the
``index_topk`` tokens each query attends to; its keys are cached beside the MLA latent.
Dense or MoE MLP per ``mlp_layer_types`` (default: ``first_k_dense_replace`` dense layers);
the sigmoid router's e_score_correction_bias is a buffer, not a parameter."""

from __future__ import annotations

from . import Family, mla
from .blocks import decoder_classes
from .config import Cfg

DEFAULTS = {
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "mlp_layer_types": None,
    "index_head_dim": 128,
    "index_n_heads": 64,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

# DeepseekV32Config.attribute_map, and the ``num_experts`` keyword its __post_init__ re-routes.
ALIASES = {"n_routed_experts": ("num_local_experts", "num_experts")}


def indexed(c: Cfg) -> list[bool]:
    """Every layer runs its own indexer."""
    return [True] * int(c.int("num_hidden_layers"))


def backbone(c: Cfg) -> tuple:
    return mla.dsa_backbone(c, indexed(c))


def notes(c: Cfg, cls: str) -> list[str]:
    # V3.2-Exp continues V3.1-Terminus, whose MTP layer keeps DeepSeek-V3's layout (own copies)
    mtp = mla.mtp_note(c, lambda: mla.dsa_layer(c, ("sparse", True)), "own", ", laid out as DeepSeek-V3's")
    out = [*mtp, *mla.moe_layer_freq_note(c)]
    if "sparse" in mla.mlp_layer_types(c):
        out.append("each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted")
    return out


def check(c: Cfg) -> None:
    mla.q_lora_rank(c, nullable=False)
    if "sparse" in mla.mlp_layer_types(c):
        mla.top_k(c)


FAMILY = Family(
    model_type="deepseek_v32",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="DeepseekV32Model",
    check=check,
    notes=notes,
    cache_layout=mla.cache_layout(indexed),
    classes=decoder_classes("DeepseekV32", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "indexed"]
