"""A GGUF file's family: a transformers config from its metadata, checked against its tensors.

llama.cpp's converters (``convert_hf_to_gguf.py``) write a config's dimensions as ``{arch}.*``
metadata; :func:`gguf_config` reads them back into the fields of the family the architecture
stands for (``llama`` with experts is Mixtral, ``granitehybrid`` is Granite 4.0-H, …).
:func:`resolve_gguf` builds that family's tree and checks it against the file: every tensor's
shape (a layer's stacked experts as E matrices, size-1 dimensions dropped), or, where llama.cpp
splits a tensor that transformers fuses (Granite's experts), every layer's parameter count. An
architecture not mapped here, or a file its metadata does not describe, keeps the tree of its
names and says why.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, Node, Tensor, join
from ..model import Model
from ..records import replace
from .resolved import Resolved


def gguf_values(model: Model) -> Mapping[str, Any]:
    """The ``{arch}.*`` metadata of a GGUF model (without the prefix), as its reader kept it.
    Every metadata read of this module goes through here."""
    from ..gguf.meta import metadata

    return metadata(model).values


def resolve_gguf(model: Model) -> Resolved:
    """The family's model of a GGUF file, built from its metadata and checked (see the module)."""
    from ..frontends.config import from_config

    if model.towers():  # an mmproj file, or a model's GGUF with its mmproj beside it
        return Resolved(model, why="a multimodal projector (mmproj) file's towers are llama.cpp's clip, no family here")
    try:
        config = gguf_config(model)
    except ParamcountError as e:
        return Resolved(model, why=str(e))
    try:
        fam = from_config(config, f"{model.source} (metadata)", name=model.name, fallback=False)
    except ParamcountError as e:
        return Resolved(model, why=f"its metadata gives no {config['model_type']} model: {e}")
    tree = f"the {config['model_type']} tree from its metadata"
    wrong = _shape_mismatch(model.tree, fam.tree)
    if wrong and _layer_counts(model.tree, "blk") != _layer_counts(fam.tree, None):
        return Resolved(model, why=f"the file's tensors and {tree} differ: {wrong}")
    what = "every tensor's shape" if not wrong else "every layer's parameter count (llama.cpp splits fused tensors)"
    checked = f"the family's tree ({config['model_type']}) from the file's {model.model_type} metadata: {what} agrees"
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
    if len(shapes.get("token_embd.weight", ())) != 2:
        raise ParamcountError("the file holds no token_embd.weight matrix to read the vocabulary from")
    return build(_Meta(arch, meta), shapes)


@dataclass(frozen=True)
class _Meta:
    arch: str
    values: Mapping[str, Any]

    def int(self, key: str, default: int | None = None) -> int:
        value = self.values.get(key, default)
        if value is None:
            said = "is needed to build the family's tree, but the file does not state it"
            raise ParamcountError(f"{self.arch}.{key} {said}")
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


def _with_head_dim(model_type: str):
    """Families whose config defaults ``head_dim`` to a constant (Qwen3's 128, Gemma's 256), not
    h / heads: the file's key width is always stated to them."""

    def build(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
        heads = m.int("attention.head_count")
        width = m.int("attention.key_length", m.int("embedding_length") // max(heads, 1))
        return _base(m, shapes, model_type) | {"head_dim": width}

    return build


def _gemma3(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """Gemma 3's text model; its window where the file states one (the cache and compute read it)."""
    out = _with_head_dim("gemma3_text")(m, shapes)
    window = m.values.get("attention.sliding_window")
    return out | ({"sliding_window": m.int("attention.sliding_window")} if window else {})


def _qwen3moe(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    out = _with_head_dim("qwen3_moe")(m, shapes)
    experts = {"num_experts": m.int("expert_count"), "num_experts_per_tok": m.int("expert_used_count")}
    width = m.int("expert_feed_forward_length")
    return out | experts | {"moe_intermediate_size": width, "decoder_sparse_step": 1, "mlp_only_layers": []}


def _lfm2(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """LFM2: a per-layer KV head count, 0 on the short-convolution layers (convert_hf_to_gguf's
    LFM2Model writes ``head_count_kv`` so); the MLP width as stored (already adjusted)."""
    kv = _per_layer(m)
    out = _base(m, shapes, "lfm2")
    types = ["full_attention" if k else "conv" for k in kv]
    out |= {"num_key_value_heads": max(kv), "layer_types": types, "block_auto_adjust_ff_dim": False}
    return out | {"conv_L_cache": m.int("shortconv.l_cache"), "conv_bias": "blk.0.shortconv.in_proj.bias" in shapes}


def _expand(m: _Meta) -> int:
    """The SSM's inner width as a multiple of h (``expand``; the configs state no other)."""
    inner, hidden = m.int("ssm.inner_size"), m.int("embedding_length")
    if not hidden or inner % hidden:
        raise ParamcountError(f"{m.arch}.ssm.inner_size {inner:,} is no multiple of embedding_length {hidden:,}")
    return inner // hidden


def _ssm_base(m: _Meta, shapes: Mapping[str, tuple[int, ...]], model_type: str) -> dict[str, Any]:
    """A state-space model's common fields: no attention, no MLP."""
    return {
        "model_type": model_type,
        "architectures": [CAUSAL_LM[model_type]],
        "vocab_size": shapes["token_embd.weight"][0],
        "hidden_size": m.int("embedding_length"),
        "num_hidden_layers": m.int("block_count"),
        "tie_word_embeddings": "output.weight" not in shapes,
        "expand": _expand(m),
        "conv_kernel": m.int("ssm.conv_kernel"),
        "state_size": m.int("ssm.state_size"),
        "use_bias": "blk.0.ssm_in.bias" in shapes,
        "use_conv_bias": "blk.0.ssm_conv1d.bias" in shapes,
    } | _context(m)


def _mamba(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    out = _ssm_base(m, shapes, "mamba")
    return out | {"intermediate_size": m.int("ssm.inner_size"), "time_step_rank": m.int("ssm.time_step_rank")}


def _mamba2(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """Mamba-2: time_step_rank is the SSM head count (convert_hf_to_gguf's Mamba2Model)."""
    heads = m.int("ssm.time_step_rank")
    out = _ssm_base(m, shapes, "mamba2") | {"num_heads": heads, "head_dim": m.int("ssm.inner_size") // max(heads, 1)}
    return out | {"n_groups": m.int("ssm.group_count")}


def _every(indices: set[int], n: int, what: str) -> tuple[int, int]:
    """The (period, offset) that picks exactly ``indices`` of ``n`` layers (Jamba's schedules):
    the offset is the first index, the period the step to the second (past the last layer when
    there is one index or none); checked once over the layers, so linear in ``n``."""
    found = sorted(indices)
    offset = found[0] if found else n
    period = found[1] - found[0] if len(found) > 1 else max(offset + 1, n)
    if {i for i in range(n) if i % period == offset} != indices:
        shown = ", ".join(map(str, found[:8])) + (" …" if len(found) > 8 else "")
        raise ParamcountError(f"jamba: the {what} layers [{shown}] follow no period and offset")
    return period, offset


def _jamba(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """Jamba: attention where ``head_count_kv`` is not 0, experts where a layer stores them."""
    n, kv = m.int("block_count"), _per_layer(m)
    attn = _every({i for i, k in enumerate(kv) if k}, n, "attention")
    experts = _every({i for i in range(n) if f"blk.{i}.ffn_gate_exps.weight" in shapes}, n, "expert")
    out = _base(m, shapes, "jamba") | {"num_key_value_heads": max(kv)}
    out |= {"attn_layer_period": attn[0], "attn_layer_offset": attn[1]}
    out |= {"expert_layer_period": experts[0], "expert_layer_offset": experts[1]}
    out |= {"num_experts": m.int("expert_count"), "num_experts_per_tok": m.int("expert_used_count")}
    ssm = {"mamba_d_conv": m.int("ssm.conv_kernel"), "mamba_d_state": m.int("ssm.state_size")}
    ssm |= {"mamba_dt_rank": m.int("ssm.time_step_rank"), "mamba_expand": _expand(m)}
    bias = {"mamba_conv_bias": "blk.0.ssm_conv1d.bias" in shapes, "mamba_proj_bias": "blk.0.ssm_in.bias" in shapes}
    return out | ssm | bias


def _granitehybrid(m: _Meta, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """Granite 4.0-H: Mamba-2 or attention per layer (``head_count_kv``), MoE with a shared expert."""
    kv = _per_layer(m)
    out = _base(m, shapes, "granitemoehybrid") | {"num_key_value_heads": max(kv)}
    out |= {"layer_types": ["attention" if k else "mamba" for k in kv]}
    out |= {"num_local_experts": m.int("expert_count"), "num_experts_per_tok": m.int("expert_used_count")}
    shared = next((v[1] for k, v in shapes.items() if k.endswith("ffn_down_shexp.weight") and len(v) == 2), None)
    if shared is None:
        raise ParamcountError("granitehybrid: no ffn_down_shexp tensor to read the shared expert's width from")
    out |= {"shared_intermediate_size": shared}
    heads = m.int("ssm.time_step_rank")
    ssm = {"mamba_n_heads": heads, "mamba_d_head": m.int("ssm.inner_size") // max(heads, 1)}
    ssm |= {"mamba_n_groups": m.int("ssm.group_count"), "mamba_d_state": m.int("ssm.state_size")}
    ssm |= {"mamba_d_conv": m.int("ssm.conv_kernel"), "mamba_expand": _expand(m)}
    bias = {"mamba_conv_bias": "blk.0.ssm_conv1d.bias" in shapes, "mamba_proj_bias": "blk.0.ssm_in.bias" in shapes}
    return out | ssm | bias | {"attention_bias": any(k.endswith("attn_q.bias") for k in shapes)}


def _per_layer(m: _Meta) -> list[int]:
    """``head_count_kv`` as one count per layer (0 on a layer without attention)."""
    kv, n = m.values.get("attention.head_count_kv"), m.int("block_count")
    if isinstance(kv, int) and not isinstance(kv, bool):
        return [kv] * n
    if not (isinstance(kv, (list, tuple)) and len(kv) == n and all(isinstance(k, int) for k in kv)):
        raise ParamcountError(f"{m.arch}.attention.head_count_kv: expected {n} per-layer head counts, got {kv!r:.80}")
    return list(kv)


CAUSAL_LM = {
    "llama": "LlamaForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "lfm2": "Lfm2ForCausalLM",
    "mamba": "MambaForCausalLM",
    "mamba2": "Mamba2ForCausalLM",
    "jamba": "JambaForCausalLM",
    "granitemoehybrid": "GraniteMoeHybridForCausalLM",
}
_CONFIGS = {
    "llama": _llama,
    "qwen2": lambda m, s: _base(m, s, "qwen2"),
    "qwen2vl": lambda m, s: _base(m, s, "qwen2"),  # Qwen2(.5)-VL's language model: Qwen2's decoder
    "qwen3vl": _with_head_dim("qwen3"),  # Qwen3-VL's: Qwen3's
    "qwen3": _with_head_dim("qwen3"),
    "gemma3": _gemma3,
    "qwen3moe": _qwen3moe,
    "lfm2": _lfm2,
    "mamba": _mamba,
    "mamba2": _mamba2,
    "jamba": _jamba,
    "granitehybrid": _granitehybrid,
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


def _layer_counts(tree: Block, stack: str | None) -> tuple[dict[int, int], int]:
    """({layer index: its parameters}, the parameters outside the layers): the layers are the
    repeated blocks named ``stack`` (a GGUF file's ``blk``), else labelled as layers."""
    layers: dict[int, int] = {}
    found = [b for b in _blocks(tree) if b.repeat is not None and (b.name == stack if stack else b.label == "layer")]
    for b in found:
        for i in b.indices():
            layers[i] = layers.get(i, 0) + b.count // b.copies
    return layers, tree.count - sum(b.count for b in found)


def _blocks(node: Node):
    """Every block, outermost first, not below a repeated one (a layer's inner blocks)."""
    if isinstance(node, Block):
        yield node
        if node.repeat is None:
            for child in node.children:
                yield from _blocks(child)


def _shapes(node: Node, times: int = 1, expert: bool = False, norm: bool = False) -> Counter:
    """Tensor shapes with their multiplicities. A norm's weight counts as one vector: llama.cpp
    stores a grouped RMSNorm's (Mamba-2's) as (groups, width / groups)."""
    out: Counter = Counter()
    if isinstance(node, Tensor):
        shape = tuple(int(d) for d in node.shape)
        if len(shape) == 3 and expert:
            shape, times = shape[1:], times * shape[0]
        out[(math.prod(shape),) if norm else tuple(d for d in shape if d != 1)] += times
        return out
    if not isinstance(node, Block):
        return out  # a tie holds nothing of its own
    node = node.checkpoint if node.checkpoint is not None else node
    times *= node.copies if node.repeat is not None else 1
    expert = expert or node.active is not None or node.name.endswith("_exps")  # llama.cpp's stacked experts
    norm = node.name.endswith("norm")
    for child in node.children:
        out += _shapes(child, times, expert, norm)
    return out
