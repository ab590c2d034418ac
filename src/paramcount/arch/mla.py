"""Multi-head latent attention (DeepSeek-V2, 2024) and what the DeepSeek line builds around it:
the DeepSeek MoE block (routed plus shared experts), dense-then-MoE layer schedules, the
DeepSeek Sparse Attention indexer (DeepSeek-V3.2, GLM-5), and the cache layout of the latent
plus the indexer keys. Shared by deepseek_v2, deepseek_v3, deepseek_v32, glm_moe_dsa and
longcat_flash.

MLA: queries pass straight from h (``q_lora_rank: null``) or through a low-rank bottleneck
with its own RMSNorm; keys and values share one normed latent of width ``kv_lora_rank`` plus
a rotary key slice common to all heads, expanded per head by ``kv_b_proj``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..ir import Block, Node, Sym
from . import moe as shared_moe
from .blocks import block, embedding, gated_mlp, linear, norm, typed_stacks
from .config import Cfg, per_cfg
from .llama import rms_layer

Layer = Callable[[Hashable], Sequence[Node | None]]


def q_lora_rank(c: Cfg, nullable: bool = True) -> Sym | None:
    """``q_lora_rank: null`` (DeepSeek-V2-Lite, Moonlight) means a direct q_proj; only a missing
    field takes the default, so an explicit null is told apart from absence. Families whose
    attention always has the bottleneck (``nullable=False``) refuse the null: transformers
    cannot build them."""
    if "q_lora_rank" in c.raw and c.raw["q_lora_rank"] is None:
        if not nullable:
            raise c.error("q_lora_rank", "must be an integer in this family (its attention always has q_a_proj)")
        return None
    return c.int("q_lora_rank")


def query(c: Cfg, h: Sym, out: Sym, bias: bool, nullable: bool = True) -> tuple[Node, ...]:
    """Queries straight from h (never biased), or down to r_q, normed, and up to the heads."""
    r_q = q_lora_rank(c, nullable)
    if r_q is None:
        return (linear("q_proj", h, out, bias=False),)
    return (
        linear("q_a_proj", h, r_q, bias),
        norm("q_a_layernorm", r_q, bias=False),
        linear("q_b_proj", r_q, out, bias=False),
    )


def self_attn(
    c: Cfg,
    name: str = "self_attn",
    extra: Sequence[Node | None] = (),
    nullable: bool = True,
    q_head: Sym | None = None,
) -> Block:
    """MLA as transformers' DeepseekV2/V3 attention builds it; ``extra`` adds modules such as
    the DSA indexer. ``q_head`` overrides the query head width qk_nope + qk_rope (LongCat's
    settable ``qk_head_dim``)."""
    h, a = c.int("hidden_size"), c.int("num_attention_heads")
    rope, nope, v = c.int("qk_rope_head_dim"), c.int("qk_nope_head_dim"), c.int("v_head_dim")
    q_head = nope + rope if q_head is None else q_head
    r_kv = c.int("kv_lora_rank")
    bias = c.bool("attention_bias")
    return block(
        name,
        *query(c, h, a * q_head, bias, nullable),
        linear("kv_a_proj_with_mqa", h, r_kv + rope, bias),
        norm("kv_a_layernorm", r_kv, bias=False),
        linear("kv_b_proj", r_kv, a * (nope + v), bias=False),
        linear("o_proj", a * v, h, bias),
        *extra,
        kind="attention",
    )


def indexer(c: Cfg) -> Block:
    """The DeepSeek Sparse Attention indexer (V3.2, GLM-5): its own queries from the query
    latent, one shared key from h with a biased LayerNorm, and per-head weights from h."""
    h, r_q = c.int("hidden_size"), q_lora_rank(c, nullable=False)
    heads, d = c.int("index_n_heads"), c.int("index_head_dim")
    return block(
        "indexer",
        linear("wq_b", r_q, heads * d, bias=False),
        linear("wk", h, d, bias=False),
        norm("k_norm", d),
        linear("weights_proj", h, heads, bias=False),
        kind="attention",
    )


def dense_mlp(c: Cfg, bias: bool = False) -> Block:
    return gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"), bias=bias)


def top_k(c: Cfg) -> Sym:
    return shared_moe.top_k(c, c.int("n_routed_experts"))


def moe(c: Cfg, shared_bias: bool = False, k: Sym | int | None = None) -> Block:
    """DeepSeek's MoE (arch/moe.with_shared): routed experts (k of E run), the router's weight,
    and the always-on shared experts as one MLP of width I_e·E_s (zero shared experts leave
    empty (0, h) tensors, as transformers builds them)."""
    h, e, i_e = c.int("hidden_size"), c.int("n_routed_experts"), c.int("moe_intermediate_size")
    shared = i_e * c.int("n_shared_experts", low=0)
    return shared_moe.with_shared(h, e, i_e, top_k(c) if k is None else k, shared, bias=shared_bias)


def first_dense(c: Cfg) -> list[str]:
    """``first_k_dense_replace`` dense layers, then MoE (transformers ignores ``moe_layer_freq``)."""
    n = int(c.int("num_hidden_layers"))
    dense = min(int(c.int("first_k_dense_replace", low=0)), n)
    return ["dense"] * dense + ["sparse"] * (n - dense)


def mlp_layer_types(c: Cfg, allowed: Sequence[str] = ("dense", "sparse")) -> list[str]:
    """A file's ``mlp_layer_types`` list (DeepSeek-V3.2, GLM-5), else from first_k_dense_replace."""
    value = c.raw.get("mlp_layer_types")
    if value is None:
        return first_dense(c)
    return type_list(c, "mlp_layer_types", value, allowed)


def type_list(c: Cfg, field: str, value: Any, allowed: Sequence[str]) -> list[str]:
    """A per-layer list of names, one per layer, each among ``allowed``."""
    n = int(c.int("num_hidden_layers"))
    if not isinstance(value, list) or len(value) != n:
        got = f"{len(value)} entries" if isinstance(value, list) else repr(value)
        raise c.error(field, f"expected a list of {n} entries, got {got}")
    bad = sorted({repr(t) for t in value if t not in allowed})
    if bad:
        raise c.error(field, f"unknown entries {', '.join(bad)} (expected {' or '.join(allowed)})")
    return list(value)


def backbone(c: Cfg, kinds: Sequence[Hashable], layer: Layer) -> tuple[Node, ...]:
    """Embedding, one ``layers`` stack per run of alike layers, final RMSNorm."""
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        *typed_stacks("layers", kinds, layer, count=c.int("num_hidden_layers")),
        norm("norm", h, bias=False),
    )


@per_cfg
def dsa_layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    """A DeepSeek Sparse Attention layer (V3.2, GLM-5): MLA with the query bottleneck, its
    indexer where the layer runs one, and a dense or MoE MLP. ``kind`` is (mlp type, indexed)."""
    mlp, indexed = kind  # type: ignore[misc]
    attn = self_attn(c, extra=(indexer(c) if indexed else None,), nullable=False)
    return rms_layer(c, attn, moe(c) if mlp == "sparse" else dense_mlp(c))


def dsa_backbone(c: Cfg, indexed: Sequence[bool]) -> tuple[Node, ...]:
    kinds = list(zip(mlp_layer_types(c), indexed, strict=True))
    return backbone(c, kinds, lambda kind: dsa_layer(c, kind))


def moe_layer_freq_note(c: Cfg) -> list[str]:
    freq = c.raw.get("moe_layer_freq", 1)
    if freq in (1, None):
        return []
    return [
        f"moe_layer_freq = {freq!r} is ignored by transformers (every layer from first_k_dense_replace "
        "on is MoE), as counted here; DeepSeek's own code would make only every n-th layer MoE"
    ]


def mtp_note(c: Cfg, layer: Callable[[], Sequence[Node | None]], copies: str, whose: str = "") -> list[str]:
    """arch/moe.mtp_note for a family whose MTP layer is built as ``layer()`` (called only
    when the checkpoint has MTP layers); a family without the field has none."""
    if not int(c.int("num_nextn_predict_layers", low=0, default=0)):
        return []
    return shared_moe.mtp_note(c, lambda: sum(x.count for x in layer() if x is not None), copies, whose)


def latent_view(c: Cfg) -> Cfg:
    """The config without a ``layer_types`` list of only ``indexed_attention`` (what DSA configs
    default to, and what transformers writes back): every layer then caches the latent in full."""
    types = c.raw.get("layer_types")
    if types is None:
        return c
    type_list(c, "layer_types", types, ("indexed_attention",))
    raw = {k: v for k, v in c.raw.items() if k != "layer_types"}
    return Cfg(raw, c.defaults, c.source, c.aliases, prefix=c.prefix)


def cache_layout(indexed: Callable[[Cfg], list[bool]] | None = None) -> Callable[..., tuple[list[Any], list[str]]]:
    """The MLA latent of every layer (``kv_layout._deepseek``), plus, for a DSA model, the
    indexer keys (``DynamicIndexedLayer.indexer_keys``: one ``index_head_dim`` key per token)
    of the layers whose ``indexed(c)`` entry is true (those that run their own indexer)."""

    def build(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
        from .cache import LayerKind, _deepseek, _runs

        kinds, notes = _deepseek(latent_view(c), model_type, cls, mla)
        if indexed is None:
            return kinds, notes
        at = [i for i, on in enumerate(indexed(c)) if on]
        if not at:
            return kinds, notes
        d = int(c.int("index_head_dim"))
        kinds.append(LayerKind("full", len(at), 1, d, 0, where=_runs(at), stores="indexer"))
        return kinds, [*notes, f"DSA indexer keys: index_head_dim = {d:,} elements per token per indexed layer"]

    return build


__all__ = [
    "backbone",
    "cache_layout",
    "dense_mlp",
    "dsa_backbone",
    "dsa_layer",
    "first_dense",
    "indexer",
    "latent_view",
    "mlp_layer_types",
    "moe",
    "moe_layer_freq_note",
    "mtp_note",
    "q_lora_rank",
    "self_attn",
    "top_k",
    "type_list",
]
