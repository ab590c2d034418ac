"""LFM2 (Liquid AI 2025): per ``layer_types`` (else ``full_attn_idxs``), each layer's operator is
GQA attention with per-head q/k RMSNorms (``self_attn``, output ``out_proj``) or a gated short
convolution (``conv``: ``in_proj`` h → 3h for the gates B, C and the input, a depthwise
``conv`` over ``conv_L_cache`` steps, ``out_proj``; ``conv_bias`` on all three), then a SwiGLU
MLP (``w1``/``w3``/``w2``) whose width ``block_auto_adjust_ff_dim`` recomputes from
``intermediate_size``. The final RMSNorm is called ``embedding_norm``. The older names
``block_ff_dim`` and ``tie_embedding`` win over ``intermediate_size`` and
``tie_word_embeddings``, as Lfm2Config takes them.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Sym, Tensor, Tie, join
from . import Family, llama, mistral
from .blocks import attention, base, block, find, linear, norm, typed_decoder, with_head
from .config import MAX_DIM, MAX_FACTOR, Cfg, per_cfg
from .ssm import ATTENTION, conv, hybrid_cache

CONV = "conv"
DEFAULTS = {
    "vocab_size": 65536,
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": None,
    "tie_word_embeddings": True,
    "conv_bias": False,
    "conv_L_cache": 3,
    "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0,
    "block_auto_adjust_ff_dim": True,
    "full_attn_idxs": None,
    "layer_types": None,
}
# Lfm2Config pops these older names and lets them override the current ones.
OVERRIDES = {"intermediate_size": "block_ff_dim", "tie_word_embeddings": "tie_embedding"}


def field(c: Cfg, name: str) -> str:
    old = OVERRIDES[name]
    return old if c.raw.get(old) is not None else name


def ff_width(c: Cfg) -> Sym:
    """The MLP width: with ``block_auto_adjust_ff_dim``, int(2I/3), then int(multiplier × that)
    rounded up to ``block_multiple_of``, as Lfm2MLP computes it (Lfm2Config refuses a null
    multiplier, so the branch that skips it cannot be taken)."""
    width = c.int(field(c, "intermediate_size"))
    if not c.bool("block_auto_adjust_ff_dim"):
        return width
    if "block_ffn_dim_multiplier" in c.raw and c.raw["block_ffn_dim_multiplier"] is None:
        raise c.error("block_ffn_dim_multiplier", "must be a number (transformers refuses null)")
    multiplier, step = c.number("block_ffn_dim_multiplier", low=0, high=MAX_FACTOR), int(c.int("block_multiple_of"))
    adjusted = int(multiplier * int(2 * int(width) / 3))
    adjusted = step * ((adjusted + step - 1) // step)
    if not 1 <= adjusted <= MAX_DIM:
        raise c.error("block_ffn_dim_multiplier", f"gives an MLP width of {adjusted}")
    return Sym(adjusted, "I_ff")


def kinds(c: Cfg) -> list[str]:
    """Each layer's operator: ``layer_types``, else attention at ``full_attn_idxs`` (default:
    every layer) and short convolutions elsewhere."""
    n = int(c.int("num_hidden_layers"))
    types = c.get("layer_types")
    if types is None:
        idxs = c.get("full_attn_idxs")
        if idxs is None:
            return [ATTENTION] * n
        if not isinstance(idxs, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in idxs):
            raise c.error("full_attn_idxs", f"expected a list of layer indices, got {idxs!r:.80}")
        full = set(idxs)
        return [ATTENTION if i in full else CONV for i in range(n)]
    if not isinstance(types, list) or len(types) != n:
        got = f"{len(types)} entries" if isinstance(types, list) else f"{types!r:.80}"
        raise c.error("layer_types", f"expected a list of {n} layer types (num_hidden_layers), got {got}")
    unknown = sorted({f"{t!r:.40}" for t in types if t not in (ATTENTION, CONV)})
    if unknown:
        raise c.error("layer_types", f"unknown layer type(s) {', '.join(unknown[:3])}; expected full_attention or conv")
    return list(types)


def short_conv(c: Cfg) -> Block:
    h, bias = c.int("hidden_size"), c.bool("conv_bias")
    return block(
        "conv",
        conv("conv", h, c.int("conv_L_cache"), bias),
        linear("in_proj", h, 3 * h, bias),
        linear("out_proj", h, h, bias),
        kind="recurrent",
    )


@per_cfg
def self_attn(c: Cfg) -> Block:
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), llama.head_dim(c)
    qk = (norm("q_layernorm", d, bias=False), norm("k_layernorm", d, bias=False))
    names = ("q_proj", "k_proj", "v_proj", "out_proj")
    return attention("self_attn", h, a, mistral.kv_heads(c), d, names=names, extra=qk)


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    h, width = c.int("hidden_size"), ff_width(c)
    ff = block(
        "feed_forward",
        linear("w1", h, width, bias=False),
        linear("w3", h, width, bias=False),
        linear("w2", width, h, bias=False),
        kind="feed_forward",
    )
    mixer = self_attn(c) if kind == ATTENTION else short_conv(c)
    return mixer, ff, norm("operator_norm", h, bias=False), norm("ffn_norm", h, bias=False)


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, kinds(c), layer, final_norm="embedding_norm")


def head(c: Cfg, body: Block) -> list[Node]:
    """The LM head, tied by ``tie_embedding`` where the file has it, else ``tie_word_embeddings``."""
    emb = find(body, "embed_tokens.weight")
    if c.bool(field(c, "tie_word_embeddings")):
        weight: Node = Tie("weight", emb.shape, target=join(body.name, "embed_tokens.weight"))
    else:
        weight = Tensor("weight", emb.shape)
    return [block("lm_head", weight, kind="output_head")]


def check(c: Cfg) -> None:
    if ATTENTION in kinds(c):
        llama.check(c)
    ff_width(c)


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Attention layers cache keys and values; a short-convolution layer keeps its last
    ``conv_L_cache`` inputs over h channels (in the cache dtype), constant in the context."""
    from .cache import LayerKind, state_kind

    kv, d = int(mistral.kv_heads(c)), int(llama.head_dim(c))
    window = int(c.int("hidden_size")) * int(c.int("conv_L_cache"))
    found = hybrid_cache(
        c,
        "layer_types",
        kinds(c),
        {
            ATTENTION: lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
            CONV: lambda n, where: [state_kind(n, window, "conv state", where)],
        },
    )
    return found, ["short-convolution layers keep a conv state per sequence instead of a KV cache"]


FAMILY = Family(
    model_type="lfm2",
    defaults=DEFAULTS,
    backbone="Lfm2Model",
    check=check,
    cache_layout=cache_layout,
    classes={"Lfm2Model": base(backbone), "Lfm2ForCausalLM": with_head(backbone, "model", head)},
)
