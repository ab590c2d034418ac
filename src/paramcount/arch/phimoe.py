"""PhiMoE / Phi-3.5-MoE (Microsoft 2024): Mixtral's routing (top-2 of 16 SwiGLU experts in
every layer, the router named ``router``) with biased q/k/v/o projections behind
``attention_bias``, LayerNorms with a bias where Mixtral has RMSNorms, and an output head
with a bias behind ``lm_head_bias``. Checkpoints keep Mixtral's ``block_sparse_moe`` names."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir import Block, Node
from . import Family, gpt_oss, llama, mistral, moe
from .blocks import base, classifier, embedding, lm_head, norm, stack, with_head
from .config import Cfg

# PhimoeConfig has no head_dim field: a file's head_dim sizes the projections.
DEFAULTS = {
    "vocab_size": 32064,
    "hidden_size": 4096,
    "intermediate_size": 6400,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "attention_bias": False,
    "lm_head_bias": False,
    "tie_word_embeddings": False,
    "num_local_experts": 16,
    "num_experts_per_tok": 2,
}


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, ("num_key_value_heads",))
    mistral.check(c)
    moe.top_k(c, c.int("num_local_experts"))


def layer(c: Cfg) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), c.int("num_local_experts")
    ff = moe.block_sparse_moe(h, n, c.int("intermediate_size"), moe.top_k(c, n), router_name="router")
    attn = mistral.self_attn(c, bias=c.bool("attention_bias"))
    return attn, ff, norm("input_layernorm", h), norm("post_attention_layernorm", h)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
        norm("norm", h),
    )


def head(c: Cfg, body: Block) -> Sequence[Node]:
    """The output head, biased behind ``lm_head_bias``, tied behind ``tie_word_embeddings``."""
    return lm_head("embed_tokens.weight", bias=c.bool("lm_head_bias"))(c, body)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d = int(llama.head_dim(c))
    return self_kinds(c, model_type, (int(mistral.kv_heads(c)), d, d))


FAMILY = Family(
    model_type="phimoe",
    defaults=DEFAULTS,
    backbone="PhimoeModel",
    check=check,
    cache_layout=cache_layout,
    classes={
        "PhimoeModel": base(backbone),
        "PhimoeForCausalLM": with_head(backbone, "model", head),
        "PhimoeForSequenceClassification": with_head(backbone, "model", classifier("score", bias=False)),
    },
)

__all__ = ["FAMILY"]
