"""Qwen1.5-MoE / Qwen2-MoE (Qwen team 2024): Qwen2 attention (Q/K/V biases behind
``qkv_bias``) with routed experts plus an always-on shared expert scaled by a sigmoid gate.

Which layers route is per layer (``decoder_sparse_step``, ``mlp_only_layers``), so the
backbone is runs of identical layers, each a stack starting at its first index.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Node, Sym
from . import Family, llama, mistral, moe
from .blocks import block, decoder_classes, embedding, fused_experts, norm, router, stack
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "tie_word_embeddings": False,
    "decoder_sparse_step": 1,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_experts_per_tok": 4,
    "num_experts": 60,
    "mlp_only_layers": None,
    "qkv_bias": True,
}

SparseLayer = Callable[[Cfg, bool], tuple[Node, ...]]
Experts = Callable[[Cfg], Sym]


def num_experts(c: Cfg) -> Sym:
    """The routed expert count; 0 makes every layer dense."""
    return c.int("num_experts", low=0)


def mlp_only_layers(c: Cfg) -> set[int]:
    value = c.get("mlp_only_layers")
    if value is None:
        return set()
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in value):
        raise c.error("mlp_only_layers", f"expected a list of layer indices, got {value!r}")
    return set(value)


def sparse_runs(c: Cfg, experts: Experts = num_experts) -> list[tuple[int, int, bool]]:
    """(first index, length, routes experts) of each run of alike layers. A layer routes
    when, as the decoder layer decides it, experts are configured, it is not listed in
    ``mlp_only_layers`` and its index + 1 is a multiple of ``decoder_sparse_step``
    (:func:`paramcount.arch.moe.runs`: the work grows with the runs, not the layers)."""
    layers, dense = c.int("num_hidden_layers"), mlp_only_layers(c)
    if experts(c) == 0:
        return [(0, layers, False)]
    return moe.runs(layers, step=int(c.int("decoder_sparse_step")), dense=dense)


def check_top_k(c: Cfg, experts: Experts = num_experts) -> None:
    n, k = experts(c), c.int("num_experts_per_tok")
    if n and k > n:
        raise c.error("num_experts_per_tok", f"{int(k)} is more than the {int(n)} experts")


def check(c: Cfg) -> None:
    mistral.check(c)
    check_top_k(c)


def routed(c: Cfg, experts: Experts = num_experts) -> tuple[Block, Block]:
    """The router ``gate`` (no bias) and the fused routed experts."""
    h, n = c.int("hidden_size"), experts(c)
    k, inter = c.int("num_experts_per_tok"), c.int("moe_intermediate_size")
    return router("gate", h, n), fused_experts(n, h, inter, k)


@per_cfg
def sparse_moe(c: Cfg) -> Block:
    h, shared = c.int("hidden_size"), c.int("shared_expert_intermediate_size")
    return block("mlp", *routed(c), *moe.shared_mlp(h, shared, name="shared_expert", gate="shared_expert_gate"))


def layer(c: Cfg, sparse: bool) -> tuple[Node, ...]:
    bias = c.bool("qkv_bias")
    attn = mistral.self_attn(c, bias=bias, out_bias=False)
    return llama.rms_layer(c, attn, sparse_moe(c) if sparse else mistral.swiglu(c))


def layer_runs(c: Cfg, layer: SparseLayer, experts: Experts = num_experts) -> tuple[Node, ...]:
    """Embedding, one ``layers`` stack per run of alike layers, final norm."""
    h = c.int("hidden_size")
    runs = sparse_runs(c, experts)
    stacks = (stack("layers", n, *layer(c, sparse), start=first) for first, n, sparse in runs)
    return (embedding("embed_tokens", c.int("vocab_size"), h), *stacks, norm("norm", h, bias=False))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return layer_runs(c, layer)


FAMILY = Family(
    model_type="qwen2_moe",
    defaults=DEFAULTS,
    backbone="Qwen2MoeModel",
    check=check,
    classes=decoder_classes("Qwen2Moe", backbone),
)

__all__ = ["FAMILY", "check_top_k", "layer_runs", "num_experts", "routed", "sparse_runs"]
