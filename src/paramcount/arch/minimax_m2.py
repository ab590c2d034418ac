"""MiniMax-M2 (MiniMax 2025): a pre-norm RMSNorm decoder without biases whose queries and keys
pass an RMSNorm over their whole width (``q_norm`` a·d_head, ``k_norm`` a_kv·d_head), partial
rotary (no parameters), and in every layer top-k sigmoid routing over ``num_local_experts``
SwiGLU experts with no shared expert. The routing's ``e_score_correction_bias`` is a buffer of
the MoE block (not counted, said in a note). Checkpoints keep Mixtral's ``block_sparse_moe``
names."""

from __future__ import annotations

from ..ir import Block, Node, Sym
from . import Family, gpt_oss, llama, moe, olmoe
from .blocks import attention, decoder_classes
from .config import Cfg

DEFAULTS = {
    "vocab_size": 200064,
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "num_hidden_layers": 62,
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": False,
    # attribute_map: num_experts -> num_local_experts; a file's num_experts is set last, so it wins.
    "num_experts": 256,
    "num_experts_per_tok": 8,
}

ALIASES = {"num_experts": ("num_local_experts",)}


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, ("num_key_value_heads", "head_dim"))
    gpt_oss.check_heads(c, c.int("num_key_value_heads"))
    moe.top_k(c, c.int("num_experts"))


def self_attn(c: Cfg) -> Block:
    h, a, kv, d = (c.int(f) for f in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"))
    return attention("self_attn", h, a, kv, d, extra=olmoe.qk_norms(a * d, kv * d))


def layer(c: Cfg) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), c.int("num_experts")
    ff = moe.block_sparse_moe(h, n, c.int("intermediate_size"), moe.top_k(c, n))
    return llama.rms_layer(c, self_attn(c), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def notes(c: Cfg, cls: str) -> list[str]:
    return moe.correction_note([(0, 1, True)], where="MoE block")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d: Sym = c.int("head_dim")
    return self_kinds(c, model_type, (int(c.int("num_key_value_heads")), int(d), int(d)))


FAMILY = Family(
    model_type="minimax_m2",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="MiniMaxM2Model",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("MiniMaxM2", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY"]
