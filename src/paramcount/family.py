"""The tree explain, compute and compare read: the family's, wherever a family is known.

A count read from files (a safetensors checkpoint, a GGUF file, a print(model) text) has a tree
made from tensor names: right in its total, but without the config's symbols, layer stacks or
component kinds that a derivation, an attention width or an embedding table is read from. Where
the files name a native family, :func:`resolve` gives that family's tree instead, built from the
config (a checkpoint's config.json, a GGUF file's metadata) and checked against the stored
tensors: every name and shape (a checkpoint), or every shape (a GGUF file, whose names are
llama.cpp's). Where there is no family, or the check fails, the model read from the files comes
back with ``why``: the figures that need the family's structure are then flagged, never 0 or a
guess marked exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ParamcountError
from .ir import Block, Node, Tensor, join
from .model import Model
from .records import replace


@dataclass(frozen=True)
class Resolved:
    """``model``: the tree to read; ``checked``: what was checked to use the family's tree
    (None for a config, whose tree is the family's); ``why``: why the tree is not the family's
    (None when it is)."""

    model: Model
    checked: str | None = None
    why: str | None = None

    @property
    def is_family(self) -> bool:
        return self.why is None


def resolve(model: Model) -> Resolved:
    """The family's model of ``model`` where one is known and the files agree with it (see the module)."""
    from .memory.gguf_file import is_gguf

    if getattr(model, "checkpoint", None) is not None:
        return _checkpoint(model)
    if is_gguf(model):
        return _gguf(model)
    if model.counted_by != "paramcount":
        return Resolved(model, why=f"counted by {model.counted_by}: {model.model_type!r} has no native family")
    if not model.config or (model.source == "live module" and _from_names(model.tree)):
        return Resolved(model, why="a print(model) text or a module gives names and shapes, not a config's fields")
    return Resolved(model)


def _from_names(node: Node) -> bool:
    """Whether no block says what it is: a tree made from tensor names (families' builders mark
    their blocks with kinds and labels; :func:`paramcount.frontends.flat.tree` never does)."""
    if not isinstance(node, Block):
        return True
    return not (node.kind or node.label) and all(_from_names(c) for c in node.children)


def backbone_of(r: Resolved) -> Resolved:
    """The same, for the backbone inside the class (what explain derives by default)."""
    m = r.model
    if m.class_name == m.backbone_class or (m.backbone.count == m.tree.count and not r.is_family):
        return r  # names alone found no head to leave out
    return replace(r, model=replace(m, tree=m.backbone, class_name=m.backbone_class))


def _checkpoint(model: Any) -> Resolved:
    fam = model.family
    if fam is None:
        return Resolved(model, why=model.unchecked or "no config.json beside the weights")
    n = len(model.checkpoint.params)
    checked = f"the family's tree from {model.checkpoint.against}: all {n:,} stored tensors agree in name and shape"
    notes = (*fam.notes, checked)
    return Resolved(replace(fam, name=model.name, source=model.source, notes=notes), checked)


# ---- GGUF files ---------------------------------------------------------------------------------


def gguf_values(model: Model) -> Mapping[str, Any]:
    """The ``{arch}.*`` metadata of a GGUF model (without the prefix), as its reader kept it.
    Every metadata read of this module goes through here."""
    from .memory.gguf_file import metadata

    return metadata(model).values


def _gguf(model: Model) -> Resolved:
    from .frontends.config import from_config

    try:
        config = gguf_config(model)
    except ParamcountError as e:
        return Resolved(model, why=str(e))
    try:
        fam = from_config(config, f"{model.source} (metadata)", name=model.name, fallback=False)
    except ParamcountError as e:
        return Resolved(model, why=f"its metadata gives no {config['model_type']} model: {e}")
    wrong = _shape_mismatch(model.tree, fam.tree)
    if wrong:
        tree = f"the {config['model_type']} tree from its metadata"
        return Resolved(model, why=f"the file's tensors and {tree} differ: {wrong}")
    checked = (
        f"the family's tree ({config['model_type']}) from the file's {model.model_type} metadata: "
        "every tensor's shape agrees (llama.cpp's names are not transformers')"
    )
    notes = (*model.notes, checked)
    return Resolved(replace(fam, name=model.name, source=model.source, notes=notes), checked)


def gguf_config(model: Model) -> dict[str, Any]:
    """A transformers config for a GGUF file's architecture, from its metadata and tensor shapes
    (gguf-py's converters write these keys from the config: ``convert_hf_to_gguf.py``)."""
    arch = model.model_type
    build = _CONFIGS.get(arch)
    if build is None:
        known = ", ".join(sorted(_CONFIGS))
        raise ParamcountError(f"GGUF architecture {arch!r} is not mapped to a family (mapped: {known})")
    meta = gguf_values(model)
    shapes = dict(_first_copies(model.tree))
    if "token_embd.weight" not in shapes:
        raise ParamcountError("the file holds no token_embd.weight to read the vocabulary from")
    return build(_Meta(arch, meta), shapes)


@dataclass(frozen=True)
class _Meta:
    arch: str
    values: Mapping[str, Any]

    def int(self, key: str, default: int | None = None) -> int:
        value = self.values.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ParamcountError(f"{self.arch}.{key}: expected a whole number, got {value!r}")
        return value


def _base(m: _Meta, shapes: Mapping[str, tuple[int, ...]], model_type: str) -> dict[str, Any]:
    """The fields every decoder of these families shares; the class is the causal LM the file is."""
    heads = m.int("attention.head_count")
    hidden = m.int("embedding_length")
    kv = m.values.get("attention.head_count_kv", heads)
    return (
        {
            "model_type": model_type,
            "architectures": [CAUSAL_LM[model_type]],
            "vocab_size": shapes["token_embd.weight"][0],
            "hidden_size": hidden,
            "intermediate_size": m.int("feed_forward_length"),
            "num_hidden_layers": m.int("block_count"),
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "tie_word_embeddings": "output.weight" not in shapes,
        }
        | _context(m)
        | _head_dim(m, hidden // max(heads, 1))
    )


def _context(m: _Meta) -> dict[str, int]:
    """The trained context, where the file states it (what compute and memory default to)."""
    return {"max_position_embeddings": m.int("context_length")} if "context_length" in m.values else {}


def _head_dim(m: _Meta, default: int) -> dict[str, int]:
    """``head_dim`` where the file states a key width other than h / heads (Qwen3, Gemma): a
    config stating the default would name a symbol the family's own config does not."""
    width = m.int("attention.key_length", default)
    return {} if width == default else {"head_dim": width}


def _llama(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """llama, and Mixtral (converted as llama with experts)."""
    experts = m.int("expert_count", 0)
    out = _base(m, shapes, "mixtral" if experts else "llama")
    if experts:
        out |= {"num_local_experts": experts, "num_experts_per_tok": m.int("expert_used_count")}
    else:
        out |= {"attention_bias": "blk.0.attn_q.bias" in shapes, "mlp_bias": "blk.0.ffn_up.bias" in shapes}
    return out


def _qwen3moe(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    out = _base(m, shapes, "qwen3_moe")
    experts = {"num_experts": m.int("expert_count"), "num_experts_per_tok": m.int("expert_used_count")}
    width = m.int("expert_feed_forward_length")
    return out | experts | {"moe_intermediate_size": width, "decoder_sparse_step": 1, "mlp_only_layers": []}


def _lfm2(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """LFM2: a per-layer KV head count, 0 on the short-convolution layers (convert_hf_to_gguf's
    LFM2Model writes ``head_count_kv`` so); the MLP width as stored (already adjusted)."""
    kv = m.values.get("attention.head_count_kv")
    n = m.int("block_count")
    if not (isinstance(kv, (list, tuple)) and len(kv) == n and all(isinstance(k, int) for k in kv)):
        raise ParamcountError(f"lfm2.attention.head_count_kv: expected {n} per-layer head counts, got {kv!r:.80}")
    out = _base(m, shapes, "lfm2")
    types = ["full_attention" if k else "conv" for k in kv]
    out |= {"num_key_value_heads": max(kv), "layer_types": types, "block_auto_adjust_ff_dim": False}
    return out | {"conv_L_cache": m.int("shortconv.l_cache"), "conv_bias": "blk.0.shortconv.in_proj.bias" in shapes}


CAUSAL_LM = {
    "llama": "LlamaForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "lfm2": "Lfm2ForCausalLM",
}
_CONFIGS = {
    "llama": _llama,
    "qwen2": lambda m, s: _base(m, s, "qwen2"),
    "qwen3": lambda m, s: _base(m, s, "qwen3"),
    "qwen3moe": _qwen3moe,
    "lfm2": _lfm2,
}


def _first_copies(node: Node, prefix: str = ""):
    """(name, shape) of each tensor in the first copy of every repeated block: ``blk.0.attn_q.weight``."""
    if isinstance(node, Tensor):
        yield join(prefix, node.name), tuple(int(d) for d in node.shape)
    elif isinstance(node, Block):
        here = join(prefix, node.name) if node.repeat is None else join(join(prefix, node.name), str(node.start))
        for child in node.children:
            yield from _first_copies(child, here)


# ---- the check: every tensor's shape -----------------------------------------------------------


def _shape_mismatch(gguf_tree: Block, family_tree: Block) -> str | None:
    """None when both trees hold the same tensor shapes (a layer's experts as E matrices, size-1
    dimensions dropped: llama.cpp stores a depthwise convolution's (h, 1, k) as (h, k)), else
    the first shapes that differ."""
    a, b = _shapes(gguf_tree), _shapes(family_tree)
    if a == b:
        return None
    only_a = sorted((a - b).items())[:3]
    only_b = sorted((b - a).items())[:3]
    say = lambda items: ", ".join(f"{n} × {'×'.join(map(str, s))}" for s, n in items) or "nothing"  # noqa: E731
    return f"the file has {say(only_a)}, the tree {say(only_b)}"


def _shapes(node: Node, times: int = 1, expert: bool = False) -> Counter:
    out: Counter = Counter()
    if isinstance(node, Tensor):
        shape = tuple(int(d) for d in node.shape)
        if len(shape) == 3 and expert:
            shape, times = shape[1:], times * shape[0]
        out[tuple(d for d in shape if d != 1)] += times
        return out
    if not isinstance(node, Block):
        return out  # a tie holds nothing of its own
    node = node.checkpoint if node.checkpoint is not None else node
    times *= node.copies if node.repeat is not None else 1
    expert = expert or node.active is not None or node.name.endswith("_exps")  # llama.cpp's stacked experts
    for child in node.children:
        out += _shapes(child, times, expert)
    return out
