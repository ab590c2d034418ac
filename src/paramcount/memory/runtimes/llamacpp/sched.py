"""What ggml-backend's scheduler copies between devices, per GPU: the split inputs kept
``GGML_SCHED_MAX_COPIES`` times with pipeline parallelism, and the activations a GPU receives
for the feed-forward tensors ``-ot`` puts on it while their layer runs on another device.

``ggml_backend_sched_split_graph`` (ggml/src/ggml-backend.cpp) cuts the graph where the backend
changes; each split's inputs from another backend get a copy in the split's own buffer. With one
copy those are ordinary graph nodes, allocated at the start of the split and freed after their
last use; with ``n_copies > 1`` (pipeline parallelism) they are set input and output, so
ggml-alloc allocates all ``n_copies`` of them first and never frees them. An op on a weight runs
on the weight's backend (``ggml_backend_sched_backend_id_from_cur``), so a tensor -ot sends to
another GPU takes its input there as a split input.

Every figure here was read off llama.cpp (llama-cpp-python 0.3.36's vendored source) run over
two RPC devices that allocate as ggml-cuda does (tests/fixtures/llamacpp_multidev.json).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# ggml/src/ggml-backend.cpp: the copies the scheduler keeps of each input with pipeline parallelism
SCHED_MAX_COPIES = 4

_FFN = re.compile(r"^blk\.\d+\.ffn_(gate|up|down|gate_up)(_exps)?\.weight$")
_ROUTER = re.compile(r"^blk\.\d+\.ffn_gate_inp\.weight$")
_RANGE = re.compile(r"(?<=\.)(\d+)(?:–(\d+))?(?=\.)")


@dataclass(frozen=True)
class Inputs:
    """A split's small inputs, in bytes, beside its n_embd blocks: ``positions`` (inp_pos, I32),
    ``idxs`` (each KV cache's ``k_idxs`` and ``v_idxs``, I64: llama_kv_cache::build_input_k_idxs,
    build_input_v_idxs, one index per value row without flash attention), ``masks`` (the KQ
    masks), ``out_ids`` (I32, the output rows, an input of the output layer's device)."""

    positions: int
    idxs: int
    masks: int
    out_ids: int


def pipeline_copies(first: bool, output: bool, layer_peak: bool, embd: int, s: Inputs) -> int:
    """The bytes a GPU's compute buffer gains with pipeline parallelism: ``SCHED_MAX_COPIES``
    copies of each of its split inputs, less the one copy its peak already held.

    The first GPU's inputs come from the CPU: ``inp_embd``, the positions, the KV indices and
    the masks. A later GPU's are the hidden state and, from the first prompt graph reserved
    (``llama_context::sched_reserve``: no earlier assignment to follow), the next layer's
    unweighted norm, so two n_embd blocks, with the positions, indices and masks, and
    ``out_ids`` on the output layer's GPU. At a layer's peak the small inputs are live (the
    masks to the split's last layer); at the output's they are freed. Measured: 2 RPC devices,
    n_embd 1,024, 4,096 and 8,192 cells, 256 and 512 tokens, flash attention on and off, dense
    and MoE: each GPU to the byte."""
    small = s.positions + s.idxs + s.masks + (s.out_ids if output else 0)
    blocks = embd * (1 if first else 2)
    return SCHED_MAX_COPIES * (blocks + small) - (small if layer_peak else 0)


@dataclass(frozen=True)
class Moved:
    """The feed-forward tensors of one layer that -ot puts on a GPU other than the layer's."""

    up: bool = False
    gate: bool = False
    down: bool = False
    router: bool = False
    experts: bool = False


def received(off: Any, shape: Any, n_tokens: int) -> dict[int, int]:
    """Per GPU, the largest moment of the feed-forward work it runs for layers on another
    device (:func:`moment`); GPUs that run none are absent."""
    devs = off.layer_devices()
    moved: dict[tuple[int, int], Moved] = {}
    k_width = _routed(off, shape)
    for pl in off.placed:
        if pl.device is None or not (_FFN.match(pl.name) or _ROUTER.match(pl.name)):
            continue
        for il in _layers(pl.row.name):
            if il < len(devs) and devs[il] != pl.device:
                key = (pl.device, il)
                moved[key] = _with(moved.get(key, Moved()), pl.name)
    out: dict[int, int] = {}
    for (d, _), m in moved.items():
        out[d] = max(out.get(d, 0), moment(m, shape, n_tokens, k_width))
    return out


def moment(m: Moved, shape: Any, t: int, k_width: int) -> int:
    """The receiving GPU's peak for one layer's moved feed-forward tensors (``build_ffn``,
    ``build_moe_ffn``; the product of gate and up runs where up runs): h = n_embd · t,
    F = the layer's gate, up and product (:attr:`Shape.ffn`) · t, all F32.

    dense: up there: its normed input, gate's output copied in, up and the product (h + F), and
    with down the residual's copy (+ h); else gate: its input and output (h + F/3); down: the
    product copied in, the residual's copy and its output (F/3 + 2h).
    experts (k routed, ``k_width`` = k · n_embd): up there: h + F and the residual's copy, with
    5 k-wide routing tensors (+ h with the router); else down: the product copied in, its
    k-wide output, the residual's copy and the routing tensors. Measured on 2 RPC devices
    (n_embd 1,024, 256 and 512 tokens): each case within 0.2%."""
    h, f = shape.hidden * t * 4, shape.ffn * t * 4
    if not m.experts:
        if m.up:
            return h + f + (h if m.down else 0)
        return max(h + f // 3 if m.gate else 0, f // 3 + 2 * h if m.down else 0)
    routing = 5 * (k_width // max(shape.hidden, 1)) * t * 4
    if m.up:
        return f + 2 * h + routing + (h if m.router else 0)
    return f // 3 + k_width * t * 4 + h + routing if m.down else h + f // 3 + routing


def _with(m: Moved, name: str) -> Moved:
    from dataclasses import replace

    if _ROUTER.match(name):
        return replace(m, router=True)
    part = _FFN.match(name)
    kind, exps = part[1], bool(part[2])
    ups = {"up": {"up": True}, "gate": {"gate": True}, "down": {"down": True}, "gate_up": {"up": True, "gate": True}}
    return replace(m, experts=m.experts or exps, **ups[kind])


def _layers(name: str) -> range:
    found = _RANGE.search(name)
    if found is None:
        return range(0)
    return range(int(found[1]), int(found[2] or found[1]) + 1)


def _routed(off: Any, shape: Any) -> int:
    """k · n_embd: the width of the routed experts' down output (k = the layer's F over 3 ·
    the experts' inner width, read off the stacked gate or up tensor)."""
    for pl in off.placed:
        if re.search(r"ffn_(gate|up|gate_up)_exps", pl.name) and len(getattr(pl.row, "shape", ())) == 3:
            inner = pl.row.shape[-2] // (2 if "gate_up" in pl.name else 1)
            return shape.ffn // (3 * inner) * shape.hidden if inner else 0
    return 0
