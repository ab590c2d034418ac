"""Mixture-of-experts pieces shared by the MoE families: routed experts (fused as transformers 5
holds them, with the checkpoint's per-expert names), top-k routers with or without a bias or a
score-correction bias, shared experts with or without a sigmoid gate, and the schedule of which
layers route (dense first layers, ``mlp_only_layers``, a sparse step, a start/end window).

``Block.active = (k, E)`` on the routed experts makes :attr:`Model.active_total` the parameters
one token passes through: k of E experts, everything else (router, shared experts, dense
layers, attention, embeddings) in full.

Whether ``e_score_correction_bias`` counts depends on the family: DeepSeek-V3, GLM-4.5,
MiniMax-M2 and MiMo-V2 keep it as a buffer (not counted, said in a note); ERNIE 4.5 makes it a
parameter (``gate.moe_statics.e_score_correction_bias``, counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

from ..ir import Block, Node, Sym, Tensor
from .blocks import block, fused_experts, gated_mlp, linear
from .config import Cfg

Run = tuple[int, int, bool]  # (first layer, how many, routes experts)
GATE_UP_DOWN = ("gate_proj", "up_proj", "down_proj")


def experts(
    n: int,
    hidden: int,
    inter: int,
    k: int,
    *,
    bias: bool = False,
    transposed: bool = False,
    checkpoint_names: Sequence[str] | None = GATE_UP_DOWN,
) -> Block:
    """Routed experts, k of ``n`` active per token: 3-D ``gate_up_proj`` and ``down_proj``
    (gpt-oss stores them ``transposed``, (E, in, out), and adds per-expert biases
    ``gate_up_proj_bias`` and ``down_proj_bias``). ``checkpoint_names`` are the per-expert
    modules checkpoints store (None: the checkpoint keeps the fused tensors, as gpt-oss's)."""
    if not bias and not transposed and checkpoint_names is not None:
        return fused_experts(n, hidden, inter, k, checkpoint_names)
    up, down = (hidden, 2 * inter), (inter, hidden)
    tensors = [
        Tensor("gate_up_proj", (n, *(up if transposed else up[::-1]))),
        Tensor("gate_up_proj_bias", (n, 2 * inter)) if bias else None,
        Tensor("down_proj", (n, *(down if transposed else down[::-1]))),
        Tensor("down_proj_bias", (n, hidden)) if bias else None,
    ]
    return Block("experts", tuple(t for t in tensors if t is not None), kind="experts", active=(int(k), int(n)))


def router(name: str, hidden: int, n: int, *, bias: bool = False, extra: Sequence[Node] = ()) -> Block:
    """A top-k router's (E, h) weight, with a bias where the family has one (gpt-oss) and any
    parameters it holds besides (ERNIE's ``moe_statics``)."""
    return block(name, *linear(name, hidden, n, bias).children, *extra, kind="router")


def block_sparse_moe(hidden: int, n: int, inter: int, k: int, router_name: str = "gate") -> Block:
    """Mixtral-style routing under ``mlp`` (the router as ``router_name``, fused experts), whose
    checkpoints keep the older names: ``block_sparse_moe.gate`` and per-expert ``w1`` (gate),
    ``w3`` (up), ``w2`` (down). Mixtral, PhiMoE and MiniMax-M2 store them so."""
    saved = (router("gate", hidden, n), experts(n, hidden, inter, k, checkpoint_names=("w1", "w3", "w2")))
    live = (router(router_name, hidden, n), experts(n, hidden, inter, k))
    return Block("mlp", live, checkpoint=Block("block_sparse_moe", saved))


def shared_mlp(
    hidden: int, inter: int, name: str = "shared_experts", gate: str | None = None, bias: bool = False
) -> tuple[Block, ...]:
    """Always-on shared experts as one SwiGLU MLP of the summed width, and where the family
    scales them by a sigmoid gate (Qwen2-MoE's ``shared_expert_gate``), its (1, h) weight."""
    mlp = gated_mlp(name, hidden, inter, bias, kind="experts")
    return (mlp,) if gate is None else (mlp, linear(gate, hidden, 1, bias=False, kind="router"))


def with_shared(
    hidden: int, n: int, inter: int, k: int, shared: int | None, gate: Block | None = None, bias: bool = False
) -> Block:
    """DeepSeek-style MoE under ``mlp``: fused ``experts`` (k of ``n``), the router ``gate``
    (weight only unless ``gate`` is given) and ``shared_experts``, one always-on SwiGLU MLP of
    width ``shared`` (I_e times the shared expert count: DeepSeek and GLM build it even at 0,
    as empty tensors; None leaves it out, as ERNIE does without shared experts). DeepSeek-V3,
    GLM-4.5 and ERNIE 4.5 share it."""
    gate = gate or router("gate", hidden, n)
    extra = shared_mlp(hidden, shared, bias=bias) if shared is not None else ()
    return block("mlp", experts(n, hidden, inter, k), gate, *extra)


def top_k(c: Cfg, n: Sym, field: str = "num_experts_per_tok") -> Sym:
    """The experts each token routes to, refused above the routed expert count."""
    k = c.int(field)
    if n and k > n:
        raise c.error(c.lookup(field)[0], f"{int(k)} is more than the {int(n)} routed experts")
    return k


def runs(
    layers: int,
    *,
    first: int = 0,
    last: int | None = None,
    step: int = 1,
    dense: frozenset[int] | set[int] = frozenset(),
) -> list[Run]:
    """(first index, length, routes experts) of each run of alike layers, where layer ``i``
    routes when ``first <= i <= last``, ``(i + 1) % step == 0`` and ``i`` is not in ``dense``
    (``first_k_dense_replace``; ERNIE's start/end/interval; Qwen's ``decoder_sparse_step`` and
    ``mlp_only_layers``). Only the indices where that can change are visited, so the work grows
    with the runs, not the layers. A single run spans all ``layers`` (its symbol kept)."""
    n = int(layers)
    last = n - 1 if last is None else last
    cuts = {0, n} | {x for x in (first, last + 1) if 0 <= x <= n}
    cuts |= {x for d in dense for x in (d, d + 1) if 0 <= x <= n}
    if step > 1:
        cuts |= {x for i in range(step - 1, n, step) for x in (i, i + 1)}
    out: list[Run] = []
    for start, end in pairwise(sorted(cuts)):
        sparse = first <= start <= last and (start + 1) % step == 0 and start not in dense
        if out and out[-1][2] == sparse:
            out[-1] = (out[-1][0], end - out[-1][0], sparse)
        else:
            out.append((start, end - start, sparse))
    return [(0, layers, out[0][2])] if len(out) == 1 else out  # keeps the symbol L


def layer_stacks(
    runs: Sequence[Run], layers: Sym, build: Callable[[bool], Sequence[Node | None]], name: str = "layers"
) -> tuple[Block, ...]:
    """One ``layers`` stack per run, each kind of layer built once; a single run keeps the
    symbol of the layer count for derivations."""
    made: dict[bool, tuple[Node, ...]] = {}
    out = []
    for first, n, sparse in runs:
        if sparse not in made:  # one tuple per kind, shared by its stacks: counting sums it once
            made[sparse] = tuple([m for m in build(sparse) if m is not None])
        out.append(Block(name, made[sparse], repeat=layers if len(runs) == 1 else n, start=first, label="layer"))
    return tuple(out)


def mtp_note(
    c: Cfg, layer_params: Callable[[], int], copies: str, whose: str = "", field: str = "num_nextn_predict_layers"
) -> list[str]:
    """The checkpoint's multi-token-prediction layers (``model.layers.L…``) that transformers
    does not build (DeepSeek-V3, GLM-4.5, GLM-5): each a MoE decoder layer (``layer_params()``,
    built only when there are any) plus ``eh_proj`` (2h → h), ``enorm``, ``hnorm`` and
    ``shared_head.norm``, and, where the checkpoint holds them, its own copies of the embedding
    and output head (``embed_tokens``, ``shared_head.head``: vocab × h each). ``copies``:
    ``"own"`` (the checkpoint holds them), ``"shared"`` (it holds none) or ``"some"`` (``whose``
    names the checkpoints that do); ``whose`` says where the layout was read."""
    mtp = int(c.int(field, low=0))
    if not mtp:
        return []
    n, h, vocab = int(c.int("num_hidden_layers")), int(c.int("hidden_size")), int(c.int("vocab_size"))
    each = layer_params() + 2 * h * h + 3 * h
    pair = 2 * vocab * h
    where = f"model.layers.{n}" if mtp == 1 else f"model.layers.{n}-{n + mtp - 1}"
    layer = "a MoE decoder layer with eh_proj, enorm, hnorm and shared_head.norm"
    own = "its own copies of the embedding and output head"
    own += f" (embed_tokens, shared_head.head: 2 × {vocab:,} × {h:,} = {pair:,})"
    if copies == "own":
        said = f"{mtp * (each + pair):,} parameters: {layer} ({each:,}) and {own}{whose}"
    elif copies == "shared":
        said = f"{mtp * each:,} parameters: {layer}; it holds no copy of the embedding or output head{whose}"
    else:
        said = f"{mtp * each:,} parameters: {layer}; {whose} also hold {own}, {mtp * (each + pair):,} in all"
    return [f"the published checkpoint also holds {mtp} multi-token-prediction layer(s) ({where}, {said}) that the"
            " transformers model does not build; they are not counted"]  # fmt: skip


def correction_note(runs: Sequence[Run], where: str = "MoE router") -> list[str]:
    """The note for a family whose ``e_score_correction_bias`` is a buffer (not counted)."""
    if not any(sparse for _, _, sparse in runs):
        return []
    return [f"each {where} also stores e_score_correction_bias, a buffer, not a parameter: not counted"]


__all__ = [
    "block_sparse_moe",
    "correction_note",
    "experts",
    "layer_stacks",
    "mtp_note",
    "router",
    "runs",
    "shared_mlp",
    "top_k",
    "with_shared",
]
