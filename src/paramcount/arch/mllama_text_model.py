"""Llama 3.2 Vision's language model (``MllamaTextModel``): Llama 3's decoder with cross-attention
layers at ``cross_attention_layers`` (queries from the text, keys and values from the image
features, per-head q/k RMSNorms, and a tanh gate on the attention and on the MLP), and eight
more token embedding rows than ``vocab_size`` (the image and special tokens); the LM head keeps
``vocab_size`` rows."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Tensor
from . import Family, llama
from .blocks import base, block, embedding, gated_mlp, linear, norm, typed_stacks, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "num_hidden_layers": 40,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14_336,
    "tie_word_embeddings": False,
    "cross_attention_layers": None,
}
CROSS_LAYERS = [3, 8, 13, 18, 23, 28, 33, 38]  # MllamaTextConfig.__post_init__'s default
EXTRA_ROWS = 8  # embed_tokens has vocab_size + 8 rows


def cross_layers(c: Cfg) -> set[int]:
    value = c.get("cross_attention_layers")
    if value is None:
        value = CROSS_LAYERS
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise c.error("cross_attention_layers", f"expected a list of layer indices, got {value!r:.60}")
    return set(value)


def kinds(c: Cfg) -> list[bool]:
    """Whether each layer attends to the image (a cross-attention layer) or to the text."""
    cross = cross_layers(c)
    return [i in cross for i in range(int(c.int("num_hidden_layers")))]


def cross_attn(c: Cfg) -> Block:
    h, a, kv, d = c.int("hidden_size"), c.int("num_attention_heads"), llama.kv_heads(c), llama.head_dim(c)
    return block(
        "cross_attn",
        linear("q_proj", h, a * d, bias=False),
        linear("k_proj", h, kv * d, bias=False),
        linear("v_proj", h, kv * d, bias=False),
        linear("o_proj", a * d, h, bias=False),
        norm("q_norm", d, bias=False),
        norm("k_norm", d, bias=False),
        kind="attention",
    )


def mlp(c: Cfg) -> Block:
    return gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))


def layer(c: Cfg, cross: Hashable) -> tuple[Node, ...]:
    if not cross:
        return llama.rms_layer(c, llama.self_attn(c, bias=False), mlp(c))
    h = c.int("hidden_size")
    return (
        cross_attn(c),
        norm("input_layernorm", h, bias=False),
        Tensor("cross_attn_attn_gate", (1,), kind="attention"),
        mlp(c),
        norm("post_attention_layernorm", h, bias=False),
        Tensor("cross_attn_mlp_gate", (1,), kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size") + EXTRA_ROWS, h),
        *typed_stacks("layers", kinds(c), lambda k: layer(c, k), count=c.int("num_hidden_layers")),
        norm("norm", h, bias=False),
    )


def head(c: Cfg, body: Block) -> list[Node]:
    """The LM head over ``vocab_size`` rows (the embedding has eight more: never tied)."""
    return [block("lm_head", Tensor("weight", (c.int("vocab_size"), c.int("hidden_size"))), kind="output_head")]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Self-attention layers cache the text; cross-attention layers hold the image's keys and
    values, none for a prompt without an image."""
    from .cache import LayerKind, grouped

    kv, d = int(llama.kv_heads(c)), int(llama.head_dim(c))
    found = grouped(kinds(c))
    out = [LayerKind("full", n, kv, d, d, where=where) for cross, (n, where) in found.items() if not cross]
    n_cross = sum(kinds(c))
    notes = [f"the {n_cross} cross-attention layers cache an image's keys and values; a text-only prompt's, none"]
    return out, notes if n_cross else []


def cross_kinds(c: Cfg, states: int) -> tuple[Any, ...]:
    """The cross-attention layers' cache over ``states`` vision states (one image's): their own
    key and value heads, the self-attention layers' widths."""
    from .cache import LayerKind, grouped

    kv, d = int(llama.kv_heads(c)), int(llama.head_dim(c))
    found = grouped(kinds(c)).get(True)
    return (LayerKind("cross", found[0], kv, d, d, where=found[1], source=states),) if found else ()


FAMILY = Family(
    model_type="mllama_text_model",
    defaults=DEFAULTS,
    backbone="MllamaTextModel",
    check=llama.check,
    cache_layout=cache_layout,
    classes={"MllamaTextModel": base(backbone), "MllamaForCausalLM": with_head(backbone, "model", head)},
)

__all__ = ["FAMILY", "backbone", "cross_kinds", "head", "kinds"]
