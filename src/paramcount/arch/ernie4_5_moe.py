"""ERNIE 4.5 MoE (Baidu 2025): a pre-norm RMSNorm decoder whose linear layers (attention, dense
and shared MLPs, output head) all carry a bias behind ``use_bias``, with a tied output head by
default. A layer routes when its index lies in ``moe_layer_start_index``..``moe_layer_end_index``
(-1: the last layer) and its index + 1 is a multiple of ``moe_layer_interval``; the others are
dense. A routed layer holds the fused experts, the router ``gate`` with its
``moe_statics.e_score_correction_bias`` (a parameter here, (1, E), counted) and, when
``moe_num_shared_experts`` > 0, shared experts of width I_e·E_s."""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family, gpt_oss, llama, moe
from .blocks import attention, block, decoder_classes, embedding, gated_mlp, lm_head, norm, with_head
from .config import MAX_DIM, Cfg

DEFAULTS = {
    "vocab_size": 103424,
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "num_hidden_layers": 28,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "use_bias": False,
    "tie_word_embeddings": True,
    "moe_intermediate_size": 1536,
    # attribute_map: num_experts -> moe_num_experts, num_experts_per_tok -> moe_k; the mapped
    # names are set last, so a file's num_experts / num_experts_per_tok win.
    "num_experts": 64,
    "num_experts_per_tok": 6,
    "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1,
    "moe_layer_end_index": -1,
    "moe_layer_interval": 1,
}

ALIASES = {"num_experts": ("moe_num_experts",), "num_experts_per_tok": ("moe_k",)}


def runs(c: Cfg) -> list[moe.Run]:
    layers = int(c.int("num_hidden_layers"))
    end = int(c.int("moe_layer_end_index", low=-MAX_DIM))
    first = int(c.int("moe_layer_start_index", low=-MAX_DIM))
    step = int(c.int("moe_layer_interval"))
    return moe.runs(layers, first=first, last=layers - 1 if end == -1 else end, step=step)


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, ("num_key_value_heads", "num_experts", "num_experts_per_tok", "moe_num_experts", "moe_k"))
    gpt_oss.check_heads(c, c.int("num_key_value_heads"))
    moe.top_k(c, c.int("num_experts"))
    runs(c)


def self_attn(c: Cfg) -> Block:
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    return attention("self_attn", h, a, c.int("num_key_value_heads"), llama.head_dim(c), bias=c.bool("use_bias"))


def sparse_mlp(c: Cfg) -> Block:
    h, n, inter, bias = c.int("hidden_size"), c.int("num_experts"), c.int("moe_intermediate_size"), c.bool("use_bias")
    statics = block("moe_statics", Tensor("e_score_correction_bias", (1, n)), kind="router")
    shared = c.int("moe_num_shared_experts", low=0)
    width = inter * shared if shared else None
    live = moe.with_shared(h, n, inter, moe.top_k(c, n), width, moe.router("gate", h, n, extra=(statics,)), bias)
    # checkpoints keep the statics beside the router: mlp.moe_statics.e_score_correction_bias
    saved = Block("mlp", (live.children[0], moe.router("gate", h, n), statics, *live.children[2:]))
    return Block("mlp", live.children, checkpoint=saved)


def layer(c: Cfg, sparse: bool) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    ff = sparse_mlp(c) if sparse else gated_mlp("mlp", h, c.int("intermediate_size"), c.bool("use_bias"))
    return llama.rms_layer(c, self_attn(c), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), c.int("num_hidden_layers")
    layers = moe.layer_stacks(runs(c), n, lambda sparse: layer(c, sparse))
    return (embedding("embed_tokens", c.int("vocab_size"), h), *layers, norm("norm", h, bias=False))


def head(c: Cfg, body: Block) -> list[Node]:
    return list(lm_head("embed_tokens.weight", bias=c.bool("use_bias"))(c, body))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d = int(llama.head_dim(c))
    return self_kinds(c, model_type, (int(c.int("num_key_value_heads")), d, d))


FAMILY = Family(
    model_type="ernie4_5_moe",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Ernie4_5_MoeModel",
    check=check,
    cache_layout=cache_layout,
    classes={
        **decoder_classes("Ernie4_5_Moe", backbone, heads=()),
        "Ernie4_5_MoeForCausalLM": with_head(backbone, "model", head),
    },
)

__all__ = ["FAMILY", "runs"]
