"""MPT (MosaicML 2023) as transformers builds it: a fused biasless ``Wqkv``, biasless output
and MLP projections, LayerNorms whose bias transformers removes, ALiBi positions (no
parameters), and the output head tied to the token embedding.

transformers' ``MptModel`` ignores several fields of MosaicML's own config (the MLP is always
4 × ``d_model``, every projection biasless, attention always multi-head without q/k norms);
where a file sets them otherwise its checkpoint holds tensors transformers does not build, and
:func:`notes` says so rather than counting a layout transformers cannot load."""

from __future__ import annotations

from typing import Any

from ..ir import Node
from . import Family
from .blocks import base, block, classifier, embedding, linear, lm_head, norm, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50368,
    "max_seq_len": 2048,
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "expansion_ratio": 4,
    "no_bias": True,
    "learned_pos_emb": True,
    "tie_word_embeddings": True,
}

# MptConfig.attribute_map: files say d_model, n_heads, n_layers.
ALIASES = {
    "hidden_size": ("d_model",),
    "num_attention_heads": ("n_heads",),
    "num_hidden_layers": ("n_layers",),
}


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attn = (linear("Wqkv", h, 3 * h, bias=False), linear("out_proj", h, h, bias=False))
    ffn = (linear("up_proj", h, 4 * h, bias=False), linear("down_proj", 4 * h, h, bias=False))
    return (
        norm("norm_1", h, bias=False, form="layernorm"),
        block("attn", *attn, kind="attention"),
        norm("norm_2", h, bias=False, form="layernorm"),
        block("ffn", *ffn, kind="feed_forward"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("wte", c.int("vocab_size"), h),
        stack("blocks", c.int("num_hidden_layers"), *layer(c)),
        norm("norm_f", h, bias=False, form="layernorm"),
    )


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    attn = c.raw.get("attn_config")
    if attn is not None and not isinstance(attn, dict):
        raise c.error("attn_config", f"expected an object, got {attn!r}")


def notes(c: Cfg, class_name: str) -> list[str]:
    """MosaicML fields transformers' MptModel does not honour, where a file departs from the
    layout transformers builds (its checkpoint then holds other tensors)."""
    attn = c.raw.get("attn_config") or {}
    ignored = []
    if c.raw.get("expansion_ratio", 4) != 4:
        ignored.append(f"expansion_ratio {c.raw['expansion_ratio']} (MLP built 4 × d_model)")
    if c.raw.get("no_bias", True) is False:
        ignored.append("no_bias false (projections and norms built without biases)")
    if attn.get("attn_type", "multihead_attention") != "multihead_attention":
        ignored.append(f"attn_type {attn['attn_type']} (built multi-head)")
    if attn.get("qk_ln"):
        ignored.append("qk_ln (no q/k LayerNorms built)")
    if not ignored:
        return []
    said = "transformers' MptModel ignores " + "; ".join(ignored)
    return [said + ": counted as transformers builds it, which differs from this checkpoint"]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Every layer caches all ``n_heads`` heads of d_model / n_heads (ALiBi, no window)."""
    from .cache import self_kinds

    a = int(c.int("num_attention_heads"))
    d = int(c.int("hidden_size")) // a
    return self_kinds(c, model_type, (a, d, d))


FAMILY = Family(
    model_type="mpt",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="MptModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes={
        "MptModel": base(backbone),
        "MptForCausalLM": with_head(backbone, "transformer", lm_head("wte.weight")),
        "MptForSequenceClassification": with_head(backbone, "transformer", classifier("score", bias=False)),
        "MptForTokenClassification": with_head(backbone, "transformer", classifier("classifier")),
        "MptForQuestionAnswering": with_head(
            backbone, "transformer", lambda c, body: [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")]
        ),
    },
)
