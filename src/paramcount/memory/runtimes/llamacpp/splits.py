"""The compute buffers of several backends, by replay: the graph of :mod:`.replay` cut into
splits as ``ggml_backend_sched_split_graph`` (ggml/src/ggml-backend.cpp) cuts it, and the copy
of the graph it hands ggml-alloc (the split inputs' copies placed before each split) allocated
by the port of ``ggml_gallocr_alloc_graph_impl`` with one dynamic allocator per backend buffer.

Backends are numbered as llama.cpp's scheduler numbers them (``llama_context::llama_context``):
the GPUs in order, then the CPU, last (lowest priority). Each device can read only its own
buffers (``ggml_backend_sched_buffer_supported``: a GPU's buffer type is its own; the CPU takes
host buffers), so every source on another backend is copied in.

The passes, each as ``ggml_backend_sched_split_graph`` runs them:

1. pre-allocated tensors (weights, the KV cache and views of it) on their buffer's backend, graph
   inputs (``GGML_TENSOR_FLAG_INPUT``) on the CPU, an op on a weight on the weight's backend
   (``ggml_backend_sched_backend_id_from_cur``; not ROPE, not FLASH_ATTN_EXT), or on the first
   GPU where the weight is in host memory and the GPU's ``offload_op`` takes the op
   (ggml-cuda's ``get_op_batch_size`` ≥ 32); the ``norm`` that ``llama_context::graph_get_cb``
   pins to its layer's device is not pinned when the buffers are sized (:func:`backends`);
2. the GPUs' assignments expanded down then up (the CPU's not), then every backend's, down then up;
3. nodes still without one to the backend with the most inputs it can read;
4. views and sources from their view source or their consumer;
5. a new split wherever the backend changes, or where a node reads a weight on another
   backend and the split already has inputs; each source on another backend gets one copy per
   backend, made for the first split that needs it and reused by later ones.

With pipeline parallelism (``n_copies`` = ``GGML_SCHED_MAX_COPIES``) the copies and the graph
inputs are flagged input and output, so ggml-alloc allocates all their copies first and frees
none (pass 6 adds every graph input, used or not).

Held to llama.cpp (llama-cpp-python 0.3.36's vendored source) over two RPC devices that allocate
as ggml-cuda does (tests/fixtures/llamacpp_multidev.json); the RPC backend adds no allocation
dependencies (its ``graph_optimize`` is NULL), ggml-cuda's fusions add some
(``ggml_backend_cuda_graph_optimize``), so a CUDA device's figure stays an estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .gallocr import INPLACE, INPUT, OUTPUT, DynAllocator, Graph, Tensor, release_parents

_RANGE = re.compile(r"(?<=\.)(\d+)(?:–(\d+))?(?=\.)")  # a row's layers: blk.0–15. (or layers.0–15.)
VIEW_OPS = frozenset(("VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"))  # ggml-backend.cpp ggml_is_view_op
OFFLOAD_BATCH = 32  # ggml-cuda.cu ggml_backend_cuda_device_offload_op: get_op_batch_size >= 32


@dataclass
class Backends:
    """Where the graph's pre-allocated tensors are: ``weights`` and ``caches`` (id of the leaf
    → backend), ``weight_bytes`` and ``copy_bytes`` (id of a weight → the bytes of its copy on a GPU, ggml-cuda's
    ``get_alloc_size``: the last row padded), the alignments (one per backend, the CPU last)."""

    n_gpus: int
    weights: dict[int, int]
    caches: dict[int, int]
    weight_bytes: dict[int, int] = field(default_factory=dict)
    copy_bytes: dict[int, int] = field(default_factory=dict)
    alignments: tuple[int, ...] = ()
    op_offload: bool = True
    n_copies: int = 1

    @property
    def cpu(self) -> int:
        return self.n_gpus


def _batch(t: Tensor) -> int:
    """ggml-cuda's ``get_op_batch_size``."""
    if t.op == "GET_ROWS":
        return 0
    if t.op == "MUL_MAT":
        return t.ne[1] if len(t.ne) > 1 else 1
    if t.op in ("MUL_MAT_ID", "ROPE"):
        return t.ne[2] if len(t.ne) > 2 else 1
    rows = 1
    for n in t.ne[1:]:
        rows *= n
    return rows


def _from_cur(t: Tensor, b: Backends) -> int:
    """``ggml_backend_sched_backend_id_from_cur``."""
    for own in (t, t.view_src):
        if own is not None and id(own) in b.weights:
            return b.weights[id(own)]
        if own is not None and id(own) in b.caches:
            return b.caches[id(own)]
    if t.flags & INPUT:
        return b.cpu
    if t.op in ("ROPE", "FLASH_ATTN_EXT"):
        return -1
    for src in t.src:
        if id(src) in b.weights:
            dev = b.weights[id(src)]
            if b.op_offload and dev == b.cpu and b.n_gpus and _batch(t) >= OFFLOAD_BATCH:
                return 0
            return dev
    return -1


def assign(g: Graph, b: Backends) -> dict[int, int]:
    """Passes 1 to 4: each tensor's backend (id → backend)."""
    at: dict[int, int] = {}  # no user assignments: see backends()
    for t in (*g.leafs, *g.nodes):
        if at.get(id(t), -1) == -1:
            at[id(t)] = _from_cur(t, b)
    ops = [n for n in g.nodes if n.op not in VIEW_OPS]
    for order, skip_cpu in ((ops, True), (ops[::-1], True), (ops, False), (ops[::-1], False)):
        cur = -1
        for n in order:
            mine = at.get(id(n), -1)
            if mine != -1:
                cur = -1 if skip_cpu and mine == b.cpu else mine
            elif cur != -1:
                at[id(n)] = cur
    for n in ops:  # pass 3: only unassigned nodes change (distinct buffer types: no upgrade)
        if at.get(id(n), -1) == -1:
            best, best_n = -1, -1
            for dev in range(b.n_gpus + 1):
                k = sum(1 for s in n.src if _src_backend(s, at) == dev)
                if k > best_n:
                    best, best_n = dev, k
            at[id(n)] = best
    for n in g.nodes:  # pass 4
        if n.view_src is not None and at.get(id(n), -1) == -1:
            at[id(n)] = at.get(id(n.view_src), -1)
        for s in n.src:
            if at.get(id(s), -1) == -1:
                at[id(s)] = at.get(id(s.view_src), -1) if s.view_src is not None else at[id(n)]
        if at[id(n)] == -1:
            at[id(n)] = 0
    return at


def _src_backend(s: Tensor, at: dict[int, int]) -> int:
    mine = at.get(id(s), -1)
    return mine if mine != -1 or s.view_src is None else at.get(id(s.view_src), -1)


@dataclass
class Split:
    backend: int
    nodes: list[Tensor]
    inputs: list[Tensor]


def split(g: Graph, b: Backends, at: dict[int, int]) -> tuple[list[Split], dict[tuple[int, int], list[Tensor]]]:
    """Pass 5: the splits, each node's sources on another backend replaced by their copy
    (one per tensor and backend, ``n_copies`` of them), and the copies made."""
    copies: dict[tuple[int, int], list[Tensor]] = {}
    splits: list[Split] = []
    first = next((at[id(n)] for n in g.nodes if n.op not in VIEW_OPS), b.cpu)
    cur = Split(first, [], [])
    splits.append(cur)
    for n in g.nodes:
        if n.op in VIEW_OPS:
            cur.nodes.append(n)
            continue
        dev = at[id(n)]
        new = dev != cur.backend or (cur.inputs and any(id(s) in b.weights and at[id(s)] != cur.backend for s in n.src))
        if new:
            cur = Split(dev, [], [])
            splits.append(cur)
        srcs = list(n.src)
        for j, s in enumerate(srcs):
            if at[id(s)] == cur.backend:
                continue
            key = (id(s), cur.backend)
            if key not in copies:
                copies[key] = [_copy(s, cur.backend, b, c) for c in range(b.n_copies)]
                for c in copies[key]:
                    at[id(c)] = cur.backend
                cur.inputs.append(s)
            srcs[j] = copies[key][0]
        n.src = tuple(srcs)
        cur.nodes.append(n)
    return splits, copies


def _copy(s: Tensor, dev: int, b: Backends, c: int) -> Tensor:
    """``ggml_dup_tensor_layout`` of a split input on ``dev``: a weight's copy on a GPU as
    ggml-cuda sizes it (``get_alloc_size``)."""
    flags = INPUT | OUTPUT if b.n_copies > 1 else 0
    if id(s) in b.weights:
        size = b.copy_bytes.get(id(s), b.weight_bytes[id(s)]) if dev != b.cpu else b.weight_bytes[id(s)]
        return Tensor(f"{s.name}#{dev}#{c}", "NONE", (size,), 1, flags=flags)
    span = _layout_bytes(s)
    return Tensor(f"{s.name}#{dev}#{c}", "NONE", s.ne, s.size, flags=flags, span=span if span != s.nbytes else 0)


def _layout_bytes(s: Tensor) -> int:
    """``ggml_nbytes`` of ``ggml_dup_tensor_layout(s)``: the copy keeps the source's strides, so a
    view of some of each row's values (``ggml_argsort_top_k``'s top-k of the sorted experts, a
    ``ggml_view_4d`` with its parent's strides) spans its parent's rows: ne0 · size plus
    (ne_i − 1) · nb_i. Views whose dimensions do not line up with their parent's are taken as
    contiguous."""
    parent = s.src[0] if s.op == "VIEW" and s.src else None
    if parent is None or len(parent.ne) != len(s.ne) or s.ne[0] >= parent.ne[0]:
        return s.nbytes
    size, stride = s.ne[0] * s.size, s.size
    for i, n in enumerate(s.ne):
        if i:
            size += (n - 1) * stride
        stride *= parent.ne[i]
    return size


Placed = list[tuple[Tensor, int]]  # tensors with their backend (ggml-alloc's buffer id)


def graph_copy(g: Graph, b: Backends, at: dict[int, int], splits: list[Split],
               copies: dict[tuple[int, int], list[Tensor]]) -> tuple[Placed, Placed]:  # fmt: skip
    """The graph ggml-alloc sees (``sched->graph``): per split, each input's dependency (a view
    of the source, on the source's backend) and its copy, then the split's nodes; the leafs:
    with several copies the graph inputs' and the split inputs' copies first, then the graph's."""
    nodes: Placed = []
    for sp in splits:
        for s in sp.inputs:
            dep = Tensor(s.name + " (view)", "NONE", s.ne, s.size, (s,), view_src=s.view_src or s)
            nodes.append((dep, at[id(s)]))
            nodes.append((copies[(id(s), sp.backend)][0], sp.backend))
        nodes += [(n, at[id(n)]) for n in sp.nodes]
    leafs: Placed = []
    if b.n_copies > 1:  # pass 6: every graph input, used or not, n_copies times
        for leaf in g.leafs:
            if leaf.flags & INPUT:
                leaf.flags |= OUTPUT
                dev = at[id(leaf)]
                more = [Tensor(f"{leaf.name}#{c}", "NONE", leaf.ne, leaf.size, flags=INPUT | OUTPUT)
                        for c in range(1, b.n_copies)]  # fmt: skip
                leafs += [(t, dev) for t in (leaf, *more)]
        for sp in splits:
            leafs += [(c, sp.backend) for s in sp.inputs for c in copies[(id(s), sp.backend)]]
    leafs += [(leaf, at[id(leaf)]) for leaf in g.leafs]
    return nodes, leafs


@dataclass
class _Node:
    n_children: int = 0
    n_views: int = 0
    allocated: bool = False
    offset: int = 0
    buffer: int = 0


class Multi:
    """``ggml_gallocr`` with one buffer per backend (``ggml_gallocr_new_n``)."""

    def __init__(self, alignments: tuple[int, ...], external: set[int]) -> None:
        self.allocs = [DynAllocator(a) for a in alignments]
        self.external = external
        self.hash: dict[int, _Node] = {}
        self.peaks = [""] * len(alignments)  # per buffer: the tensor whose allocation set its size

    def h(self, t: Tensor) -> _Node:
        return self.hash.setdefault(id(t), _Node())

    def allocated(self, t: Tensor) -> bool:
        own = t.view_src if t.view_src is not None else t
        return id(t) in self.external or id(own) in self.external or self.h(t).allocated

    def allocate(self, node: Tensor, buf: int) -> None:
        """``ggml_gallocr_allocate_node``."""
        hn = self.h(node)
        if self.allocated(node) or node.view_src is not None:
            return
        hn.allocated = True
        if node.op in INPLACE:
            for parent in node.src:
                p = self.h(parent)
                if not p.allocated or parent.flags & OUTPUT:
                    continue
                if parent.view_src is not None and parent.view_src.flags & OUTPUT:
                    continue
                if parent.size != node.size or parent.ne != node.ne or parent.span != node.span:
                    continue  # ggml_are_same_layout
                if p.n_children == 1 and p.n_views == 0:
                    hn.offset, hn.buffer = p.offset, p.buffer
                    p.allocated = False
                    a = self.allocs[p.buffer]
                    extra = a.aligned(parent.nbytes) - a.aligned(node.nbytes)
                    if extra > 0:
                        a.free(p.offset + a.aligned(node.nbytes), extra)
                    return
        hn.buffer = buf
        top = self.allocs[buf].max_size
        hn.offset = self.allocs[buf].alloc(node.nbytes)
        if self.allocs[buf].max_size > top:
            self.peaks[buf] = node.name

    def free(self, t: Tensor) -> None:
        if t.flags & OUTPUT:
            return
        hn = self.h(t)
        self.allocs[hn.buffer].free(hn.offset, t.nbytes)
        hn.allocated = False

    def state(self, names: dict[int, str]) -> tuple:
        """The allocators' state (free blocks, tops, where each live tensor lies, by role)."""
        live = sorted((names[k], h.buffer, h.offset) for k, h in self.hash.items() if h.allocated and k in names)
        return tuple((tuple(map(tuple, a.blocks)), a.max_size) for a in self.allocs), tuple(live)

    def run(self, nodes: Placed, leafs: Placed, on_layer: Any = None) -> list[int]:
        """``ggml_gallocr_alloc_graph_impl``; each buffer's size. ``on_layer(layer)`` before the
        first node of each layer."""
        for leaf, buf in leafs:
            self.allocate(leaf, buf)
        for n, buf in nodes:
            if n.view_src is not None and n.op != "NONE":
                self.h(n.view_src).n_views += 1
            if n.flags & INPUT:
                self.allocate(n, buf)
            for s in n.src:
                self.h(s).n_children += 1
                if s.flags & INPUT:
                    self.allocate(s, buf)
        layer = None
        for n, buf in nodes:
            if on_layer is not None and n.layer >= 0 and n.layer != layer:
                layer = n.layer
                on_layer(layer)
            for s in n.src:
                self.allocate(s, buf)
            self.allocate(n, buf)
            release_parents(n, self.h, self.free)
        return [a.max_size for a in self.allocs]


def buffers(g: Graph, b: Backends, seen: dict[int, tuple] | None = None, peaks: list[str] | None = None) -> list[int]:
    """Each backend's compute buffer for ``g`` (the GPUs in order, the CPU last):
    ``ggml_backend_sched_reserve_size`` (split, then ``ggml_gallocr_reserve_n_size``); ``seen``
    collects the allocators' state at each layer's start, ``peaks`` the tensor each buffer tops
    out allocating."""
    at = assign(g, b)
    splits, copies = split(g, b, at)
    nodes, leafs = graph_copy(g, b, at, splits, copies)
    external = set(b.weights) | set(b.caches)
    m = Multi(b.alignments, external)
    names = {id(t): t.name for t, _ in (*nodes, *leafs)}
    hook = None if seen is None else (lambda layer: seen.setdefault(layer, m.state(names)))
    sizes = m.run(nodes, leafs, hook)
    if peaks is not None:  # the tensor each buffer tops out allocating
        peaks[:] = m.peaks
    return sizes


# ---- the plan's placement as the scheduler sees it ----------------------------------------------

_ROLES = {
    "attn_norm.w": "attn_norm", "wQcur": "attn_q", "wKcur": "attn_k", "wVcur": "attn_v", "bQcur": "attn_q.bias",
    "bKcur": "attn_k.bias", "bVcur": "attn_v.bias", "Qcur_normed.w": "attn_q_norm", "Kcur_normed.w": "attn_k_norm",
    "wo": "attn_output", "ffn_norm.w": "ffn_norm", "up": "ffn_up", "gate": "ffn_gate", "down": "ffn_down",
    "gate_inp": "ffn_gate_inp", "up_exps": "ffn_up_exps", "gate_exps": "ffn_gate_exps", "down_exps": "ffn_down_exps",
    "token_embd": "token_embd", "output": "output", "result_norm.w": "output_norm",
}  # fmt: skip


@dataclass(frozen=True)
class Tensors:
    """Each GGUF tensor's backend (a GPU's index, or ``cpu``), its bytes and its copy's bytes on a
    GPU (ggml-cuda's ``get_alloc_size``), by name; the device of each layer (None: host memory)."""

    where: dict[str, tuple[int | None, int, int]]
    layers: tuple[int | None, ...]
    kv_offload: bool


def _gguf(role: str, layer: int, n_layer: int) -> str:
    base = _ROLES[role]
    suffix = "" if base.endswith(".bias") else ".weight"
    return f"blk.{layer}.{base}{suffix}" if 0 <= layer < n_layer else f"{base}{suffix}"


def backends(g: Graph, t: Tensors, n_gpus: int, n_copies: int, real: tuple[int, ...],
             alignment: int = 128) -> Backends:  # fmt: skip
    """The scheduler's view of ``g``'s leafs: each weight on its tensor's backend, each layer's
    K and V on its layer's device (``llama_kv_cache``: the CPU with --no-kv-offload). Each
    layer's ``norm``, which ``llama_context::graph_get_cb`` puts on its layer's device (with
    n_gpu_layers past n_layer_all, or under 32 tokens), is left to the passes:
    ``ggml_backend_sched_reserve_size``, which sizes the buffers (``llama_context::sched_reserve``,
    as ``--fit`` and llama-fit-params measure them), resets the scheduler after the graph is
    built, and those assignments with it. ``real``: the file's layer for each of the graph's
    (the replay may leave out repeating ones)."""
    cpu, n_layer = n_gpus, len(t.layers)
    first_use: dict[int, int] = {}
    for n in g.nodes:
        for s in n.src:
            first_use.setdefault(id(s), n.layer)
    b = Backends(n_gpus, {}, {}, alignments=(alignment,) * n_gpus + (32,), n_copies=n_copies)
    for leaf in g.leafs:
        if not leaf.external or leaf.view_src is not None:
            continue
        il = first_use.get(id(leaf), -1)
        il = real[il] if 0 <= il < len(real) else (-1 if il < 0 else n_layer)
        if leaf.name.startswith("cache_"):
            dev = t.layers[il] if t.kv_offload and 0 <= il < n_layer else None
            b.caches[id(leaf)] = cpu if dev is None else dev
            continue
        dev, size, padded = t.where[_gguf(leaf.name, il, n_layer)]
        b.weights[id(leaf)] = cpu if dev is None else dev
        b.weight_bytes[id(leaf)], b.copy_bytes[id(leaf)] = size, padded
    return b


def _signatures(t: Tensors) -> list[tuple]:
    """Per layer: its device and where each of its tensors is; layers alike replay alike."""
    sig: list[dict[str, int | None]] = [{} for _ in t.layers]
    for name, (dev, _, _) in t.where.items():
        parts = name.split(".", 2)
        if parts[0] == "blk" and parts[1].isdigit() and int(parts[1]) < len(sig):
            sig[int(parts[1])][parts[2]] = dev
    return [(t.layers[il], tuple(sorted(sig[il].items(), key=str))) for il in range(len(t.layers))]


def replayed(d: Any, t: Tensors, n_gpus: int, n_copies: int, peaks: list[str] | None = None) -> list[int]:
    """Each backend's compute buffer for the prompt graph of ``d`` (:class:`.replay.Dense`)
    placed as ``t`` says. Bounded as :func:`.replay.replay` is: each run of alike layers
    (:func:`_signatures`) is replayed over its first ``cap`` layers or one more, as many as the
    run has modulo 2 (the model's last layer kept last), and ``cap`` doubles until the allocators'
    state at the start of a run's last replayed middle layer is the one two layers before: from
    there the run's layers replay alike with a period of one or two (ggml-alloc's best fit puts a
    layer's output in one of two holes by turns), so the layers left out, an even number, change
    nothing."""
    from dataclasses import replace as _replace

    from .replay import _Builder

    sig, n = _signatures(t), len(t.layers)
    runs: list[list[int]] = []
    for il in range(n):
        if runs and sig[runs[-1][0]] == sig[il]:
            runs[-1].append(il)
        else:
            runs.append([il])
    cap = 5
    while True:
        real: list[int] = []
        checks: list[tuple[int, int]] = []
        for i, run in enumerate(runs):
            last = i == len(runs) - 1
            k = cap + (len(run) - cap) % 2  # as many as the run's own count, modulo 2
            kept = run if len(run) <= k else (run[: k - 1] + run[-1:] if last else run[:k])
            if len(kept) < len(run):
                at = len(real) + k - (2 if last else 1)  # the last replayed middle layer
                checks.append((at - 2, at))
            real += kept
        g = _Builder(_replace(d, layers=len(real))).build(len(real))
        seen: dict[int, tuple] = {}
        sizes = buffers(g, backends(g, t, n_gpus, n_copies, tuple(real)), seen if checks else None, peaks)
        if all(seen.get(a) == seen.get(b) for a, b in checks):
            return sizes
        cap *= 2


def tensors(off: Any, kv_offload: bool) -> Tensors:
    """:class:`Tensors` from a placed model (:class:`.offload.Offload`): each row's tensors by
    their GGUF names, one tensor's bytes each, its copy on a GPU padded as ggml-cuda pads it."""
    from ....dtypes import DTYPES
    from .plan import MATRIX_ROW_PADDING

    where: dict[str, tuple[int | None, int, int]] = {}
    for pl in off.placed:
        r = pl.row
        one = r.bytes // max(r.count, 1)
        block = DTYPES.get(r.format)
        short = -r.shape[-1] % MATRIX_ROW_PADDING if getattr(r, "shape", None) else 0
        padded = one + (short // block.elements * block.bytes if block is not None and block.elements > 1 else 0)
        name = pl.name if re.search(r"\.(weight|bias)$", pl.name) or " " in pl.name else pl.name + ".weight"
        names = [name]
        if "_gate_up_exps" in name and not off.gguf:  # a config's fused experts: the file has gate and up apart
            names = [name.replace("gate_up", "gate"), name.replace("gate_up", "up")]
            one, padded = one // 2, padded // 2
        found = _RANGE.search(r.name) if name.startswith("blk.") else None  # a GGUF row's or a config's
        span = (int(found[1]), int(found[2] or found[1])) if found else None
        for name in names:
            if span is None:
                where.setdefault(
                    "output.weight" if name.startswith("token_embd.weight as") else name, (pl.device, one, padded)
                )
                continue
            template, first = re.sub(r"^blk\.\d+\.", "blk.{}.", name), int(name.split(".")[1])
            for il in range(first, first + span[1] - span[0] + 1):
                where[template.format(il)] = (pl.device, one, padded)
    return Tensors(where, tuple(off.layer_devices()), kv_offload)
