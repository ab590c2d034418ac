"""GLM-5 (Z.ai 2026, ``glm_moe_dsa``): DeepSeek-V3.2's architecture (MLA with the query
bottleneck, the DSA lightning indexer, dense-then-MoE layers with shared experts and a sigmoid
router whose e_score_correction_bias is a buffer) at GLM's shapes, with cross-layer top-k
sharing: a layer whose ``indexer_types`` entry is ``"shared"`` reuses the previous layer's
token selection and has no indexer (no parameters, no indexer keys in the cache).

``indexer_types`` is per layer; absent, the config derives it from ``index_topk_pattern``
(``"FSSF…"``) or from ``index_topk_freq`` / ``index_skip_topk_offset``: layer i runs its own
indexer when max(i − offset + 1, 0) is a multiple of freq (every layer, by default)."""

from __future__ import annotations

from typing import Any

from . import Family, mla
from .blocks import decoder_classes
from .config import MAX_DIM, Cfg

DEFAULTS = {
    "vocab_size": 154880,
    "hidden_size": 6144,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 78,
    "num_attention_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 2048,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "qk_nope_head_dim": 192,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "mlp_layer_types": None,
    "indexer_types": None,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

# GlmMoeDsaConfig.attribute_map, and the ``num_experts`` keyword its __post_init__ re-routes.
ALIASES = {"n_routed_experts": ("num_local_experts", "num_experts")}
PATTERN = {"F": "full", "S": "shared"}


def indexer_types(c: Cfg) -> list[str]:
    """Each layer's indexer mode as GlmMoeDsaConfig.__post_init__ decides it."""
    given = c.raw.get("indexer_types")
    if given is not None:
        return mla.type_list(c, "indexer_types", given, ("full", "shared"))
    pattern: Any = c.raw.get("index_topk_pattern")
    if pattern is not None:
        if isinstance(pattern, str):
            bad = sorted(set(pattern) - set(PATTERN))
            if bad:
                raise c.error("index_topk_pattern", f"unknown letters {', '.join(map(repr, bad))} (expected F or S)")
            pattern = [PATTERN[ch] for ch in pattern]
        return mla.type_list(c, "index_topk_pattern", pattern, ("full", "shared"))
    n = int(c.int("num_hidden_layers"))
    freq = max(int(c.int("index_topk_freq", low=-MAX_DIM, default=1)), 1)
    offset = int(c.int("index_skip_topk_offset", low=-MAX_DIM, default=2))
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]


def indexed(c: Cfg) -> list[bool]:
    return [t == "full" for t in indexer_types(c)]


def backbone(c: Cfg) -> tuple:
    return mla.dsa_backbone(c, indexed(c))


def notes(c: Cfg, cls: str) -> list[str]:
    # vllm-project/vllm-ascend#6754 and its GLM-5 guide (adjust_weight.py copies model.embed_tokens
    # and lm_head to model.layers.78.* before serving MTP): GLM-5's checkpoint holds no copies
    out = mla.mtp_note(c, lambda: mla.dsa_layer(c, ("sparse", True)), "shared", " (GLM-5's checkpoint)")
    if "sparse" in mla.mlp_layer_types(c):
        out.append("each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted")
    return out


def check(c: Cfg) -> None:
    mla.q_lora_rank(c, nullable=False)
    if "sparse" in mla.mlp_layer_types(c):
        mla.top_k(c)


FAMILY = Family(
    model_type="glm_moe_dsa",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="GlmMoeDsaModel",
    check=check,
    notes=notes,
    cache_layout=mla.cache_layout(indexed),
    classes=decoder_classes("GlmMoeDsa", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "indexed", "indexer_types"]
