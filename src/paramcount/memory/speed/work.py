"""What one token reads and computes under llama.cpp, on each device, from the memory plan's placement.

The rows are the planner's loaded weights (``LlamaCppPlanner.loaded``: GGUF types from the type
tables, so a Q4_0 row's bytes are its blocks'), placed by the same rules the memory plan uses
(:func:`..runtimes.llamacpp.offload.build`: ``-ngl``, ``-ot``, ``--n-cpu-moe``, ``-ts``). A decode
step of one sequence reads:

* every weight of its device's layers once (``ggml_mul_mat`` streams the matrix for a 1-row
  batch), but of stacked experts only the k of E the router picks (``ggml_mul_mat_id`` reads the
  rows of the chosen experts, ``llm_graph_context::build_moe_ffn``);
* of the token embedding one row (``ggml_get_rows`` in ``build_inp_embd``: always on the host,
  the input layer is never offloaded);
* the KV cache of each attention layer at the context depth (``build_attn_mha`` /
  ``ggml_flash_attn_ext`` read the cells in use), on the layer's device (the host with -nkvo);
  a sliding-window layer reads at most its window.

FLOPs come from :func:`..flops.forward_flops`, the same count ``compute`` reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..flops import forward_flops
from .lookups import lookups

HOST = None  # the device key of host memory (llama.cpp's CPU buffers)


@dataclass(frozen=True)
class Work:
    """One token's reads and FLOPs. ``weights`` and ``kv_per_cell`` are by device (an index in
    the placement's GPUs, or ``HOST``); ``layers`` the repeating layers each device runs."""

    weights: Mapping[int | None, int]
    lookup: int  # bytes of the embedding rows one token reads (host memory)
    kv_kinds: tuple[tuple[int, int | None], ...]  # per layer kind: KV bytes per cell, its window
    kv_shares: Mapping[int | None, Fraction]  # each device's share of the cache (its layers')
    layers: Mapping[int | None, int]
    matmul_params: int  # weights a token multiplies by (k of E experts)
    attention_width: int  # Σ over layers of heads × head dim (QKᵀ and AV per cell)
    active: Fraction  # the share of routed-expert bytes a token reads
    resident: Mapping[int | None, int] | None = None  # every weight byte each device holds (None: as read)
    notes: tuple[str, ...] = ()  # what the reads leave out (no KV layout known: the cache's reads)
    scores_per_cell: int = 0  # flash attention off: bytes the attention scores move per token and cell
    kv_element_bytes: int | None = None  # the cache's bytes per value where one dtype holds it all (vLLM's)
    weight_type: str = ""  # the scheme the matmuls' weights are in (q4_k_m, bf16): which CPU units run them

    def scores(self, cells: int) -> dict[int | None, int]:
        """Bytes the attention scores of ``cells`` (token, context cell) pairs move, per device:
        without flash attention llama.cpp's ``build_attn_mha`` writes KQ (f32, one per query head),
        reads and writes it in ``ggml_soft_max_ext`` and reads it in the KQV product: 4 passes."""
        return {d: round(self.scores_per_cell * cells * share) for d, share in self.kv_shares.items()}

    def kv(self, depth: int) -> dict[int | None, int]:
        """KV bytes a decode step at ``depth`` cells reads, per device."""
        whole = sum(b * min(depth, w or depth) for b, w in self.kv_kinds)
        return {d: round(whole * share) for d, share in self.kv_shares.items()}

    def read(self, depth: int) -> dict[int | None, int]:
        """Bytes a decode step reads per device: weights touched, KV at depth, embedding rows."""
        out = dict(self.weights)
        for d, b in self.kv(depth).items():
            out[d] = out.get(d, 0) + b
        out[HOST] = out.get(HOST, 0) + self.lookup
        return out

    def flops(self, depth: int) -> int:
        """FLOPs of one token at ``depth``: 2 per weight multiplied, 4·depth·d_attn of attention."""
        return 2 * self.matmul_params + 4 * depth * self.attention_width

    def prompt_flops(self, tokens: int) -> int:
        """FLOPs of a prompt of ``tokens`` under a causal mask (token t attends to t + 1 cells)."""
        return tokens * 2 * self.matmul_params + self.prompt_attention_flops(tokens)

    def prompt_attention_flops(self, tokens: int) -> int:
        """Of :meth:`prompt_flops`, attention's: QKᵀ and AV over the causal triangle."""
        return 2 * tokens * (tokens + 1) * self.attention_width


def llamacpp(planner: Any) -> Work:
    """The work of one token under a llama.cpp planner (``paramcount.memory.runtimes.planner``)."""
    from ..runtimes.llamacpp import offload
    from ..runtimes.llamacpp.placement import INPUT_LAYER, Placement
    from ..runtimes.llamacpp.plan import _output_copy

    p = planner.placement if getattr(planner, "offload", None) is not None else Placement()
    copy = _output_copy(planner.loaded, planner.arch, planner.gguf)
    off = offload.build(planner.model, planner.loaded, planner.every, planner.arch, planner.gguf, p, copy)
    active = _active(planner.model, planner.loaded.rows)
    weights: dict[int | None, int] = {}
    resident: dict[int | None, int] = {}
    for pl in off.placed:
        if INPUT_LAYER.match(pl.name) or (pl.row.kind == "embeddings" and pl.row.role != "tied"):
            continue  # looked up, one row a token: Work.lookup
        share = active if pl.row.kind == "experts" else 1
        weights[pl.device] = weights.get(pl.device, 0) + round(pl.row.bytes * share)
        resident[pl.device] = resident.get(pl.device, 0) + pl.row.bytes
    layers = _layers(off.layer_devices())
    forward = forward_flops(planner.model, 1)
    rows = [r for r in planner.loaded.rows if r.role != "tied"]
    n = sum(layers.values()) or 1
    shares = {d: Fraction(c, n) for d, c in layers.items()} if p.kv_offload else {HOST: Fraction(1)}
    kinds = _kv_kinds(planner)
    return Work(weights, lookups(rows).row, kinds, shares, layers, forward.matmul_params,
                forward.attention_width, active, resident, _unknown(planner.layout, planner.partial),
                _scores_per_cell(planner), weight_type=planner.scheme)  # fmt: skip


SCORE_PASSES = 4  # KQ written, read and written by the softmax, read by KQV (f32 each)


def _scores_per_cell(planner: Any) -> int:
    """Without flash attention: query heads × attention layers × 4 B × 4 passes per (token, cell)."""
    if planner.options.flash or planner.shape is None:
        return 0
    layers = sum(k.layers for k in getattr(planner.layout, "kinds", ()) if k.attention in ("full", "sliding"))
    return planner.shape.heads * layers * 4 * SCORE_PASSES


def _unknown(layout: Any, why: Any) -> tuple[str, ...]:
    if layout is not None and not why:
        return ()
    return (f"the KV cache's reads are left out (no attention layout: {why or 'none known'}): decode is overstated",)


def _layers(devices: list[int | None]) -> dict[int | None, int]:
    out: dict[int | None, int] = {}
    for d in devices:
        out[d] = out.get(d, 0) + 1
    return out


def _active(model: Any, rows: Any) -> Fraction:
    """Of the stacked experts' bytes, the share one token reads: k of E (1 for a dense model)."""
    inactive = model.total - model.active_total
    routed = sum(r.parameters for r in rows if r.kind == "experts")
    if inactive <= 0 or not routed:
        return Fraction(1)
    return Fraction(max(routed - inactive, 0), routed)


def _kv_kinds(planner: Any) -> tuple[tuple[int, int | None], ...]:
    """Per attention layer kind: the K and V bytes one cell holds over its layers, and its window
    (llama_kv_cache_iswa: a sliding layer keeps, and reads, at most its window)."""
    from ..runtimes.llamacpp.plan import _kind_widths, row_bytes

    o, out = planner.options, []
    for kind in getattr(planner.layout, "kinds", ()) or ():
        if kind.attention in ("full", "sliding"):
            k, v = _kind_widths(kind)
            cell = kind.layers * (row_bytes(o.type_k, k) + (row_bytes(o.type_v, v) if v else 0))
            out.append((cell, kind.window if kind.attention == "sliding" else None))
    return tuple(out)


def flat(model: Any, rows: Any, kv_element_bytes: int, devices: int = 1) -> Work:
    """The work of one token when every weight sits on one device, or is split evenly over
    ``devices`` tensor-parallel ranks (each rank reads its shard at the same time: the work here is
    one rank's). ``rows``: the weight rows of the scheme (:func:`..weights.schemes.weights`);
    ``kv_element_bytes``: the cache's bytes per element (2 for bf16, 1 for fp8)."""
    from ..context.kv_layout import layout_of

    rows = list(rows)
    active = _active(model, rows)
    weights = sum(round(r.bytes * (active if r.kind == "experts" else 1)) for r in rows)
    found = lookups(rows)
    layout, why = layout_of(model, "latent")
    kinds = tuple(
        (
            k.layers * k.kv_heads * (k.key_dim + k.value_dim) * kv_element_bytes,
            k.window if k.attention == "sliding" else None,
        )
        for k in (layout.kinds if layout else ())
        if k.attention in ("full", "sliding")
    )
    n = sum(k.layers for k in layout.kinds) if layout else 0
    forward = forward_flops(model, 1)
    share = Fraction(1, devices)
    return Work({0: round((weights - found.table) * share)}, round(found.row * share), kinds, {0: share}, {0: n},
                round(forward.matmul_params * share), round(forward.attention_width * share), active,
                {0: round((sum(r.bytes for r in rows) - found.table) * share)},
                _unknown(layout, why), kv_element_bytes=kv_element_bytes)  # fmt: skip
