"""DeepSeek-V4 (DeepSeek-AI 2026). Not MLA: shared-KV multi-query attention (one ``head_dim``
key that is also the value) with a low-rank query (``q_a_proj`` → ``q_b_proj``), a grouped
low-rank output projection (``o_a_proj`` per head group, ``o_b_proj``) and a learned sink per
head. Each layer's ``layer_types`` entry picks its long-range branch:

- ``sliding_attention``: the sliding window alone, no compressor;
- ``heavily_compressed_attention`` (HCA): a compressor folding every ``compress_rates`` m'
  tokens into one entry (``kv_proj``, ``gate_proj`` and ``kv_norm`` at ``head_dim``, a
  ``position_bias`` of m' × head_dim);
- ``compressed_sparse_attention`` (CSA): a compressor over two overlapping series (widths
  2 × head_dim, ``position_bias`` m × 2·head_dim) plus a lightning indexer with its own
  compressor at ``index_head_dim``, a ``q_b_proj`` from the query latent and a ``weights_proj``.

Every layer is MoE (routed experts plus one shared expert of ``moe_intermediate_size``:
transformers ignores ``n_shared_experts``); ``hash_moe`` layers pick experts from a frozen
token → expert table (``tid2eid``, a buffer) instead of the router's top-k, the router weight
still scoring them. The residual is ``hc_mult`` streams mixed by manifold-constrained
hyper-connections (``attn_hc``, ``ffn_hc`` per layer, ``hc_head`` before the final norm).

Legacy fields are folded in as DeepseekV4Config does: ``compress_ratios`` (0 / 4 / 128 per
layer) for ``layer_types``, ``num_hash_layers`` for ``mlp_layer_types``,
``compress_rate_csa`` / ``compress_rate_hca`` into ``compress_rates``; per-layer lists longer
than ``num_hidden_layers`` are cut to it (the checkpoint's lists carry an entry for the
multi-token-prediction layer).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from . import moe as shared_moe
from .blocks import block, decoder_classes, embedding, linear, norm, typed_stacks
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 129280,
    "hidden_size": 4096,
    "intermediate_size": 2048,
    "num_hidden_layers": 43,
    "num_attention_heads": 64,
    "head_dim": 512,
    "q_lora_rank": 1024,
    "num_experts_per_tok": 6,
    "num_local_experts": 256,
    "n_shared_experts": 1,
    "layer_types": None,
    "mlp_layer_types": None,
    "compress_rates": None,
    "hc_mult": 4,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "num_nextn_predict_layers": 1,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "sliding_window": 128,
}

# DeepseekV4Config.attribute_map, keyed by the mapped names, which win when a file has both.
ALIASES = {"num_local_experts": ("n_routed_experts",), "intermediate_size": ("moe_intermediate_size",)}

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
RATIO_TYPES = {0: SLIDING, 4: CSA, 128: HCA}  # legacy compress_ratios entries
COMPRESS_RATES = {CSA: 4, HCA: 128}
HASH_LAYERS = 3  # DeepseekV4Config.default_num_hash_layers


def per_layer(c: Cfg, field: str, value: Any, allowed: tuple[Any, ...]) -> list[Any]:
    """A per-layer list cut to num_hidden_layers, as __post_init__ cuts it; shorter is refused."""
    n = int(c.int("num_hidden_layers"))
    if not isinstance(value, list) or len(value) < n:
        got = f"{len(value)} entries" if isinstance(value, list) else repr(value)
        raise c.error(field, f"expected a list of {n} entries (one per layer), got {got}")
    bad = sorted({repr(t) for t in value[:n] if isinstance(t, bool) or t not in allowed})
    if bad:
        raise c.error(field, f"unknown entries {', '.join(bad)} (expected one of {', '.join(map(str, allowed))})")
    return list(value[:n])


def layer_types(c: Cfg) -> list[str]:
    """Explicit ``layer_types``, else legacy ``compress_ratios``, else two HCA layers then
    HCA and CSA alternating (the class default)."""
    if c.raw.get("layer_types") is not None:
        return per_layer(c, "layer_types", c.raw["layer_types"], (SLIDING, CSA, HCA))
    if c.raw.get("compress_ratios") is not None:
        return [RATIO_TYPES[r] for r in per_layer(c, "compress_ratios", c.raw["compress_ratios"], tuple(RATIO_TYPES))]
    n = int(c.int("num_hidden_layers"))
    return [HCA] * min(n, 2) + [CSA if i % 2 else HCA for i in range(max(n - 2, 0))]


def mlp_layer_types(c: Cfg) -> list[str]:
    """Explicit ``mlp_layer_types``, else ``num_hash_layers`` (default 3) hash-routed layers first."""
    if c.raw.get("mlp_layer_types") is not None:
        return per_layer(c, "mlp_layer_types", c.raw["mlp_layer_types"], ("hash_moe", "moe"))
    n = int(c.int("num_hidden_layers"))
    hashed = min(n, int(c.int("num_hash_layers", low=0, default=HASH_LAYERS)))
    return ["hash_moe"] * hashed + ["moe"] * (n - hashed)


def compress_rate(c: Cfg, kind: str) -> int:
    """``compress_rates[kind]`` (a file's dict replaces the default one whole), or the legacy
    top-level ``compress_rate_csa`` / ``compress_rate_hca``."""
    legacy = "compress_rate_csa" if kind == CSA else "compress_rate_hca"
    if c.raw.get(legacy) is not None:
        return int(c.int(legacy))
    rates = c.raw.get("compress_rates")
    if rates is None:
        return COMPRESS_RATES[kind]
    if not isinstance(rates, dict) or kind not in rates:
        raise c.error("compress_rates", f"has no rate for {kind} layers: {rates!r}")
    value = rates[kind]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise c.error("compress_rates", f"{kind} rate must be a positive integer, got {value!r}")
    return value


def hca(c: Cfg) -> Block:
    h, d, m = c.int("hidden_size"), c.int("head_dim"), compress_rate(c, HCA)
    return block(
        "compressor",
        linear("kv_proj", h, d, bias=False),
        linear("gate_proj", h, d, bias=False),
        Tensor("position_bias", (m, d)),
        norm("kv_norm", d, bias=False),
        kind="attention",
    )


def overlapping(c: Cfg, name: str, d: Any, m: int, *extra: Node) -> Block:
    """A CSA compressor (or the indexer's own): two series of width d pooled over windows of m."""
    h = c.int("hidden_size")
    return block(
        name,
        linear("kv_proj", h, 2 * d, bias=False),
        linear("gate_proj", h, 2 * d, bias=False),
        Tensor("position_bias", (m, 2 * d)),
        norm("kv_norm", d, bias=False),
        *extra,
        kind="attention",
    )


def csa(c: Cfg) -> Block:
    h, m = c.int("hidden_size"), compress_rate(c, CSA)
    heads, d_i = c.int("index_n_heads"), c.int("index_head_dim")
    indexer = overlapping(
        c,
        "indexer",
        d_i,
        m,
        linear("q_b_proj", c.int("q_lora_rank"), heads * d_i, bias=False),
        block("scorer", linear("weights_proj", h, heads, bias=False)),
    )
    return overlapping(c, "compressor", c.int("head_dim"), m, indexer)


def self_attn(c: Cfg, kind: str) -> Block:
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), c.int("head_dim")
    r_q, g, r_o = c.int("q_lora_rank"), c.int("o_groups"), c.int("o_lora_rank")
    return block(
        "self_attn",
        linear("q_a_proj", h, r_q, bias=False),
        norm("q_a_norm", r_q, bias=False),
        linear("q_b_proj", r_q, a * d, bias=False),
        linear("kv_proj", h, d, bias=False),
        norm("kv_norm", d, bias=False),
        linear("o_a_proj", a * d // g, g * r_o, bias=False),  # one block of the grouped projection per group
        linear("o_b_proj", g * r_o, h, bias=False),
        Tensor("sinks", (a,)),
        {HCA: hca, CSA: csa}[kind](c) if kind != SLIDING else None,
        kind="attention",
    )


@per_cfg
def moe(c: Cfg) -> Block:
    """Router weight (hash layers keep it too, plus a tid2eid buffer), routed experts, and one
    shared expert of the experts' width (arch/moe.with_shared)."""
    h, e, i = c.int("hidden_size"), c.int("num_local_experts"), c.int("intermediate_size")
    k = shared_moe.top_k(c, e)
    return shared_moe.with_shared(h, e, i, k, i, bias=c.bool("mlp_bias"))


@per_cfg
def hyper_connection(c: Cfg, name: str) -> Block:
    """mHC: one projection from the hc_mult streams to the pre, post and comb weights
    ((2 + n)·n of them), their biases and three scales."""
    n, h = c.int("hc_mult"), c.int("hidden_size")
    out = (2 + n) * n
    return block(name, Tensor("fn", (out, n * h)), Tensor("base", (out,)), Tensor("scale", (3,)), kind="other")


@per_cfg
def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    """One decoder layer of attention type ``kind`` (a hash_moe layer differs from a moe one
    by a buffer only, so the MLP type changes no shape)."""
    h = c.int("hidden_size")
    return (
        self_attn(c, str(kind)),
        moe(c),
        norm("input_layernorm", h, bias=False),
        norm("post_attention_layernorm", h, bias=False),
        hyper_connection(c, "attn_hc"),
        hyper_connection(c, "ffn_hc"),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h, n = c.int("hidden_size"), c.int("hc_mult")
    head = block(
        "hc_head", Tensor("hc_fn", (n, n * h)), Tensor("hc_base", (n,)), Tensor("hc_scale", (1,)), kind="other"
    )
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        *typed_stacks("layers", layer_types(c), lambda kind: layer(c, kind), count=c.int("num_hidden_layers")),
        norm("norm", h, bias=False),
        head,
    )


def notes(c: Cfg, cls: str) -> list[str]:
    from ..count import total

    out = ["each router stores e_score_correction_bias, and each hash_moe router a tid2eid table: buffers, not counted"]
    shared = int(c.int("n_shared_experts", low=0))
    if shared != 1:
        out.append(f"n_shared_experts = {shared} is ignored by transformers: every layer has one shared expert")
    mtp = int(c.int("num_nextn_predict_layers", low=0))
    if mtp:
        kind, said = mtp_kind(c)
        each = total(block("", *layer(c, kind)))
        out.append(
            f"the published checkpoint also holds {mtp} multi-token-prediction layer(s) that the transformers model "
            f"does not build, not counted: at least {mtp * each:,} parameters (a {kind} decoder layer each, {said}), "
            "plus their own projections and norms, whose shapes transformers does not define"
        )
    return out


def mtp_kind(c: Cfg) -> tuple[str, str]:
    """The MTP layer's attention type: compress_ratios' entry past the last layer where the
    file has one (DeepSeek's lists do), else the last layer's."""
    n, ratios = int(c.int("num_hidden_layers")), c.raw.get("compress_ratios")
    if c.raw.get("layer_types") is None and isinstance(ratios, list) and len(ratios) > n and ratios[n] in RATIO_TYPES:
        return RATIO_TYPES[ratios[n]], f"compress_ratios[{n}] = {ratios[n]}"
    return layer_types(c)[-1], "as the last layer here"


def check(c: Cfg) -> None:
    kinds = set(layer_types(c))
    for kind in kinds - {SLIDING}:
        compress_rate(c, kind)
    mlp_layer_types(c)
    shared_moe.top_k(c, c.int("num_local_experts"))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list, list[str]]:
    """transformers' DynamicCache for V4: every layer a sliding window of one K=V head
    (``DynamicSlidingWindowLayer``, whose pure sliding layers keep keys and values apart; the
    compressed layers' ``DeepseekV4HCACache.update`` makes values the keys). An HCA layer adds its
    compressor's entries and the unfinished window's projected kv and gate; a CSA layer the same
    at twice the width (two overlapping series), its indexer's own, and each one's carried
    half-window (``DeepseekV4CSACache.update_overlap_state``)."""
    from .cache import LayerKind, typed_groups

    d, d_i, w = int(c.int("head_dim")), int(c.int("index_head_dim")), int(c.int("sliding_window"))
    groups = typed_groups(c, "layer_types", layer_types(c), int(c.int("num_hidden_layers")))
    kinds = []
    for kind, (n, where) in groups.items():
        if kind == SLIDING:
            kinds.append(LayerKind("sliding", n, 1, d, d, window=w, where=where))
            continue
        m = compress_rate(c, kind)
        kinds.append(LayerKind("sliding", n, 1, d, 0, window=w, where=where, stores="k=v"))
        kinds.append(LayerKind("compressed", n, 1, d, 0, where=where, stores="compressed KV", rate=m))
        wide = 2 * d if kind == CSA else d  # CSA projects two series (Ca, Cb) per token
        kinds.append(LayerKind("buffer", n, 1, wide, wide, where=where, stores="compressor buffer (kv, gate)", rate=m))
        if kind == CSA:
            kinds += [
                LayerKind("overlap", n, 1, d, d, where=where, stores="compressor overlap (kv, gate)", rate=m),
                LayerKind("compressed", n, 1, d_i, 0, where=where, stores="indexer compressed keys", rate=m),
                LayerKind("buffer", n, 1, 2 * d_i, 2 * d_i, where=where, stores="indexer buffer (kv, gate)", rate=m),
                LayerKind("overlap", n, 1, d_i, d_i, where=where, stores="indexer overlap (kv, gate)", rate=m),
            ]
    return kinds, []


FAMILY = Family(
    model_type="deepseek_v4",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="DeepseekV4Model",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes=decoder_classes("DeepseekV4", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "layer_types", "mlp_layer_types"]
