"""The widths of each layer's attention and feed-forward, read from its weight shapes.

Activation estimates and FLOP counts need, per layer, what the paper formulas call h, the
query/key/value widths, the attention width and the MLP's inner width. They are read here from
the tree rather than from config fields, so GQA, MLA, fused QKV (GPT-2's ``c_attn``, Falcon's
``query_key_value``), gated MLPs and routed experts come out of one rule:

- an attention block's output projection returns to h, the width its query projection reads
  (its input width is the attention width, heads × value head dim); the other linear layers
  produce queries, keys and values;
- a feed-forward runs from a linear layer taking h to one returning h: the last one's input is
  the inner width I, and the others' outputs sum to I (plain) or 2I (gated, SwiGLU/GeGLU);
- routed experts (3-D weights, k of E active) are one feed-forward run k times per token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...ir import Block, Tensor
from ...model import Model
from .modules import CONV1D, LINEAR, Module, walk, walk_block

_FFN = ("feed_forward", "experts")


@dataclass(frozen=True)
class Attention:
    """``qkv``: the summed output widths of the projections feeding the attention (q + k + v,
    or MLA's chain); ``width``: the output projection's input (heads × value head dim)."""

    qkv: int
    width: int


@dataclass(frozen=True)
class FeedForward:
    """``ups``: the summed widths out of the projections before the nonlinearity; ``inner``:
    the width into the last projection; ``times``: how many run per token (k routed experts);
    ``experts``: E, the routed experts a router chooses them from (0 for a dense feed-forward)."""

    ups: int
    inner: int
    times: int = 1
    experts: int = 0

    @property
    def gated(self) -> bool:
        return self.ups == 2 * self.inner


@dataclass(frozen=True)
class Layer:
    """A run of identical layers (``label``), run ``runs`` times per forward pass; ``norms``:
    the norm modules with weights outside its attention blocks (q/k norms are the attention's)."""

    label: str
    runs: int
    hidden: int
    attention: tuple[Attention, ...]
    ffn: tuple[FeedForward, ...]
    norms: int = 0


def layers(model: Model) -> list[Layer]:
    """Each stack of identical layers, in model order (ALBERT's shared layers run L times)."""
    found = []
    for m in walk(model):
        if m.block.repeat is not None and m.block.label == "layer" and not _inside(m, found):
            found.append(m)
    return [_layer(m, model.model_type) for m in found]


def _inside(m: Module, outer: list[Module]) -> bool:
    return any(m.name.startswith(o.name + ".") for o in outer)


def _layer(m: Module, model_type: str) -> Layer:
    inner = list(walk_block(Block("", m.block.children), model_type))
    units = [u for u in inner if u.block.kind == "attention" and u.name]
    units = [u for u in units if not _inside(u, units)]  # the outermost attention blocks
    attention = [(u, _attention(u, inner)) for u in units]
    hidden = attention[0][1][0] if attention else _width(inner)
    ffn = list(_feed_forwards(inner, units, hidden))
    norms = sum(x.copies for x in inner if x.kind == "norms" and x.tensors() and not _inside(x, units))
    # a unit inside a nested stack (ALBERT's inner layers) appears once per copy
    atts = tuple(a for u, (_, a) in attention for _ in range(u.copies))
    return Layer(m.label, m.runs, hidden, atts, tuple(ffn), norms)


def _linears(mods: list[Module]) -> list[Module]:
    return [x for x in mods if x.type in (LINEAR, CONV1D)]


def _attention(unit: Module, inner: list[Module]) -> tuple[int, Attention]:
    """The output projection is the last linear layer whose output another one takes as input
    (it returns to h, which the query projection reads); modules are not always in that order
    (Phi-3 defines ``o_proj`` before ``qkv_proj``)."""
    lin = _linears([x for x in inner if x.name.startswith(unit.name + ".")])
    ins = {x.d_in for x in lin}
    out = next((x for x in reversed(lin) if x.d_out in ins), lin[-1])
    return out.d_out, Attention(sum(x.d_out for x in lin if x is not out), out.d_in)


def _width(inner: list[Module]) -> int:
    lin = _linears(inner)
    return lin[-1].d_out if lin else 0


def _feed_forwards(inner: list[Module], units: list[Module], h: int) -> Iterator[FeedForward]:
    """Chains of feed-forward linear layers from h back to h, and routed experts."""
    chain: list[Module] = []
    for x in inner:
        if _inside(x, units) or x.kind not in _FFN:
            continue
        if x.block.active is not None:
            yield from _experts(x, h)
        elif x.type in (LINEAR, CONV1D):
            chain.append(x)
            if x.d_out == h:
                yield from [FeedForward(sum(c.d_out for c in chain[:-1]), x.d_in)] * x.copies
                chain = []


def _experts(x: Module, h: int) -> Iterator[FeedForward]:
    """Fused experts: 3-D (E, out, in) weights, k of E run per token. gpt-oss stores them
    (E, in, out): its up projection reads h first, or its down projection ends in h."""
    tensors = [t for t in x.tensors() if isinstance(t, Tensor) and len(t.shape) == 3]
    shapes = [tuple(int(d) for d in t.shape) for t in tensors]
    if any(_transposed(t.name, s, h) for t, s in zip(tensors, shapes, strict=True)):
        shapes = [(e, d_in, out) for e, out, d_in in shapes]
    downs = [i for i, (_, out, _) in enumerate(shapes) if out == h]
    down = next((i for i in downs if tensors[i].name.startswith("down")), downs[0] if downs else None)
    if down is not None:
        ups = sum(out for i, (_, out, d_in) in enumerate(shapes) if d_in == h and i != down)
        yield FeedForward(ups, shapes[down][2], *x.block.active)


def _transposed(name: str, shape: tuple[int, ...], h: int) -> bool:
    """Whether an expert tensor is stored (E, in, out); a square one cannot tell."""
    _, first, last = shape
    if name.startswith("down"):
        return last == h != first
    return first == h != last
