"""Qwen3.5 (Qwen team 2026), the text tower as its own model (``text_config`` of a Qwen3.5
checkpoint, model_type ``qwen3_5_text``): Qwen3-Next's hybrid of gated DeltaNet and gated
attention with the DeltaNet's input projections split (``in_proj_qkv``, ``in_proj_z``,
``in_proj_b``, ``in_proj_a``) and a dense SwiGLU feed-forward in every layer.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..ir import Node
from . import Family, llama, mistral, qwen3_next
from . import linear_attention as la
from .blocks import base, classifier, lm_head, typed_decoder, with_head
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 248320,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 32,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "layer_types": None,
}


@per_cfg
def layer(c: Cfg, layer_type: Hashable) -> tuple[Node, ...]:
    return llama.rms_layer(c, qwen3_next.mixer(c, str(layer_type), fused=False), mistral.swiglu(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, la.interval_types(c), layer)


def check(c: Cfg) -> None:
    la.check_heads(c)
    la.check_deltanet(c)


def notes(c: Cfg, cls: str) -> list[str]:
    return la.mtp_note(c, "mtp_num_hidden_layers", layer(c, la.FULL))


FAMILY = Family(
    model_type="qwen3_5_text",
    defaults=DEFAULTS,
    backbone="Qwen3_5TextModel",
    check=check,
    notes=notes,
    cache_layout=qwen3_next.cache_layout,
    classes={
        "Qwen3_5TextModel": base(backbone),
        "Qwen3_5ForCausalLM": with_head(backbone, "model", lm_head("embed_tokens.weight")),
        "Qwen3_5TextForSequenceClassification": with_head(backbone, "model", classifier("score", bias=False)),
    },
)
