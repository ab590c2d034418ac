"""The torch modules a model tree stands for: which blocks are ``nn.Linear``, HF ``Conv1D`` or
``nn.Embedding``, under their full names, with the number of copies each repeated block stands for.

LoRA wraps these modules, FLOP counts multiply their weights and activation estimates read their
widths. A walk multiplies repeats; it unrolls a repeated block only when asked (``expand``), for
names that depend on the layer index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...ir import Block, Tensor, Tie, join
from ...model import Model

LINEAR, CONV1D, EMBEDDING = "Linear", "Conv1D", "Embedding"

# transformers' Conv1D (a linear layer stored in→out) survives only in GPT-2 among our families.
_CONV1D = {"gpt2": frozenset({"c_attn", "q_attn", "c_proj", "c_fc"})}
# transformers 5 routers are their own modules holding a weight, not nn.Linear: ``gate`` in most
# MoE families, ``router`` in gpt-oss, Jamba and GraniteMoE (PhiMoE's ``router`` is an nn.Linear subclass).
_ROUTERS = {model_type: ("router",) for model_type in ("gpt_oss", "jamba", "granitemoe", "granitemoehybrid")}
# Embedding tables that sit outside an embeddings block: T5's relative position buckets.
_EMBEDDINGS = frozenset({"relative_attention_bias"})


@dataclass(frozen=True)
class Module:
    """One module of the model (a block), standing for ``copies`` identical ones.

    ``name`` is the full name of its first copy (``model.layers.0.self_attn.q_proj``), ``label``
    the same with each repeated range written out (``model.layers.0–31.self_attn.q_proj``).
    ``type`` is Linear, Conv1D, Embedding, or None for any other module; ``d_in``/``d_out`` are
    the features (rows and width for an embedding), 0 for other modules. ``runs`` is how many
    times its copies run in one forward pass: ``copies``, except where layers are shared.
    """

    name: str
    label: str
    copies: int
    type: str | None
    kind: str
    block: Block
    d_in: int = 0
    d_out: int = 0
    runs: int = 0

    def tensors(self) -> list[Tensor | Tie]:
        """Its own parameters (not its submodules')."""
        return [c for c in self.block.children if not isinstance(c, Block)]


def module_type(block: Block, kind: str, model_type: str) -> tuple[str | None, int, int]:
    """(type, d_in, d_out) of a block: a weight matrix with at most a bias is a linear layer,
    an embedding when it is an embeddings block without bias, a Conv1D where GPT-2 uses one.
    ``kind`` is the block's component kind, inherited from its parents."""
    own = {c.name: c for c in block.children if not isinstance(c, Block)}
    weight = own.get("weight")
    if weight is None or len(weight.shape) != 2 or set(own) - {"weight", "bias"} or _has_blocks(block):
        return None, 0, 0
    rows, cols = (int(d) for d in weight.shape)
    if (block.kind == "embeddings" or block.name in _EMBEDDINGS) and "bias" not in own:
        return EMBEDDING, rows, cols
    if kind == "router" and block.name in _ROUTERS.get(model_type, ("gate",)):
        return None, 0, 0
    if block.name in _CONV1D.get(model_type, ()):
        return CONV1D, rows, cols
    return LINEAR, cols, rows


def _has_blocks(block: Block) -> bool:
    return any(isinstance(c, Block) for c in block.children)


def walk(model: Model, expand: bool = False) -> Iterator[Module]:
    """Every module of the model's tree, outermost first; repeats multiply ``copies`` unless
    ``expand``, which yields each copy of a repeated block under its own index."""
    yield from walk_block(model.tree, model.model_type, expand=expand, shared=shared_runs(model))


def walk_block(
    block: Block, model_type: str, name: str = "", *, expand: bool = False, shared: dict[str, int] | None = None
) -> Iterator[Module]:
    """The modules of ``block`` (named ``name``) and below, as :func:`walk` yields them."""
    yield from _walk(block, name, name, (1, 1), "other", model_type, expand, shared or {})


def shared_runs(model: Model) -> dict[str, int]:
    """Repeated blocks whose copies run more often than once each: ALBERT's ``num_hidden_groups``
    layer groups run ``num_hidden_layers`` times in all."""
    if model.model_type != "albert":
        return {}
    from ...arch import family

    c = family("albert").cfg(model.config, model.source)
    return {"albert_layer_groups": int(c.int("num_hidden_layers"))}


def _walk(
    block: Block, name: str, label: str, times: tuple[int, int], kind: str, mt: str, expand: bool, shared: dict
) -> Iterator[Module]:
    kind = block.kind or kind
    copies, runs = times
    if block.repeat is not None and expand:
        each = shared.get(block.name, block.copies) // block.copies  # runs of each copy (ALBERT: L/G)
        for i in block.indices():
            inner = Block(block.name, block.children, kind=block.kind, label=block.label)
            yield from _walk(
                inner, join(name, str(i)), join(label, str(i)), (copies, runs * each), kind, mt, True, shared
            )
        return
    if block.repeat is not None:
        last = block.start + block.copies - 1
        span = str(block.start) if last == block.start else f"{block.start}–{last}"
        name, label = join(name, str(block.start)), join(label, span)
        copies, runs = copies * block.copies, runs * shared.get(block.name, block.copies)
    t, d_in, d_out = module_type(block, kind, mt)
    yield Module(name, label, copies, t, kind, block, d_in, d_out, runs)
    for child in block.children:
        if isinstance(child, Block):
            sub = (join(name, child.name), join(label, child.name))
            yield from _walk(child, *sub, (copies, runs), kind, mt, expand, shared)


def output_embedding(model: Model) -> str | None:
    """The name of the module ``get_output_embeddings()`` returns: the output head's linear
    layer that is tied to, or shaped like, the token embedding, or else the top-level ``lm_head``
    that transformers' default returns (EmbeddingAccessMixin.get_output_embeddings in
    modeling_utils.py; Llama 3.2 Vision's has 8 rows fewer than its embedding); None for
    classifiers."""
    modules = list(walk(model))
    tables = [m for m in modules if m.type == EMBEDDING]
    if not tables:
        return None
    vocab = max(tables, key=lambda m: m.d_in)
    for m in modules:
        if m.type != LINEAR or m.kind != "output_head":
            continue
        weight = next(t for t in m.tensors() if t.name == "weight")
        if isinstance(weight, Tie) or (m.d_out, m.d_in) == (vocab.d_in, vocab.d_out) or m.name == "lm_head":
            return m.name
    return None
