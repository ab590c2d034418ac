"""Building blocks shared by the families: layers, attention, MLPs, experts, norms, heads.

Each returns IR nodes named as transformers names the module, so a family file is a short
composition of these. Dimensions are passed as :class:`~paramcount.ir.Sym` values from
:class:`~paramcount.arch.config.Cfg`, which keeps their symbols for derivations.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from ..ir import Block, Node, Sym, Tensor, Tie, join
from ..records import record
from .config import Cfg

Builder = Callable[[Cfg], Block]


def block(
    name: str, *children: Node | None, kind: str | None = None, label: str | None = None, tower: str | None = None
) -> Block:
    """A module holding ``children``; ``None`` children (switched-off parts) are dropped.
    ``tower`` marks a composite model's part (``vision_encoder``, ``projector``, …)."""
    return Block(name, _present(children), kind=kind, label=label, tower=tower)


def stack(name: str, count: int, *children: Node | None, start: int = 0, label: str = "layer") -> Block:
    """A ModuleList of ``count`` identical modules, stored once."""
    return Block(name, _present(children), repeat=count, start=start, label=label)


def _present(children: tuple[Node | None, ...]) -> tuple[Node, ...]:
    """``children`` without the ``None`` entries (a switched-off part), as one tuple."""
    for c in children:  # most have none: the tuple as given
        if c is None:
            return tuple([c for c in children if c is not None])
    return children


def runs(kinds: Sequence[Hashable]) -> list[tuple[int, int, Hashable]]:
    """(first index, length, kind) of each run of equal consecutive entries of a per-layer list."""
    out: list[tuple[int, int, Hashable]] = []
    first = 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[first]:
            out.append((first, i - first, kinds[first]))
            first = i
    return out


def typed_stacks(
    name: str, kinds: Sequence[Hashable], build: Callable[[Hashable], Sequence[Node | None]], count: int | None = None
) -> tuple[Block, ...]:
    """A heterogeneous ModuleList (hybrid schedules, dense-then-MoE, ``layer_types``): one stack
    per run of alike layers, each starting at its first index. ``build(kind)`` gives one layer's
    modules and is called once per distinct kind (the subtree is shared by its runs). A single
    run spanning ``count`` layers keeps ``count`` itself (its symbol ``L`` for derivations)."""
    made: dict[Hashable, tuple[Node | None, ...]] = {}
    found = runs(kinds)
    if len(found) == 1 and count is not None:
        return (stack(name, count, *build(found[0][2])),)
    out = []
    for first, n, kind in found:
        if kind not in made:  # one tuple per kind, shared by its stacks: counting sums it once
            made[kind] = tuple([m for m in build(kind) if m is not None])
        out.append(Block(name, made[kind], repeat=n, start=first, label="layer"))
    return tuple(out)


def typed_decoder(
    c: Cfg, kinds: Sequence[Hashable], layer: Callable[[Cfg, Hashable], Sequence[Node | None]], final_norm: str = "norm"
) -> tuple[Node, ...]:
    """A decoder backbone over a layer schedule (hybrids, ``layer_types``): ``embed_tokens``, the
    layers as :func:`typed_stacks` of ``layer(c, kind)``, and a final RMSNorm."""
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        *typed_stacks("layers", kinds, lambda k: layer(c, k), count=c.int("num_hidden_layers")),
        norm(final_norm, h, bias=False),
    )


def linear(name: str, d_in: int, d_out: int, bias: bool = True, kind: str | None = None) -> Block:
    """nn.Linear: weight (out, in), bias (out)."""
    weight = Tensor("weight", (d_out, d_in))
    return Block(name, (weight, Tensor("bias", (d_out,))) if bias else (weight,), kind=kind)


def conv1d(name: str, d_in: int, d_out: int) -> Block:
    """HF Conv1D (GPT-2): a linear layer stored transposed, weight (in, out), always biased."""
    return Block(name, (Tensor("weight", (d_in, d_out)), Tensor("bias", (d_out,))))


def conv(
    name: str, d_in: int, d_out: int, kernel: int, groups: int = 1, bias: bool = True, kind: str | None = None
) -> Block:
    """torch's nn.Conv1d: weight (out, in / groups, kernel), bias (out)."""
    weight = Tensor("weight", (d_out, d_in // groups if groups != 1 else d_in, kernel))
    return Block(name, (weight, Tensor("bias", (d_out,))) if bias else (weight,), kind=kind)


def embedding(name: str, rows: int, dim: int) -> Block:
    return Block(name, (Tensor("weight", (rows, dim)),), kind="embeddings")


def norm(name: str, dim: int, bias: bool = True, weight: bool = True, form: str | None = None) -> Block:
    """LayerNorm (weight and bias) or RMSNorm (``bias=False``); ``form="layernorm"`` marks a
    LayerNorm without bias (Cohere, MPT, ModernBERT), which derivations must not call RMSNorm."""
    w = Tensor("weight", (dim,)) if weight else None
    return block(name, w, Tensor("bias", (dim,)) if bias else None, kind="norms", label=form)


def attention(
    name: str,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    bias: bool = False,
    out_bias: bool | None = None,
    names: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj"),
    extra: Sequence[Node] = (),
) -> Block:
    """Separate Q, K, V and output projections; GQA/MQA when ``kv_heads < heads``."""
    q, k, v, o = names
    out_bias = bias if out_bias is None else out_bias
    width, kv_width = heads * head_dim, kv_heads * head_dim
    return block(
        name,
        linear(q, hidden, width, bias),
        linear(k, hidden, kv_width, bias),
        linear(v, hidden, kv_width, bias),
        linear(o, width, hidden, out_bias),
        *extra,
        kind="attention",
    )


def gated_mlp(
    name: str,
    hidden: int,
    inter: int,
    bias: bool = False,
    names: Sequence[str] = ("gate_proj", "up_proj", "down_proj"),
    kind: str = "feed_forward",
) -> Block:
    """SwiGLU/GeGLU feed-forward: gate and up (h→I), down (I→h)."""
    gate, up, down = names
    return block(
        name,
        linear(gate, hidden, inter, bias),
        linear(up, hidden, inter, bias),
        linear(down, inter, hidden, bias),
        kind=kind,
    )


def mlp(name: str, hidden: int, inter: int, bias: bool = True, names: Sequence[str] = ("fc1", "fc2")) -> Block:
    """Plain two-layer feed-forward h→I→h."""
    up, down = names
    return block(name, linear(up, hidden, inter, bias), linear(down, inter, hidden, bias), kind="feed_forward")


def fused_experts(
    experts: int,
    hidden: int,
    inter: int,
    active: int,
    checkpoint_names: Sequence[str] = ("gate_proj", "up_proj", "down_proj"),
) -> Block:
    """Routed experts as transformers 5 holds them (3-D ``gate_up_proj`` and ``down_proj``),
    with the per-expert names checkpoints store as the checkpoint view."""
    per_expert = gated_mlp("", hidden, inter, names=checkpoint_names, kind="experts").children
    return Block(
        "experts",
        (Tensor("gate_up_proj", (experts, 2 * inter, hidden)), Tensor("down_proj", (experts, hidden, inter))),
        kind="experts",
        active=(int(active), int(experts)),
        checkpoint=Block("experts", per_expert, repeat=experts, kind="experts", active=(int(active), int(experts))),
    )


def router(name: str, hidden: int, experts: int, bias: bool = False) -> Block:
    return linear(name, hidden, experts, bias, kind="router")


def find(node: Block, path: str) -> Tensor:
    """The tensor at dotted ``path`` below ``node`` (first copy of a repeated block)."""
    head, _, rest = path.partition(".")
    for child in node.children:
        if child.name == head and isinstance(child, Tensor) and not rest:
            return child
        if child.name == head and isinstance(child, Block):
            return find(child, rest)
        if child.name == "" and isinstance(child, Block):  # transparent wrapper
            try:
                return find(child, path)
            except KeyError:
                pass
    raise KeyError(path)


# ---- model classes: a backbone wrapped under its attribute name with a head ----

Backbone = Callable[[Cfg], tuple[Node, ...]]
Head = Callable[[Cfg, Block], Sequence[Node]]  # (config, backbone block) -> the head's modules


def num_labels(c: Cfg) -> Sym:
    """transformers takes the label count from ``id2label`` when the file has one."""
    id2label = c.raw.get("id2label")
    if isinstance(id2label, dict) and "num_labels" not in c.raw:
        return Sym(len(id2label), "C")
    return c.int("num_labels", default=2)


@record(frozen=True)
class Base:
    """The backbone class itself (``LlamaModel``): the backbone's modules at the root."""

    backbone: Backbone

    def __call__(self, c: Cfg) -> Block:
        return Block("", self.backbone(c), label="backbone")


@record(frozen=True)
class Pooled:
    """A backbone whose last module is a pooler that some classes leave out (transformers'
    ``add_pooling_layer=False``): ``body`` is the backbone without it."""

    body: Backbone
    pooler: Callable[[Cfg], Node]

    def __call__(self, c: Cfg) -> tuple[Node, ...]:
        return (*self.body(c), self.pooler(c))


@record(frozen=True)
class WithHead:
    """A class holding the backbone as attribute ``prefix``, followed by the head's modules.

    When ``backbone`` is the backbone class's own, or that one without its pooler, the class
    tree holds the backbone tree's modules (:meth:`backbone_tree`): a count builds them once.
    """

    backbone: Backbone
    prefix: str
    head: Head

    def __call__(self, c: Cfg) -> Block:
        body = Block(self.prefix, self.backbone(c), label="backbone")
        return Block("", (body, *self.head(c, body)))

    def backbone_tree(self, tree: Block, base: Builder, c: Cfg) -> Block | None:
        """The tree ``base`` would build, made from the modules of ``tree`` (one this built),
        when ``base`` holds the same backbone (or it with its pooler); else None."""
        if not isinstance(base, Base):
            return None
        body = tree.children[0].children
        if base.backbone is self.backbone:
            return Block("", body, label="backbone")
        if isinstance(base.backbone, Pooled) and base.backbone.body is self.backbone:
            return Block("", (*body, base.backbone.pooler(c)), label="backbone")
        return None


def base(backbone: Backbone) -> Builder:
    return Base(backbone)


def with_head(backbone: Backbone, prefix: str, head: Head) -> Builder:
    """The backbone as attribute ``prefix`` of the model, followed by the head's modules."""
    return WithHead(backbone, prefix, head)


def lm_head(
    embed: str,
    name: str = "lm_head",
    bias: bool = False,
    tie_field: str = "tie_word_embeddings",
) -> Head:
    """An output projection back to the vocabulary, tied to the input embedding when the
    config says so (then it adds no parameters)."""

    def head(c: Cfg, body: Block) -> Sequence[Node]:
        emb = find(body, embed)
        rows, dim = emb.shape
        if c.bool(tie_field):
            weight: Node = Tie("weight", emb.shape, target=join(body.name, embed))
        else:
            weight = Tensor("weight", (rows, dim))
        b = Tensor("bias", (rows,)) if bias else None
        return [block(name, weight, b, kind="output_head")]

    return head


def classifier(name: str, hidden_field: str = "hidden_size", bias: bool = True) -> Head:
    """A linear layer from the hidden size to ``num_labels`` (sequence or token classification)."""

    def head(c: Cfg, body: Block) -> Sequence[Node]:
        return [linear(name, c.int(hidden_field), num_labels(c), bias, kind="output_head")]

    return head


def decoder_classes(
    prefix: str,
    backbone: Backbone,
    embed: str = "embed_tokens.weight",
    attr: str = "model",
    heads: Sequence[str] = (
        "ForCausalLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ),
    qa_attr: str | None = None,
) -> dict[str, Builder]:
    """The usual class set of a decoder-only family (``LlamaModel``, ``LlamaForCausalLM``, …),
    as transformers' generic heads build them: ``score`` without bias for sequence
    classification, ``score`` with bias for tokens, ``qa_outputs`` with bias. Some families
    keep their QA backbone under another attribute (Llama: ``transformer``): ``qa_attr``."""
    known = {
        "ForCausalLM": lm_head(embed),
        "ForSequenceClassification": classifier("score", bias=False),
        "ForTokenClassification": classifier("score"),
        "ForQuestionAnswering": lambda c, body: [linear("qa_outputs", c.int("hidden_size"), 2, kind="output_head")],
    }
    classes = {f"{prefix}Model": base(backbone)}
    for h in heads:
        where = qa_attr if h == "ForQuestionAnswering" and qa_attr else attr
        classes[f"{prefix}{h}"] = with_head(backbone, where, known[h])
    return classes
