"""GLM-4.7-Flash (Z.ai 2026, ``glm4_moe_lite``): DeepSeek-V3's layer at GLM's shapes, MLA
(arch/mla.py; a direct q_proj where ``q_lora_rank`` is null) and DeepSeek MoE with shared
experts and a sigmoid router whose ``e_score_correction_bias`` is a buffer. Which layers are MoE
is ``mlp_layer_types``, which Glm4MoeLiteConfig builds as one dense layer then MoE when a file
has none: ``first_k_dense_replace`` is kept but never read. The checkpoint's
multi-token-prediction layer is not built by transformers (said in a note)."""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, mla
from .blocks import decoder_classes
from .config import Cfg, per_cfg
from .llama import rms_layer

# Glm4MoeLiteConfig's defaults (GLM-4.7-Flash's shapes).
DEFAULTS = {
    "vocab_size": 154880,
    "hidden_size": 2048,
    "intermediate_size": 10240,
    "moe_intermediate_size": 1536,
    "num_hidden_layers": 47,
    "num_attention_heads": 20,
    "n_shared_experts": 1,
    "n_routed_experts": 64,
    "kv_lora_rank": 512,
    "q_lora_rank": 768,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "qk_nope_head_dim": 192,
    "num_experts_per_tok": 4,
    "mlp_layer_types": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

# Glm4MoeLiteConfig.attribute_map (its head_dim -> qk_rope_head_dim is read by nothing here).
ALIASES = {"n_routed_experts": ("num_local_experts",)}


def mlp_types(c: Cfg) -> list[str]:
    """A file's ``mlp_layer_types``, else ``["dense"] + ["sparse"] * (L − 1)`` as
    Glm4MoeLiteConfig.__post_init__ sets it (whatever first_k_dense_replace says)."""
    given = c.raw.get("mlp_layer_types")
    if given is not None:
        return mla.type_list(c, "mlp_layer_types", given, ("dense", "sparse"))
    n = int(c.int("num_hidden_layers"))
    return ["dense"] + ["sparse"] * (n - 1)


@per_cfg  # alike in every layer of a kind: built once per count
def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    return rms_layer(c, mla.self_attn(c), mla.moe(c) if kind == "sparse" else mla.dense_mlp(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return mla.backbone(c, mlp_types(c), lambda kind: layer(c, kind))


def notes(c: Cfg, cls: str) -> list[str]:
    types = mlp_types(c)
    out = mla.mtp_note(c, lambda: layer(c, "sparse"), "own", " (GLM-4.7-Flash's checkpoint)")
    first = c.raw.get("first_k_dense_replace")
    dense = next((i for i, t in enumerate(types) if t == "sparse"), len(types))
    if c.raw.get("mlp_layer_types") is None and first is not None and first != dense:
        out.append(
            f"first_k_dense_replace = {first!r} is not read by transformers' Glm4MoeLite, which makes layer 0 dense"
            " and the rest MoE when mlp_layer_types is absent, as counted here"
        )
    if "sparse" in types:
        out.append("each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted")
    return out


def check(c: Cfg) -> None:
    if "sparse" in mlp_types(c):
        mla.top_k(c)


FAMILY = Family(
    model_type="glm4_moe_lite",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Glm4MoeLiteModel",
    check=check,
    notes=notes,
    cache_layout=mla.cache_layout(),
    classes=decoder_classes("Glm4MoeLite", backbone, heads=("ForCausalLM",)),
    # not a Glm4MoeLiteConfig field (a plain attribute): read for the MTP note and llama.cpp's file
    extra_fields=("num_nextn_predict_layers",),
)

__all__ = ["FAMILY", "backbone", "layer", "mlp_types"]
