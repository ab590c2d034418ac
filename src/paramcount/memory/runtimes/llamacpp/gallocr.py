"""A port of ggml-alloc's graph allocator (llama.cpp 0.5.0, ``ggml/src/ggml-alloc.c``), enough to
replay the compute buffer ``ggml_gallocr_reserve_n`` sizes for one backend buffer.

The graph is a list of :class:`Tensor` nodes and leafs in the order ``ggml_build_forward_expand``
visits them (:class:`Graph`, ``ggml_visit_parents_graph``: sources left to right, a tensor after
its sources, ``GGML_OP_NONE`` tensors as leafs). :func:`reserve` walks it as
``ggml_gallocr_alloc_graph_impl`` does: leafs first (the graph inputs), then children and views
counted, then every node's sources and the node allocated, a source freed when its last child
has run (a view's last use frees the tensor it views), in place where
``ggml_gallocr_allocate_node`` reuses a parent. Offsets come from :class:`DynAllocator`
(``ggml_dyn_tallocr``: best fit among the free blocks but the last, the last block grows the
buffer, freed bytes merged with their neighbours). Only one chunk: a CPU or CUDA buffer's
``max_size`` is far above any compute buffer planned here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from math import prod
from typing import Any

# ggml_op_can_inplace (ggml-alloc.c): the ops whose result may take a parent's memory
INPLACE = frozenset(
    ("FILL", "SCALE", "DIAG_MASK_ZERO", "DIAG_MASK_INF", "ADD", "ADD_ID", "ADD1", "SUB", "MUL", "DIV", "SQR", "SQRT",
     "LOG", "UNARY", "ROPE", "ROPE_BACK", "SILU_BACK", "RMS_NORM", "RMS_NORM_BACK", "CLAMP", "SOFT_MAX",
     "SOFT_MAX_BACK")
)  # fmt: skip
INPUT, OUTPUT = 1, 2  # GGML_TENSOR_FLAG_INPUT, GGML_TENSOR_FLAG_OUTPUT


@dataclass(eq=False)
class Tensor:
    """One ggml tensor as the allocator sees it: ``op`` ("NONE" for a leaf), ``src`` (in order),
    ``ne`` and the element size (contiguous: every tensor the allocator places is), ``view_src``
    (the tensor a view's memory belongs to, as ``ggml_new_tensor_impl`` resolves views of views),
    ``external`` (data in another buffer: weights, the KV cache) and the input/output flags."""

    name: str
    op: str
    ne: tuple[int, ...]
    size: int = 4  # bytes per element (ggml_type_size for the unquantised types met here)
    src: tuple[Tensor, ...] = ()
    view_src: Tensor | None = None
    external: bool = False
    flags: int = 0
    layer: int = -1  # the layer that made it (-1: none), for the steady-state check
    span: int = 0  # ggml_nbytes where the strides are not contiguous (a strided view's copy); 0: ne · size

    @property
    def nbytes(self) -> int:
        return self.span or prod(self.ne) * self.size


class Graph:
    """``ggml_cgraph`` as ``ggml_build_forward_expand`` fills it (ggml.c ``ggml_visit_parents_graph``)."""

    def __init__(self) -> None:
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._seen: set[int] = set()

    def expand(self, t: Tensor) -> Tensor:
        stack: list[tuple[Tensor, int]] = [(t, 0)]
        while stack:  # the recursion of ggml_visit_parents_graph, unrolled
            node, i = stack.pop()
            if i == 0:
                if id(node) in self._seen:
                    continue
                self._seen.add(id(node))
            if i < len(node.src):
                stack.append((node, i + 1))
                stack.append((node.src[i], 0))
                continue
            (self.leafs if node.op == "NONE" else self.nodes).append(node)
        return t

    def select(self, tensors: Iterable[Tensor]) -> None:
        """``ggml_build_forward_select``: every alternative is expanded (the unused ones stay leafs)."""
        for t in tensors:
            self.expand(t)


@dataclass
class DynAllocator:
    """``ggml_dyn_tallocr`` with one chunk: free blocks sorted by offset, the last one endless."""

    alignment: int
    blocks: list[list[int]] = field(default_factory=lambda: [[0, 1 << 62]])
    max_size: int = 0

    def aligned(self, size: int) -> int:
        return -(-size // self.alignment) * self.alignment

    def alloc(self, size: int) -> int:
        """``ggml_dyn_tallocr_alloc``: the smallest free block that fits, the last one excepted
        (ties: the later block, ``<=``); else the last block, which may grow the buffer."""
        size = self.aligned(size)
        best, best_size = -1, None
        for i, (_, bsize) in enumerate(self.blocks[:-1]):
            if bsize >= size and (best_size is None or bsize <= best_size):
                best, best_size = i, bsize
        if best < 0:
            best = len(self.blocks) - 1
        block = self.blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        """``ggml_dyn_tallocr_free_bytes``: merged with the block it ends or starts, else inserted."""
        size = self.aligned(size)
        for i, block in enumerate(self.blocks):
            if block[0] + block[1] == offset:
                block[1] += size
                if i + 1 < len(self.blocks) and block[0] + block[1] == self.blocks[i + 1][0]:
                    block[1] += self.blocks[i + 1][1]
                    del self.blocks[i + 1]
                return
            if offset + size == block[0]:
                block[0] = offset
                block[1] += size
                if i > 0 and self.blocks[i - 1][0] + self.blocks[i - 1][1] == block[0]:
                    self.blocks[i - 1][1] += block[1]
                    del self.blocks[i]
                return
        at = next((i for i, b in enumerate(self.blocks) if b[0] >= offset), len(self.blocks))
        self.blocks.insert(at, [offset, size])


@dataclass
class _Hash:
    n_children: int = 0
    n_views: int = 0
    allocated: bool = False
    offset: int = 0


class _Gallocr:
    def __init__(self, alignment: int, size_of: Callable[[Tensor], int]) -> None:
        self.alloc = DynAllocator(alignment)
        self.size_of = size_of
        self.hash: dict[int, _Hash] = {}
        self.events: list[tuple[str, str, int, int]] = []

    def h(self, t: Tensor) -> _Hash:
        return self.hash.setdefault(id(t), _Hash())

    def is_allocated(self, t: Tensor) -> bool:
        return t.external or (t.view_src is not None and t.view_src.external) or self.h(t).allocated

    def allocate(self, node: Tensor) -> None:
        """``ggml_gallocr_allocate_node``."""
        hn = self.h(node)
        if self.is_allocated(node) or node.view_src is not None:
            return
        hn.allocated = True
        if node.op in INPLACE and self._inplace(node, hn):
            return
        hn.offset = self.alloc.alloc(self.size_of(node))
        self.events.append(("alloc", node.name, hn.offset, self.alloc.aligned(self.size_of(node))))

    def _inplace(self, node: Tensor, hn: _Hash) -> bool:
        for parent in node.src:
            p = self.h(parent)
            if not p.allocated:  # ggml_gallocr_is_own: a view, a weight or the cache
                continue
            if parent.flags & OUTPUT or (parent.view_src is not None and parent.view_src.flags & OUTPUT):
                continue
            if parent.size != node.size or parent.ne != node.ne:  # ggml_are_same_layout (both contiguous)
                continue
            if p.n_children == 1 and p.n_views == 0:
                # a view parent is never "own" (views are not allocated), so only this branch runs
                hn.offset = p.offset
                p.allocated = False
                self.events.append(("reuse", node.name, p.offset, 0))
                extra = self.alloc.aligned(self.size_of(parent)) - self.alloc.aligned(self.size_of(node))
                if extra > 0:  # ggml_gallocr_free_extra_space
                    self.alloc.free(p.offset + self.alloc.aligned(self.size_of(node)), extra)
                return True
        return False

    def free(self, node: Tensor) -> None:
        """``ggml_gallocr_free_node``: graph outputs are never freed."""
        if node.flags & OUTPUT:
            return
        hn = self.h(node)
        self.events.append(("free", node.name, hn.offset, self.size_of(node)))  # logged unaligned, freed aligned
        self.alloc.free(hn.offset, self.size_of(node))
        hn.allocated = False

    def count(self, graph: Graph) -> None:
        """The second loop of ``ggml_gallocr_alloc_graph_impl``: views and children counted,
        explicit inputs allocated."""
        for node in graph.nodes:
            if node.view_src is not None and node.op != "NONE":
                self.h(node.view_src).n_views += 1
            if node.flags & INPUT:
                self.allocate(node)
            for src in node.src:
                self.h(src).n_children += 1
                if src.flags & INPUT:
                    self.allocate(src)

    def step(self, node: Tensor) -> None:
        """One node of the third loop: its parents and itself allocated, its parents released."""
        for parent in node.src:
            self.allocate(parent)
        self.allocate(node)
        release_parents(node, self.h, self.free)


def release_parents(node: Tensor, h: Callable[[Tensor], Any], free: Callable[[Tensor], None]) -> None:
    """ggml_gallocr_alloc_graph_impl after a node: each parent whose last child it was is freed
    (a view's parent once its last view and child are done); ``h`` gives a tensor's counters."""
    for parent in node.src:
        p = h(parent)
        p.n_children -= 1
        if p.n_children or p.n_views:
            continue
        if parent.view_src is not None:
            v = h(parent.view_src)
            v.n_views -= 1
            if v.n_views == 0 and v.n_children == 0 and v.allocated:
                free(parent.view_src)
        elif p.allocated:
            free(parent)


def reserve(
    graph: Graph,
    alignment: int = 32,
    size_of: Callable[[Tensor], int] | None = None,
    on_layer: Callable[[int, _Gallocr], bool] | None = None,
) -> _Gallocr:
    """Replay ``ggml_gallocr_alloc_graph_impl`` over ``graph``; the result's ``alloc.max_size`` is
    the buffer ``ggml_gallocr_reserve_n`` sizes (before the backend rounds it). ``size_of`` is
    ``ggml_backend_buft_get_alloc_size`` (default: ``ggml_nbytes``); ``on_layer(layer, state)``
    is called before the first node of each layer."""
    g = _Gallocr(alignment, size_of or (lambda t: t.nbytes))
    for leaf in graph.leafs:
        g.allocate(leaf)
    g.count(graph)
    layer = None
    for node in graph.nodes:
        if on_layer is not None and node.layer != layer and node.layer >= 0:
            layer = node.layer
            on_layer(layer, g)
        g.step(node)
    return g
