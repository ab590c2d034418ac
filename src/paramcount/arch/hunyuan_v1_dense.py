"""Hunyuan dense (Tencent 2025, ``hunyuan_v1_dense``): Llama's layout with RMSNorms over each
head's queries and keys, named ``query_layernorm`` and ``key_layernorm`` and built whatever
``use_qk_norm`` says (HunYuanDenseV1Attention always makes them), ``attention_bias`` on all four
projections (o_proj too), a bias-free SwiGLU MLP (``mlp_bias`` is not read), and an explicit
``head_dim`` the attention cannot do without. The NTK-alpha rotary scaling has no parameters;
``use_cla`` / ``cla_share_factor`` (cross-layer KV sharing in Tencent's own code) are not read by
transformers."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, llama, mistral
from .blocks import attention, decoder_classes, gated_mlp, norm
from .config import Cfg

# HunYuanDenseV1Config's defaults; its head_dim is None, which its attention cannot build.
DEFAULTS = {
    "vocab_size": 290943,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "head_dim": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
}


def check(c: Cfg) -> None:
    # HunYuanDenseV1Attention: getattr(config, "head_dim", h // a) finds the field's None, so
    # a file without head_dim fails in transformers (None ** -0.5) rather than taking h/a
    if c.get("head_dim", None) is None:
        raise c.error(
            "head_dim",
            "is missing or null: transformers cannot build HunYuanDenseV1Attention without it (its config class"
            " defaults head_dim to None, which the attention reads as is)",
        )
    mistral.check(c)


def self_attn(c: Cfg) -> Block:
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), c.int("head_dim")
    qk = (norm("query_layernorm", d, bias=False), norm("key_layernorm", d, bias=False))
    return attention("self_attn", h, a, mistral.kv_heads(c), d, bias=c.bool("attention_bias"), extra=qk)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, self_attn(c), gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size")))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def notes(c: Cfg, cls: str) -> list[str]:
    if c.raw.get("use_cla") is not True:  # a field transformers keeps but never reads: only said
        return []
    return [
        f"use_cla is true (cla_share_factor {c.raw.get('cla_share_factor')!r}): Tencent's own code shares K/V"
        " projections across layers; transformers' HunYuanDenseV1 does not read it and builds every layer's own,"
        " as counted here"
    ]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    from .cache import self_kinds

    d = int(c.int("head_dim"))
    return self_kinds(c, model_type, (int(mistral.kv_heads(c)), d, d))


FAMILY = Family(
    model_type="hunyuan_v1_dense",
    defaults=DEFAULTS,
    backbone="HunYuanDenseV1Model",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("HunYuanDenseV1", backbone, heads=("ForCausalLM", "ForSequenceClassification")),
    extra_fields=("use_cla",),  # a plain attribute transformers never reads: only said in a note
)

__all__ = ["FAMILY", "backbone", "layer", "self_attn"]
