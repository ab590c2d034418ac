"""Mixtral (Jiang et al. 2024): Mistral with every feed-forward replaced by top-k routing
over ``num_local_experts`` SwiGLU experts; checkpoints store them per expert as
``block_sparse_moe.experts.E.w1/w3/w2`` where transformers fuses them under ``mlp``."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, llama, mistral, moe
from .blocks import decoder_classes
from .config import Cfg

# MixtralConfig's class defaults; the expert count is read under its standard name
# ``num_experts`` (attribute_map), which transformers lets win over ``num_local_experts``
# when a file has both, so the default sits under that name too.
DEFAULTS = {
    **mistral.DEFAULTS,
    "num_experts": 8,
    "num_experts_per_tok": 2,
}

ALIASES = {"num_experts": ("num_local_experts",)}


def check(c: Cfg) -> None:
    mistral.check(c)
    experts, k = c.int("num_experts"), c.int("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"{int(k)} is more than num_local_experts ({int(experts)})")


def sparse_moe(c: Cfg) -> Block:
    """Router ``gate`` and fused experts under ``mlp``; the checkpoint's older module names
    (``block_sparse_moe``, ``w1`` gate, ``w3`` up, ``w2`` down) as its checkpoint view."""
    h, experts, k = c.int("hidden_size"), c.int("num_experts"), c.int("num_experts_per_tok")
    return moe.block_sparse_moe(h, experts, c.int("intermediate_size"), k)


def layer(c: Cfg) -> tuple[Node, ...]:
    return llama.rms_layer(c, mistral.self_attn(c), sparse_moe(c))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return mistral.backbone(c, layer)


FAMILY = Family(
    model_type="mixtral",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="MixtralModel",
    check=check,
    classes=decoder_classes("Mixtral", backbone),
)
