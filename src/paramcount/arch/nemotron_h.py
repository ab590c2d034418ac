"""Nemotron-H (NVIDIA 2025: Nemotron-H, Nemotron Nano 2, Nemotron 3): a stack of blocks, each an
RMSNorm and one mixer, its kind per layer from ``layers_block_type`` (or the older
``hybrid_override_pattern``: ``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` MoE). The MLP is
squared-ReLU without a gate (up, down); the MoE routes k of E such MLPs (fused as 3-D
``up_proj``/``down_proj``, optionally through a ``moe_latent_size`` projection) beside one
always-on shared MLP. The layer count is the pattern's length (``num_hidden_layers`` is ignored).

The LM head is never tied to the embedding (``_tied_weights_keys`` is empty), whatever
``tie_word_embeddings`` says.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Sym, Tensor
from . import Family, moe
from .blocks import attention, block, embedding, linear, norm, typed_stacks, with_head
from .blocks import base as base_class
from .config import MAX_LAYERS, Cfg, per_cfg
from .ssm import ATTENTION, MAMBA, STATE_NOTE, check_mamba2, hybrid_cache, layer_types, mamba2_mixer, mamba2_states

MOE, MLP = "moe", "mlp"
PATTERN = {"M": MAMBA, "E": MOE, "*": ATTENTION, "-": MLP}
TYPES = (MAMBA, ATTENTION, MOE, MLP)

DEFAULTS = {
    "vocab_size": 131072,
    "hidden_size": 4096,
    "layers_block_type": None,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 21504,
    "mlp_bias": False,
    "ssm_state_size": 128,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "n_groups": 8,
    "conv_kernel": 4,
    "use_conv_bias": True,
    "use_bias": False,
    "n_routed_experts": 8,
    "moe_intermediate_size": 7688,
    "moe_shared_expert_intermediate_size": 7688,
    "moe_latent_size": None,
    "num_experts_per_tok": 2,
    "num_nextn_predict_layers": 0,
    "mtp_layers_block_type": None,
}
ALIASES = {"layers_block_type": ("layer_types",), "n_routed_experts": ("num_local_experts",)}
# Older names NemotronHConfig still takes, and prefers, for these fields.
LEGACY = {"n_groups": "mamba_n_groups", "conv_kernel": "mamba_d_conv", "use_conv_bias": "mamba_conv_bias"}
DEFAULT_TYPES = [MAMBA, MOE, ATTENTION, MLP]


def legacy(c: Cfg, field: str) -> str:
    """The name to read ``field`` under: its legacy name wins when the file has it."""
    old = LEGACY[field]
    return old if c.raw.get(old) is not None else field


def kinds(c: Cfg) -> list[str]:
    """Each block's mixer: ``layers_block_type``, else the ``hybrid_override_pattern`` string,
    else the config's four-block default."""
    if c.get("layers_block_type") is not None:
        given = c.get("layers_block_type")
        count = len(given) if isinstance(given, list) else 0
        if not 1 <= count <= MAX_LAYERS:
            raise c.error(c.lookup("layers_block_type")[0], f"expected a list of 1..{MAX_LAYERS:,} layer types")
        return layer_types(c, c.lookup("layers_block_type")[0], count, TYPES)
    pattern = c.raw.get("hybrid_override_pattern")
    if pattern is None:
        return list(DEFAULT_TYPES)
    if not isinstance(pattern, str) or not 1 <= len(pattern) <= MAX_LAYERS:
        raise c.error("hybrid_override_pattern", f"expected a string of 1..{MAX_LAYERS:,} of M, *, - and E")
    unknown = sorted(set(pattern) - set(PATTERN))
    if unknown:
        raise c.error("hybrid_override_pattern", f"unknown block letter(s) {''.join(unknown)!r}; expected M, *, - or E")
    return [PATTERN[ch] for ch in pattern]


def inner(c: Cfg) -> Sym:
    return c.int("mamba_num_heads") * c.int("mamba_head_dim")


def mamba(c: Cfg) -> Node:
    h, heads, groups = c.int("hidden_size"), c.int("mamba_num_heads"), c.int(legacy(c, "n_groups"))
    state, kernel = c.int("ssm_state_size"), c.int(legacy(c, "conv_kernel"))
    return mamba2_mixer(
        h, inner(c), heads, groups, state, kernel, c.bool("use_bias"), c.bool(legacy(c, "use_conv_bias"))
    )


def mlp(c: Cfg, inter: Sym, name: str = "mixer", kind: str = "feed_forward") -> Block:
    """Squared-ReLU MLP without a gate: up (h → I), down (I → h), ``mlp_bias`` on both."""
    h, bias = c.int("hidden_size"), c.bool("mlp_bias")
    return block(name, linear("up_proj", h, inter, bias), linear("down_proj", inter, h, bias), kind=kind)


def experts(c: Cfg) -> Block:
    """k of E ungated experts on the latent width (``moe_latent_size``, else h), with the
    checkpoint's per-expert ``up_proj``/``down_proj``."""
    n, inter = c.int("n_routed_experts"), c.int("moe_intermediate_size")
    width = c.opt_int("moe_latent_size") or c.int("hidden_size")
    k = moe.top_k(c, n)
    per_expert = (linear("up_proj", width, inter, bias=False), linear("down_proj", inter, width, bias=False))
    return Block(
        "experts",
        (Tensor("up_proj", (n, inter, width)), Tensor("down_proj", (n, width, inter))),
        kind="experts",
        active=(int(k), int(n)),
        checkpoint=Block("experts", per_expert, repeat=n, kind="experts", active=(int(k), int(n))),
    )


@per_cfg
def moe_mixer(c: Cfg) -> Block:
    """The router ``gate`` (its ``e_score_correction_bias`` is a buffer), the experts, the
    shared MLP and, with ``moe_latent_size``, the projections into and out of the latent."""
    h, latent, bias = c.int("hidden_size"), c.opt_int("moe_latent_size"), c.bool("mlp_bias")
    shared = mlp(c, c.int("moe_shared_expert_intermediate_size"), "shared_experts", kind="experts")
    return block(
        "mixer",
        experts(c),
        moe.router("gate", h, c.int("n_routed_experts")),
        shared,
        linear("fc1_latent_proj", h, latent, bias) if latent else None,
        linear("fc2_latent_proj", latent, h, bias) if latent else None,
    )


@per_cfg
def self_attn(c: Cfg) -> Block:
    """Bias-free GQA (``attention_bias`` is not read), ``head_dim`` wide heads."""
    h, a, kv, d = c.int("hidden_size"), c.int("num_attention_heads"), c.int("num_key_value_heads"), c.int("head_dim")
    return attention("mixer", h, a, kv, d)


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    mixers = {MAMBA: mamba, ATTENTION: self_attn, MOE: moe_mixer, MLP: lambda c: mlp(c, c.int("intermediate_size"))}
    return norm("norm", c.int("hidden_size"), bias=False), mixers[str(kind)](c)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embeddings", c.int("vocab_size"), h),
        *typed_stacks("layers", kinds(c), lambda k: layer(c, k)),
        norm("norm_f", h, bias=False),
    )


def untied_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("lm_head", c.int("hidden_size"), c.int("vocab_size"), bias=False, kind="output_head")]


def check(c: Cfg) -> None:
    found = kinds(c)
    if MAMBA in found:
        check_mamba2(c, inner(c), "mamba_num_heads", legacy(c, "n_groups"))
    if ATTENTION in found and c.int("num_attention_heads") % c.int("num_key_value_heads"):
        raise c.error("num_key_value_heads", "must divide num_attention_heads")
    if MOE in found:
        moe.top_k(c, c.int("n_routed_experts"))


def mtp_types(c: Cfg) -> list[str]:
    """One MTP step's blocks (``mtp_layers_block_type``, default attention then MoE)."""
    given = c.get("mtp_layers_block_type")
    if given is None:
        return [ATTENTION, MOE]
    count = len(given) if isinstance(given, list) else 0
    return layer_types(c, "mtp_layers_block_type", max(count, 1), TYPES)


def notes(c: Cfg, cls: str) -> list[str]:
    """The checkpoint's multi-token-prediction weights (``mtp.*``), which transformers skips on
    load: per step its blocks (norm + mixer) with ``enorm``, ``hnorm``, ``eh_proj`` (2h → h)
    and a final norm, as vLLM's NemotronH-MTP builds them; embedding and head are shared."""
    steps = int(c.int("num_nextn_predict_layers", low=0))
    if not steps:
        return []
    h = int(c.int("hidden_size"))
    each = sum(node.count for t in mtp_types(c) for node in layer(c, t)) + 2 * h * h + 3 * h
    return [
        f"the published checkpoint also holds {steps} multi-token-prediction step(s) (mtp.*, {steps * each:,} "
        "parameters) that the transformers model skips on load; they are not counted"
    ]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Attention blocks cache keys and values; Mamba blocks a conv window and an fp32 SSM
    state; MLP and MoE blocks keep nothing."""
    from .cache import LayerKind

    kv, d = int(c.int("num_key_value_heads")), int(c.int("head_dim"))
    i, g = int(inner(c)), int(c.int(legacy(c, "n_groups")))
    s, k = int(c.int("ssm_state_size")), int(c.int(legacy(c, "conv_kernel")))
    found = hybrid_cache(
        c,
        "layers_block_type",
        kinds(c),
        {
            ATTENTION: lambda n, where: [LayerKind("full", n, kv, d, d, where=where)],
            MAMBA: lambda n, where: mamba2_states(n, where, i, g, s, k),
        },
    )
    return found, [STATE_NOTE]


FAMILY = Family(
    model_type="nemotron_h",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="NemotronHModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes={
        "NemotronHModel": base_class(backbone),
        "NemotronHForCausalLM": with_head(backbone, "model", untied_head),
    },
)
