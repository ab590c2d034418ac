"""Flat tensor names (a checkpoint header, a state dict) become a tree with repeats.

``model.layers.0.mlp.up_proj.weight`` … ``model.layers.31.…`` become one ``layers`` block
repeated 32 times when the layers are alike (same names, shapes and dtypes); runs of unlike
layers (dense then MoE) become several blocks numbered from their first index.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .ir import Block, Node, Tensor, Tie
from .records import replace

Flat = tuple[str, tuple[int, ...], str | None]  # (name, shape, dtype)
MAX_PARTS = 64  # dotted parts of a name: real ones have under a dozen; the tree is walked recursively

# Component of a tensor from its name when no config says; checked in this order.
_KIND_RULES = [
    ("norms", r"(^|[._])(ln|norm|layernorm|layer_norm|LayerNorm|rms_norm)[^.]*($|\.)|_norm\b|norm\."),
    ("pooler", r"(^|\.)pooler\."),
    ("output_head", r"(^|\.)(lm_head|embed_out|cls|classifier|score|qa_outputs|output)(\.|$)"),
    ("router", r"\.(gate|router)\.(weight|bias)$|shared_expert_gate"),
    ("experts", r"(^|\.)(experts|shared_experts?)\."),
    ("embeddings", r"embed|wte|wpe|shared\.weight|token_type|position_embeddings|token_embd"),
    ("recurrent", r"mixer|ssm|linear_attn|\.conv1d\."),
    ("attention", r"attn|attention|\.(q|k|v|o)(_proj)?\.|query|key|value|qkv"),
    ("feed_forward", r"mlp|ffn|fc\d|intermediate|dense_h_to_4h|dense_4h_to_h|\.w[123]\.|wi|wo|c_fc"),
]
_COMPILED = [(kind, re.compile(rx)) for kind, rx in _KIND_RULES]


def kind_of(name: str) -> str:
    """Best guess at a tensor's component from its name alone."""
    for kind, rx in _COMPILED:
        if rx.search(name):
            return kind
    return "other"


def _nest(tensors: Iterable[Flat]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for name, shape, dtype in tensors:
        *path, leaf = name.split(".", MAX_PARTS)
        if len(path) == MAX_PARTS:
            raise ValueError(f"{name[:60]!r}…: more than {MAX_PARTS} dotted parts")
        node = root
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"{name}: a tensor and a module share a name")
        node[leaf] = (tuple(shape), dtype, name)
    return root


def _signature(node: Any) -> Any:
    if isinstance(node, tuple):
        return node[:2]
    return tuple((k, _signature(v)) for k, v in sorted(node.items()))


def _children(node: dict[str, Any], kind: Callable[[str], str], in_list: bool) -> tuple[Node, ...]:
    out: list[Node] = []
    for key, value in node.items():
        if isinstance(value, tuple):
            shape, dtype, full = value
            out.append(Tensor(key, shape, kind(full), dtype))
        elif value and all(map(_index, value)) and all(isinstance(v, dict) for v in value.values()):
            out.extend(_runs(key, value, kind, in_list))
        else:
            out.append(Block(key, _children(value, kind, in_list)))
    return tuple(out)


def _index(key: str) -> bool:
    """A list index as transformers writes one: ASCII digits, no leading zero (``00``, ``²``
    and ``٣`` are module names, not positions)."""
    return key.isascii() and key.isdecimal() and (key == "0" or key[0] != "0")


def _runs(name: str, items: dict[str, Any], kind: Callable[[str], str], in_list: bool) -> list[Block]:
    """Consecutive alike entries of a numbered list, each run stored once."""
    indices = sorted(int(k) for k in items)
    runs: list[list[int]] = []
    head = None  # the signature of the current run's first entry, computed once per run
    for i in indices:
        sig = _signature(items[str(i)])
        alike = runs and runs[-1][-1] == i - 1 and sig == head
        if alike:
            runs[-1].append(i)
        else:
            runs.append([i])
            head = sig
    label = None if in_list else "layer"
    return [Block(name, _children(items[str(r[0])], kind, True), repeat=len(r), start=r[0], label=label) for r in runs]


def tree(tensors: Iterable[Flat], kind: Callable[[str], str] = kind_of) -> Block:
    """The tree of a flat list of tensors; ``kind`` names each tensor's component."""
    return Block("", _children(_nest(tensors), kind, False))


def insert_tie(block: Block, path: Sequence[str], node: Tie) -> Block:
    if len(path) == 1:
        return replace(block, children=(*block.children, node))
    for i, child in enumerate(block.children):
        if isinstance(child, Block) and child.name == path[0] and child.repeat is None:
            return replace(
                block, children=(*block.children[:i], insert_tie(child, path[1:], node), *block.children[i + 1 :])
            )
    return replace(block, children=(*block.children, insert_tie(Block(path[0]), path[1:], node)))
