"""GLM-4.5 (Zhipu AI / Z.ai 2025): a pre-norm RMSNorm decoder with biased q/k/v projections
behind ``attention_bias`` (never on o_proj), per-head q/k RMSNorms behind ``use_qk_norm``, an
explicit ``head_dim`` read where a file gives one, partial rotary (no parameters), the first
``first_k_dense_replace`` layers dense and the rest DeepSeek-style MoE: routed experts, a
sigmoid router whose ``e_score_correction_bias`` is a buffer, and ``n_shared_experts``
always-on shared experts. The published checkpoints add multi-token-prediction layers that
transformers does not build (said in a note, with their parameters)."""

from __future__ import annotations

from ..ir import Block, Node, Sym
from . import Family, gpt_oss, llama, moe
from .blocks import attention, decoder_classes, embedding, gated_mlp, norm
from .config import Cfg, per_cfg

# Glm4MoeConfig has no head_dim field: a file's head_dim sizes the attention (GLM-4.5: 128).
DEFAULTS = {
    "vocab_size": 151552,
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "num_hidden_layers": 46,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 1408,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "n_routed_experts": 128,
    "first_k_dense_replace": 1,
    "use_qk_norm": False,
    # the class field num_mtp_layers (default 1) is an alias of it; read only for the notes
    "num_nextn_predict_layers": 1,
}

# Glm4MoeConfig.attribute_map: the mapped name wins when a file has both.
ALIASES = {
    "n_routed_experts": ("num_local_experts",),
    "num_nextn_predict_layers": ("num_mtp_layers",),
}


def routed(c: Cfg) -> Sym:
    field = "num_local_experts" if c.raw.get("num_local_experts") is not None else "n_routed_experts"
    return c.int(field)


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, ("num_key_value_heads",))
    gpt_oss.check_heads(c, llama.kv_heads(c))
    moe.top_k(c, routed(c))


@per_cfg  # alike in dense and MoE layers: built once per count
def self_attn(c: Cfg) -> Block:
    """q/k/v biased behind attention_bias, o_proj never; q/k norms per head behind use_qk_norm."""
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), llama.head_dim(c)
    qk = (norm("q_norm", d, bias=False), norm("k_norm", d, bias=False)) if c.bool("use_qk_norm") else ()
    return attention("self_attn", h, a, llama.kv_heads(c), d, bias=c.bool("attention_bias"), out_bias=False, extra=qk)


def sparse_mlp(c: Cfg) -> Block:
    h, n, inter = c.int("hidden_size"), routed(c), c.int("moe_intermediate_size")
    return moe.with_shared(h, n, inter, moe.top_k(c, n), inter * c.int("n_shared_experts", low=0))


@per_cfg  # the stacks and the MTP note share it
def layer(c: Cfg, sparse: bool) -> tuple[Node, ...]:
    ff = sparse_mlp(c) if sparse else gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))
    return llama.rms_layer(c, self_attn(c), ff)


def runs(c: Cfg) -> list[moe.Run]:
    return moe.runs(int(c.int("num_hidden_layers")), first=int(c.int("first_k_dense_replace", low=0)))


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    layers = moe.layer_stacks(runs(c), c.int("num_hidden_layers"), lambda sparse: layer(c, sparse))
    return (embedding("embed_tokens", c.int("vocab_size"), h), *layers, norm("norm", h, bias=False))


def notes(c: Cfg, cls: str) -> list[str]:
    found = runs(c)
    # vllm-project/vllm#27597: GLM-4.5's checkpoint holds model.layers.92.embed_tokens and
    # shared_head.head, GLM-4.6's does not; one config shape for both
    whose = "GLM-4.5's and GLM-4.5-Air's checkpoints (not GLM-4.6's)"
    mtp = moe.mtp_note(c, lambda: sum(n.count for n in layer(c, True)), "some", whose)
    return [*mtp, *moe.correction_note(found)]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d = int(llama.head_dim(c))
    return self_kinds(c, model_type, (int(llama.kv_heads(c)), d, d))


FAMILY = Family(
    model_type="glm4_moe",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Glm4MoeModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("Glm4Moe", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "routed"]
