"""SmolLM3 (Hugging Face 2025): Llama's layout where every ``no_rope_layer_interval``-th
layer skips rotary positions (``no_rope_layers``), which changes no parameter, with
``attention_bias`` and ``mlp_bias`` switches and a tied head by default. With
``use_sliding_window`` and a ``sliding_window``, the no-rope layers slide."""

from __future__ import annotations

from typing import Any

from ..ir import Node
from . import Family, dense, llama, mistral
from .blocks import decoder_classes, gated_mlp
from .config import Cfg

# SmolLM3Config has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 128256,
    "hidden_size": 2048,
    "intermediate_size": 11008,
    "num_hidden_layers": 36,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "attention_bias": False,
    "mlp_bias": False,
    "use_sliding_window": False,
    "sliding_window": None,
    "no_rope_layers": None,
    "no_rope_layer_interval": 4,
    "layer_types": None,
    "tie_word_embeddings": True,
}


def layer(c: Cfg) -> tuple[Node, ...]:
    ff = gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=c.bool("mlp_bias"))
    return llama.rms_layer(c, dense.attn(c, bias=c.bool("attention_bias")), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def check(c: Cfg) -> None:
    """The attention of layer i reads ``no_rope_layers[i]``: a shorter list cannot be built
    (a longer one is read no further than ``num_hidden_layers``)."""
    dense.check(c)
    flags = c.raw.get("no_rope_layers")
    layers = int(c.int("num_hidden_layers"))
    if flags is not None and (not isinstance(flags, list) or len(flags) < layers):
        got = f"{len(flags)} entries" if isinstance(flags, list) else repr(flags)
        raise c.error("no_rope_layers", f"expected a list of {layers} flags (num_hidden_layers), got {got}")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """``__post_init__``'s ``layer_types``: the no-rope layers slide when ``use_sliding_window``
    and ``sliding_window`` are both set, else every layer is full attention."""
    from . import cache as kv_layout

    d, kv = int(dense.head_dim(c)), int(mistral.kv_heads(c))
    layers = int(c.int("num_hidden_layers"))
    w = c.raw.get("sliding_window") if c.bool("use_sliding_window") else None
    if c.raw.get("layer_types") is not None:
        return kv_layout.self_kinds(c, model_type, (kv, d, d))
    if w is None:
        return [kv_layout.LayerKind("full", layers, kv, d, d, where=kv_layout._span(0, layers))], []
    flags = c.raw.get("no_rope_layers")
    if flags is not None:  # already a list in memory
        types = ["full_attention" if f else "sliding_attention" for f in flags[:layers]]
        seen = Cfg({**c.raw, "layer_types": types}, c.defaults, c.source, c.aliases)
        return kv_layout.self_kinds(seen, model_type, (kv, d, d))
    # the interval rule: layer i has no rope, so slides, when (i + 1) % interval == 0; that is
    # kv_layout._every's pattern with the two kinds swapped
    window = int(c.int("sliding_window"))
    swap = {"full": ("sliding", window), "sliding": ("full", None)}
    groups = kv_layout._every(layers, int(c.int("no_rope_layer_interval")), window)
    kinds = [kv_layout.LayerKind(swap[k][0], n, kv, d, d, swap[k][1], where) for k, n, where, _ in groups]
    return kinds, kv_layout.window_notes(kinds)


FAMILY = Family(
    model_type="smollm3",
    defaults=DEFAULTS,
    backbone="SmolLM3Model",
    check=check,
    cache_layout=cache_layout,
    classes=decoder_classes("SmolLM3", backbone, qa_attr="transformer"),
)

__all__ = ["FAMILY", "backbone", "layer"]
