"""GraniteMoE (IBM 2024: PowerMoE, Granite 3.0/3.1 MoE): Granite's attention (one
``attention_bias`` switch for all four projections) with routed SwiGLU experts under
``block_sparse_moe`` in every layer: a bias-free top-k router and fused experts. Its
multipliers scale activations and change no shape.

Checkpoints store the experts as ``input_linear.weight`` (E, 2I, h) and ``output_linear.weight``
(E, h, I) and the router as ``router.layer.weight``; transformers renames them on load.
"""

from __future__ import annotations

from ..ir import Block, Node, Tensor
from . import Family, dense, llama, mistral, moe
from .blocks import block, decoder_classes, linear
from .config import Cfg

# GraniteMoeConfig has no head_dim field: the attention takes one from the file, else h/a.
DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}


def experts(c: Cfg, n: int | None = None) -> Block:
    """Fused routed experts (k of E active), with the checkpoint's ``input_linear`` and
    ``output_linear`` names."""
    h, inter = c.int("hidden_size"), c.int("intermediate_size")
    n = n if n is not None else c.int("num_local_experts")
    k = moe.top_k(c, n)
    up, down = (n, 2 * inter, h), (n, h, inter)
    saved = Block(
        "", (Block("input_linear", (Tensor("weight", up),)), Block("output_linear", (Tensor("weight", down),)))
    )
    return Block(
        "experts",
        (Tensor("gate_up_proj", up), Tensor("down_proj", down)),
        kind="experts",
        active=(int(k), int(n)),
        checkpoint=saved,
    )


def sparse_moe(c: Cfg, n: int | None = None) -> Block:
    """``block_sparse_moe``: the router's (E, h) weight (``router.layer.weight`` in checkpoints)
    and the experts."""
    h = c.int("hidden_size")
    n = n if n is not None else c.int("num_local_experts")
    route = moe.router("router", h, n)
    route = Block("router", route.children, kind="router", checkpoint=Block("router", (linear("layer", h, n, False),)))
    return block("block_sparse_moe", route, experts(c, n))


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, mistral.self_attn(c, bias=c.bool("attention_bias")), sparse_moe(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return llama.backbone(c, layer)


def check(c: Cfg) -> None:
    mistral.check(c)
    moe.top_k(c, c.int("num_local_experts"))


FAMILY = Family(
    model_type="granitemoe",
    defaults=DEFAULTS,
    backbone="GraniteMoeModel",
    check=check,
    cache_layout=dense.plain_cache(),
    classes=decoder_classes("GraniteMoe", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "experts", "sparse_moe"]
