"""DeepSeek-V3 (DeepSeek-AI 2024): multi-head latent attention (queries and keys/values
pass through low-rank bottlenecks with their own RMSNorms, a shared rotary key slice), the
first ``first_k_dense_replace`` layers dense, the rest mixture-of-experts with shared
experts and a sigmoid router whose score-correction bias is a buffer, not a parameter."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, mla
from . import moe as shared_moe
from .blocks import decoder_classes, embedding, gated_mlp, norm
from .config import Cfg, per_cfg
from .llama import rms_layer

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
    "attention_bias": False,
    "tie_word_embeddings": False,
    # Read only for the notes: the class field num_mtp_layers (default 1) is an alias of it.
    "num_nextn_predict_layers": 1,
}

# DeepseekV3Config.attribute_map.
ALIASES = {
    "n_routed_experts": ("num_local_experts",),
    "num_nextn_predict_layers": ("num_mtp_layers",),
}


@per_cfg
def self_attn(c: Cfg) -> Block:
    """MLA (arch/mla.py): a direct q_proj where ``q_lora_rank`` is null (Moonlight)."""
    return mla.self_attn(c)


@per_cfg
def dense_mlp(c: Cfg) -> Block:
    return gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))


@per_cfg
def moe(c: Cfg) -> Block:
    """Routed experts (k of E run), the router's weight (its e_score_correction_bias is a
    buffer), and the always-on shared experts as one MLP of width I_e·E_s."""
    h, e, i_e = c.int("hidden_size"), c.int("n_routed_experts"), c.int("moe_intermediate_size")
    k = c.int("num_experts_per_tok", high=int(e))
    return shared_moe.with_shared(h, e, i_e, k, i_e * c.int("n_shared_experts", low=0))


def layer(c: Cfg, mlp: Block) -> tuple[Node, ...]:
    return rms_layer(c, self_attn(c), mlp)


def backbone(c: Cfg) -> tuple[Node, ...]:
    """Dense layers up to first_k_dense_replace, MoE after (transformers makes a layer MoE
    exactly when its index reaches it), as runs under one ``layers`` list."""
    h, n = c.int("hidden_size"), c.int("num_hidden_layers")
    runs = shared_moe.runs(int(n), first=int(c.int("first_k_dense_replace", low=0)))
    layers = shared_moe.layer_stacks(runs, n, lambda sparse: layer(c, moe(c) if sparse else dense_mlp(c)))
    return (embedding("embed_tokens", c.int("vocab_size"), h), *layers, norm("norm", h, bias=False))


def notes(c: Cfg, cls: str) -> list[str]:
    """Where DeepSeek's checkpoint or its own code differ from the transformers model counted."""
    n = int(c.int("num_hidden_layers"))
    # DeepSeek-V3's model.safetensors.index.json lists model.layers.61.embed_tokens and
    # shared_head.head (README_WEIGHTS.md calls them shared with the main model; the files hold
    # copies): with them, the FP8 block scales and the correction biases, its files hold
    # 684,531,386,000 values, the card's "671B + 14B" (tests/test_mtp_notes.py)
    out = shared_moe.mtp_note(c, lambda: sum(x.count for x in layer(c, moe(c))), "own")
    freq = c.raw.get("moe_layer_freq", 1)
    if freq not in (1, None):
        out.append(
            f"moe_layer_freq = {freq!r} is ignored by transformers (every layer from first_k_dense_replace "
            "on is MoE), as counted here; DeepSeek's own code would make only every n-th layer MoE"
        )
    if int(c.int("first_k_dense_replace", low=0)) < n:
        out.append("each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted")
    return out


def check(c: Cfg) -> None:
    c.int("num_experts_per_tok", high=int(c.int("n_routed_experts")))


FAMILY = Family(
    model_type="deepseek_v3",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="DeepseekV3Model",
    check=check,
    notes=notes,
    cache_layout=mla.cache_layout(),
    classes=decoder_classes(
        "DeepseekV3", backbone, heads=("ForCausalLM", "ForSequenceClassification", "ForTokenClassification")
    ),
)

__all__ = ["FAMILY", "backbone", "moe", "self_attn"]
