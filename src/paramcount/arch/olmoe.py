"""OLMoE (Muennighoff et al. 2024): a pre-norm RMSNorm decoder whose queries and keys pass
an RMSNorm over their whole width (not per head: ``q_norm`` is h wide, ``k_norm`` the KV
width), and in every layer top-k routing over ``num_experts`` SwiGLU experts of width
``intermediate_size``, with no shared expert and a bias-free router."""

from __future__ import annotations

from ..ir import Block, Node, Sym
from . import Family, llama, moe
from .blocks import block, decoder_classes, norm
from .config import Cfg

# OlmoeConfig has no head_dim field: a file's head_dim sizes the projections only.
DEFAULTS = {
    "vocab_size": 50304,
    "hidden_size": 2048,
    "intermediate_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "num_experts": 64,
    "num_experts_per_tok": 8,
}

# attribute_map: num_local_experts -> num_experts; a file's num_local_experts is set last, so it wins.
ALIASES = {"num_experts": ("num_local_experts",)}


def num_experts(c: Cfg) -> Sym:
    field = "num_local_experts" if c.raw.get("num_local_experts") is not None else "num_experts"
    return c.int(field)


def check(c: Cfg) -> None:
    llama.check(c)
    moe.top_k(c, num_experts(c))


def qk_norms(q_width: int, k_width: int) -> tuple[Block, Block]:
    """RMSNorms over the whole query and key projections (OLMoE, MiniMax-M2)."""
    return norm("q_norm", q_width, bias=False), norm("k_norm", k_width, bias=False)


def self_attn(c: Cfg) -> Block:
    """q_norm spans h and k_norm (h / a)·a_kv, whatever head_dim the projections use."""
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    return llama.self_attn(c, extra=qk_norms(h, h // a * llama.kv_heads(c)))


def sparse_moe(c: Cfg) -> Block:
    h, n = c.int("hidden_size"), num_experts(c)
    experts = moe.experts(n, h, c.int("intermediate_size"), moe.top_k(c, n))
    return block("mlp", moe.router("gate", h, n), experts)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, self_attn(c), sparse_moe(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d = int(llama.head_dim(c))
    return self_kinds(c, model_type, (int(llama.kv_heads(c)), d, d))


FAMILY = Family(
    model_type="olmoe",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="OlmoeModel",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes("Olmoe", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "qk_norms"]
