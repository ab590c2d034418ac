"""The text ``print(model)`` printed becomes a Model: parsed by brackets, never evaluated.

torch's module repr is a small grammar::

    Name(extra)                         a leaf, its extra_repr on one line
    Name(extra… (key): module …)        a module with submodules
    (0-23): 24 x Block(…)               ModuleList's run of identical entries

Pasted printouts lose their indentation (the Bloom seed article did), so only brackets count.
A leaf's parameters are read from its extra repr (Linear, Embedding, LayerNorm, RMSNorm,
Conv1D, ConvNd, …). Where a paramcount family defines the printed class, the parameters of
modules that print no shape (``T5LayerNorm()``, a ViT's ``cls_token``) are filled from the family
and the widths printed around them (:mod:`printout_fill`); where none does, transformers' source
names the raw parameters its modules hold (:mod:`printout_source`). What still cannot be known
(fused MoE experts: their count and width are never printed) is named as unknown and the total
is a lower bound. The text cannot show ties, so a head or embedding with the token embedding's
shape gets both totals, tied and untied.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParamcountError
from ..files import open_regular
from ..flat import kind_of
from ..ir import Block, Node, Tensor, Tie, join
from ..model import Model
from ..records import replace
from .printout_fill import Filler, Towers, blocks, family_tree, pattern, raw_names

MAX_TEXT_CHARS = 8 << 20  # ModuleList collapses repeats: even unlike layers print in well under 1 MB
MAX_EXTRA_CHARS = 4096  # one module's arguments: a few dozen characters in practice
MAX_DEPTH = 64  # real models nest about 10 deep
MAX_MODULES = 1_000_000
MAX_BRACKETS = 256  # nesting inside one extra repr: LayerNorm((4096,), …) needs 2
MAX_TOWERS = 16  # towers of known families filled under an unknown root: real models have two or three

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")
# ``(key): `` followed by a module (or None): a child, not extra-repr text that starts with '('.
_CHILD = re.compile(r"\(([^()\n]{1,256}?)\):[ \t]*(?:(\d{1,9}) x )?(?=[A-Za-z_][A-Za-z0-9_.]{0,199}\(|None\b)")
_RANGE = re.compile(r"(\d{1,9})-(\d{1,9})")
_INT = re.compile(r"-?\d{1,18}")
# Each digit run has one way to match (the dot and the exponent are required before their
# digits), so a failing match is linear: ``\d+\.?\d*`` split every run two ways (quadratic).
_FLOAT = re.compile(r"-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|inf|nan)", re.I)
_KWARG = re.compile(r"([A-Za-z_]\w*)=(.*)", re.S)
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_PLAIN = re.compile(r"[^()\[\]{}'\"\n]+")
_QUOTED = re.compile(r"[^'\"\n\\]+")

# Leaves that hold no parameters whatever their arguments.
_FREE = re.compile(
    r"(Dropout\w*|\w*Dropout|DropPath|Identity|Flatten|Unflatten|\w*Activation|"
    r"\w*(GELU|Gelu|GeLU|GELUTanh|ReLU\d*|Relu|SiLU|Silu|Swish|Mish|Tanh|Sigmoid|Softmax\w*|Softmin|"
    r"Softplus|Softsign|ELU|GLU|Hardswish|Hardtanh|Hardsigmoid|Hardshrink|Softshrink|Threshold)|"
    r"\w*Pool\dd|\w*Pool|Upsample\w*|PixelShuffle|PixelUnshuffle|\w*Pad\dd|ChannelShuffle|Unfold|Fold|"
    r"\w*Rotary\w*|\w*SinusoidalPositionalEmbedding|\w*Loss|LocalResponseNorm|CrossMapLRN2d|"
    r"OlmoLayerNorm)"  # OLMo's LayerNorm is non-parametric
)
_NOT_FREE = re.compile(r"PReLU|[xX]IELU\w*")  # activations with learned parameters (XIELUActivation)
_CONV = re.compile(r"(Conv|ConvTranspose)([123])d")
_MLM_HEAD = re.compile(r"\w*(LMPredictionHead|LMHead|MLMHead)")  # keep a bias the decoder's shares
_EXPERTS = re.compile(r"\w*Experts")  # transformers 5 fuses routed experts into unprinted 3-D tensors
_ATTN = re.compile(r"attn|attention", re.I)
FUSED = "fused expert weights are not printed"  # their count and width: no printed module shows them


# --- the grammar -------------------------------------------------------------------------


@dataclass
class Mod:
    """One printed module: its class, its extra-repr text, and its children in order."""

    cls: str
    extra: list[str] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)


@dataclass
class Child:
    """``(key): module``; a numbered entry covers ``copies`` indices from ``start``."""

    key: str
    start: int | None
    copies: int
    mod: Mod | None  # ``(key): None``: an unset submodule


class _Parser:
    def __init__(self, text: str, source: str):
        self.text, self.source, self.pos, self.depth, self.modules = text, source, 0, 0, 0

    def error(self, message: str, pos: int | None = None) -> ParamcountError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return ParamcountError(f"not a print(model) printout: line {line}, column {col}: {message}", source=self.source)

    def _found(self) -> str:
        snippet = self.text[self.pos : self.pos + 20].split("\n")[0]
        return f"found {snippet!r}" if snippet else "found the end of the text"

    def skip_space(self) -> None:
        n = len(self.text)
        while self.pos < n and self.text[self.pos].isspace():
            self.pos += 1

    def root(self) -> Mod:
        self.skip_space()
        mod = self.module()
        self.skip_space()
        if self.pos < len(self.text):
            raise self.error(f"text after the model's closing bracket ({self._found()})")
        return mod

    def module(self) -> Mod:
        m = _IDENT.match(self.text, self.pos)
        if not m or m.end() >= len(self.text) or self.text[m.end()] != "(":
            raise self.error(f"expected a module such as Linear(…) ({self._found()})")
        self.modules += 1
        if self.modules > MAX_MODULES:
            raise self.error(f"more than {MAX_MODULES:,} modules")
        if self.depth >= MAX_DEPTH:
            raise self.error(f"modules nested more than {MAX_DEPTH} deep")
        opened = m.end()
        self.pos = opened + 1
        self.depth += 1
        mod = Mod(m.group())
        self.body(mod, opened)
        self.depth -= 1
        return mod

    def body(self, mod: Mod, opened: int) -> None:
        keys: set[str] = set()
        numbered: list[Child] = []  # the last numbered child, so no child rescans its siblings
        while True:
            self.skip_space()
            if self.pos >= len(self.text):
                raise self.error(f"'(' of {mod.cls} is never closed", opened)
            if self.text[self.pos] == ")":
                self.pos += 1
                return
            m = _CHILD.match(self.text, self.pos)
            if m:
                self.child(mod, m, keys, numbered)
            else:
                text = self.extra(mod, opened)
                if text:
                    mod.extra.append(text)

    def child(self, mod: Mod, m: re.Match[str], keys: set[str], numbered: list[Child]) -> None:
        key, count = m.group(1), m.group(2)
        start, copies = self.numbering(key, count, m.start())
        if key in keys:
            raise self.error(f"{mod.cls} has two children named ({key})", m.start())
        keys.add(key)
        last = numbered[0] if numbered else None
        if start is not None and last is not None and last.start + last.copies > start:
            raise self.error(f"entry ({key}) of {mod.cls} comes after ({last.key})", m.start())
        self.pos = m.end()
        if self.text.startswith("None", self.pos):
            self.pos += 4
            new = Child(key, start, copies, None)
        else:
            new = Child(key, start, copies, self.module())
        mod.children.append(new)
        if start is not None:
            numbered[:] = [new]

    def numbering(self, key: str, count: str | None, at: int) -> tuple[int | None, int]:
        rng = _RANGE.fullmatch(key)
        if count is not None:
            if not rng:
                raise self.error(f"'{count} x' needs a range such as (0-{int(count) - 1}), not ({key})", at)
            first, last = int(rng.group(1)), int(rng.group(2))
            if last - first + 1 != int(count) or int(count) < 1:
                raise self.error(f"range ({key}) holds {last - first + 1} entries, not {count}", at)
            return first, int(count)
        if rng:
            raise self.error(f"range ({key}) without its 'N x' count", at)
        # ASCII digits only: "²".isdigit() is true and int("²") raises (a list's index is 0-9)
        return (int(key), 1) if key.isascii() and key.isdigit() else (None, 1)

    def extra(self, mod: Mod, opened: int) -> str:
        """Extra-repr text up to the end of its line, the module's ')' or the next child."""
        text, start, stack = self.text, self.pos, []
        quote = None
        while self.pos < len(text):
            skip = (_QUOTED if quote else _PLAIN).match(text, self.pos)
            if skip:  # jump over runs of ordinary characters
                self.pos = skip.end()
                continue
            ch = text[self.pos]
            if quote:
                if ch == "\n":
                    quote = None  # reprs never put a newline inside a string
                    continue
                if ch == quote:
                    quote = None
                self.pos += 1 + (ch == "\\")
                continue
            if ch in "'\"":
                quote = ch
            elif ch in _PAIRS:
                if not stack and ch == "(" and _CHILD.match(text, self.pos):
                    break
                stack.append((ch, self.pos))
                if len(stack) > MAX_BRACKETS:
                    raise self.error(f"brackets nested more than {MAX_BRACKETS} deep")
            elif ch in ")]}":
                if not stack:
                    if ch == ")":
                        break
                    raise self.error(f"unbalanced {ch!r} in the arguments of {mod.cls}")
                want = _PAIRS[stack.pop()[0]]
                if ch != want:
                    raise self.error(f"expected {want!r} but found {ch!r} in the arguments of {mod.cls}")
            elif ch == "\n" and not stack:
                break
            self.pos += 1
        if stack:
            raise self.error(f"{stack[-1][0]!r} is never closed", stack[-1][1])
        if self.pos >= len(text):
            raise self.error(f"'(' of {mod.cls} is never closed", opened)
        return text[start : self.pos].strip()


def parse(text: str, source: str = "<text>") -> Mod:
    """The module tree of a printout; a ParamcountError naming line and column otherwise."""
    if len(text) > MAX_TEXT_CHARS:
        raise ParamcountError(
            f"text is {len(text):,} characters; a printout is at most {MAX_TEXT_CHARS:,}", source=source
        )
    return _Parser(text, source).root()


# --- extra repr arguments ----------------------------------------------------------------


def _split(text: str) -> list[str]:
    """Split at top-level commas (brackets and quotes already balanced by the parser)."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _value(text: str, depth: int = 0) -> Any:
    """An int, float, bool, None, string or tuple of them; anything else stays text."""
    if _INT.fullmatch(text):
        return int(text)
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    if _FLOAT.fullmatch(text):
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if depth < 8 and text.startswith("(") and text.endswith(")"):
        return tuple(_value(p, depth + 1) for p in _split(text[1:-1]))
    return text


def arguments(extra: list[str]) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments of a module's extra repr."""
    if sum(len(e) for e in extra) > MAX_EXTRA_CHARS:  # not a real repr: read nothing from it
        return [], {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for part in _split(", ".join(extra)):
        m = _KWARG.fullmatch(part)
        if m:
            kwargs[m.group(1)] = _value(m.group(2).strip())
        else:
            args.append(_value(part))
    return args, kwargs


# --- parameters of a printed module ------------------------------------------------------

Param = tuple[str, tuple[int, ...], str | None]  # (name, shape, kind when the module says)


def _ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, tuple) and value and _ints(*value):
        return value
    return (value,) if _ints(value) else None


def _linear(kw: dict[str, Any]) -> list[Param] | None:
    d_in, d_out = kw["in_features"], kw["out_features"]
    if not _ints(d_in, d_out):
        return None
    return [("weight", (d_out, d_in), None)] + ([("bias", (d_out,), None)] if kw.get("bias", True) else [])


def _conv(cls: str, args: list[Any], kw: dict[str, Any]) -> list[Param] | None:
    m = _CONV.search(cls)
    kernel = _shape(kw.get("kernel_size"))
    groups = kw.get("groups", 1)
    if len(args) != 2 or not _ints(*args, groups) or kernel is None or not groups:
        return None
    c_in, c_out = args
    if m and len(kernel) == 1:
        kernel = kernel * int(m.group(2))
    weight = (c_in, c_out // groups, *kernel) if "Transpose" in cls else (c_out, c_in // groups, *kernel)
    return [("weight", weight, None)] + ([("bias", (c_out,), None)] if kw.get("bias", True) else [])


def _norm(cls: str, args: list[Any], kw: dict[str, Any]) -> list[Param] | None:
    """LayerNorm/RMSNorm print their shape; GroupNorm, BatchNorm and InstanceNorm their channels."""
    if args and isinstance(args[0], tuple):
        shape = _shape(args[0])
        if shape is None or kw.get("elementwise_affine", True) is False:
            return None if shape is None else []
        weight = [("weight", shape, "norms")]
        if "RMS" in cls.upper():
            return weight
        if "elementwise_affine" in kw:  # torch's LayerNorm (bias= shown since torch 2.1; True before)
            return weight + ([("bias", shape, "norms")] if kw.get("bias", True) else [])
        return None  # a custom norm printing a shape: weight only, or weight and bias?
    channels = args[1] if "GroupNorm" in cls and len(args) == 2 else (args[0] if len(args) == 1 else None)
    if not _ints(channels) or "affine" not in kw:
        return None
    if not kw["affine"]:
        return []
    return [("weight", (channels,), "norms")] + ([("bias", (channels,), "norms")] if kw.get("bias", True) else [])


def leaf_params(cls: str, extra: list[str]) -> list[Param] | None:
    """Parameters of a module without children, or None when its text does not show them."""
    args, kw = arguments(extra)
    if "in_features" in kw and "out_features" in kw:
        return _linear(kw)
    if "nf" in kw and "nx" in kw:  # HF Conv1D: a transposed linear, always biased
        nf, nx = kw["nf"], kw["nx"]
        return [("weight", (nx, nf), None), ("bias", (nf,), None)] if _ints(nf, nx) else None
    if "kernel_size" in kw and not re.search(r"Pool|Unfold|Fold", cls):
        return _conv(cls, args, kw)
    if "Embedding" in cls and len(args) == 2 and _ints(*args):
        return [("weight", (args[0], args[1]), "embeddings")]
    if "PReLU" in cls:
        n = kw.get("num_parameters", 1)
        return [("weight", (n,), None)] if _ints(n) else None
    if re.search(r"Norm", cls) and (not _FREE.fullmatch(cls) or "affine" in kw or "elementwise_affine" in kw):
        return _norm(cls, args, kw)  # BiT's GroupNormActivation is a GroupNorm, whatever its name
    if _FREE.fullmatch(cls) and not _NOT_FREE.fullmatch(cls):
        return []
    return None


# --- the tree ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Unknown:
    """A printed module whose parameters the text does not show."""

    path: str  # its first occurrence, as named_parameters would prefix it
    class_name: str
    copies: int
    reason: str


@dataclass
class _Build:
    """What one walk of the module tree gathers besides the tree itself."""

    unknown: list[Unknown] = field(default_factory=list)
    # (weight name, shape, is an embedding) of embeddings and linear layers outside repeated
    # blocks, in print order, which is the order named_parameters() keeps the first of a tie
    candidates: list[tuple[str, tuple[int, ...], bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    filler: Filler | Towers | None = None  # the family's tensors for modules that print no shape


def _tensors(params: list[Param], path: str, in_layer: bool) -> list[Tensor]:
    out = []
    for name, shape, kind in params:
        full = join(path, name)
        k = kind or kind_of(full)
        if in_layer and (kind == "embeddings" or k == "output_head"):
            k = "attention" if _ATTN.search(full) else ("feed_forward" if k == "output_head" else kind_of(full))
        out.append(Tensor(name, shape, k))
    return out


def _module(mod: Mod, name: str, path: str, copies: int, in_list: bool, b: _Build) -> list[Node]:
    """The node(s) of ``mod`` printed as ``name``: a Block, or runs of Blocks for a ModuleList."""
    if mod.children and all(c.start is not None for c in mod.children):
        return _runs(mod, name, path, copies, in_list, b)
    children: list[Node] = []
    if not mod.children:
        params = leaf_params(mod.cls, mod.extra)
        if params is None and b.filler is not None:
            params = b.filler.leaf(path, mod.cls)
        if params is None:
            shown = ", ".join(mod.extra)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            reason = FUSED if _EXPERTS.fullmatch(mod.cls) else f"{mod.cls}({shown}) does not show its parameters"
            b.unknown.append(Unknown(path, mod.cls, copies, reason))
            params = []
        children += _tensors(params, path, in_layer=copies > 1 or in_list)
        _remember(params, mod, path, copies, in_list, b)
    else:
        children += _own(mod, path, copies, in_list, b)
        if b.filler is not None:
            subs = {c.key for c in mod.children}
            raw = b.filler.beside(path, subs | {t.name for t in children}, subs)
            children += _tensors(raw, path, in_layer=copies > 1 or in_list)
        for c in mod.children:
            if c.mod is None:
                continue
            if c.start is None:
                children += _module(c.mod, c.key, join(path, c.key), copies, in_list, b)
            else:  # a numbered entry beside named ones: an unnamed block keeps the index
                body = _module(c.mod, "", join(path, str(c.start)), copies * c.copies, True, b)
                children.append(Block("", _body(body), repeat=c.copies, start=c.start))
    return [Block(name, tuple(children))]


def _body(nodes: list[Node]) -> tuple[Node, ...]:
    """The children of a module's one block, or its runs when it is itself a list."""
    first = nodes[0] if len(nodes) == 1 else None
    return first.children if isinstance(first, Block) and first.repeat is None else tuple(nodes)


def _own(mod: Mod, path: str, copies: int, in_list: bool, b: _Build) -> list[Node]:
    """Parameters a module with children holds itself, which print(model) never shows."""
    named = {c.key: c.mod for c in mod.children if c.mod is not None}
    own = leaf_params(mod.cls, mod.extra) if mod.extra else None
    if own:  # a norm or linear subclass with a child (BiT's GroupNorm + activation): its repr shows them
        return _tensors(own, path, copies > 1 or in_list)
    if mod.cls == "MultiheadAttention" and "out_proj" in named:
        _, kw = arguments(named["out_proj"].extra)
        e = kw.get("in_features")
        if _ints(e):
            b.notes.append(f"{path or mod.cls}: MultiheadAttention counted with kdim = vdim = {e} and no bias_k/bias_v")
            params: list[Param] = [("in_proj_weight", (3 * e, e), "attention")]
            params += [("in_proj_bias", (3 * e,), "attention")] if kw.get("bias", True) else []
            return _tensors(params, path, copies > 1 or in_list)
    if _EXPERTS.fullmatch(mod.cls):
        # the family's fused tensors, where the router and a shared expert print their widths (Llama 4)
        filled = b.filler.leaf(path, mod.cls) if b.filler is not None else None
        if filled:
            return _tensors(filled, path, copies > 1 or in_list)
        b.unknown.append(Unknown(path, mod.cls, copies, FUSED))
    decoder = named.get("decoder")
    if _MLM_HEAD.fullmatch(mod.cls) and decoder is not None and not decoder.children:
        _, kw = arguments(decoder.extra)
        if kw.get("bias") is True and _ints(kw.get("out_features")):
            # transformers' MLM heads own the bias and the decoder's bias is the same tensor
            return [Tensor("bias", (kw["out_features"],), "output_head")]
    return []


def _remember(params: list[Param], mod: Mod, path: str, copies: int, in_list: bool, b: _Build) -> None:
    """Tie candidates: token embeddings and heads outside repeated blocks."""
    if copies > 1 or in_list or not params:
        return
    if params[0][2] == "embeddings" or "in_features" in arguments(mod.extra)[1]:
        b.candidates.append((join(path, "weight"), params[0][1], params[0][2] == "embeddings"))


def _signature(node: Node) -> Any:
    if isinstance(node, Block):
        return (node.name, node.repeat, tuple(_signature(c) for c in node.children))
    return (node.name, tuple(node.shape), node.kind)


def _runs(mod: Mod, name: str, path: str, copies: int, in_list: bool, b: _Build) -> list[Node]:
    """ModuleList entries as runs of alike blocks, numbered from their first index."""
    runs: list[tuple[int, int, tuple[Node, ...]]] = []
    for c in mod.children:
        if c.mod is None or c.start is None:
            continue
        body = _body(_module(c.mod, "", join(path, str(c.start)), copies * c.copies, True, b))
        last = runs[-1] if runs else None
        if last and last[0] + last[1] == c.start and tuple(map(_signature, last[2])) == tuple(map(_signature, body)):
            runs[-1] = (last[0], last[1] + c.copies, last[2])
        else:
            runs.append((c.start, c.copies, body))
    label = None if in_list else "layer"
    return [Block(name, body, repeat=n, start=first, label=label) for first, n, body in runs]


# --- ties, totals and the Model ----------------------------------------------------------


def _retie(node: Node, prefix: str, ties: dict[str, str]) -> Node:
    """``node`` with the named tensors made ties; untouched subtrees are kept, not copied."""
    if not ties:
        return node
    if isinstance(node, Tensor):
        full = join(prefix, node.name)
        return Tie(node.name, node.shape, ties[full], node.kind) if full in ties else node
    if isinstance(node, Block) and node.repeat in (None, 1):  # a single numbered entry has one name too
        here = join(prefix, node.name) if node.repeat is None else join(join(prefix, node.name), str(node.start))
        children = tuple(_retie(c, here, ties) for c in node.children)
        if all(a is b for a, b in zip(children, node.children, strict=True)):
            return node
        return replace(node, children=children)
    return node


def _mlm_ties(node: Node, prefix: str = "") -> Iterator[tuple[str, str]]:
    """An MLM head's own ``bias`` is what its decoder's bias is (always, in transformers)."""
    if not isinstance(node, Block) or node.repeat is not None:
        return
    here = join(prefix, node.name)
    names = {c.name for c in node.children}
    if "bias" in names and "decoder" in names:
        yield join(here, "decoder.bias"), join(here, "bias")
    for c in node.children:
        yield from _mlm_ties(c, here)


@dataclass(frozen=True)
class Counted:
    """A printed module counted: the tree under the likely tie, and what the text leaves open."""

    tree: Block
    unknown: tuple[Unknown, ...]
    ties: tuple[tuple[str, str], ...]  # (tensor, the embedding it may be) as the text allows
    tied_total: int
    untied_total: int
    notes: tuple[str, ...]
    untied: Block  # the tree with no tie the text leaves open (the MLM heads' bias is always one)


def count(mod: Mod, likely_tied: bool, filler: Filler | Towers | None = None) -> Counted:
    b = _Build(filler=filler)
    tree = Block("", _body(_module(mod, "", "", 1, False, b)))
    always = dict(_mlm_ties(tree))
    tree = _retie(tree, "", always)
    ties: list[tuple[str, str]] = []
    embeddings = [shape for _, shape, is_embedding in b.candidates if is_embedding]
    if embeddings:
        shape = max(embeddings, key=lambda s: s[0])  # the token embedding has the most rows
        group = [n for n, s, _ in b.candidates if s == shape]
        ties = [(n, group[0]) for n in group[1:]]
    return retied(Counted(tree, tuple(b.unknown), (), 0, 0, tuple(b.notes), tree), ties, likely_tied)


def retied(c: Counted, ties: list[tuple[str, str]], likely_tied: bool) -> Counted:
    """``c`` with ``ties`` as the ties the text leaves open (tied or not, as likely)."""
    tied = _retie(c.untied, "", dict(ties))
    tree = tied if likely_tied else c.untied
    return replace(c, tree=tree, ties=tuple(ties), tied_total=tied.count, untied_total=c.untied.count)


def names(node: Block, prefix: str = "", repeated: bool = False) -> Iterator[tuple[str, tuple[int, ...], bool]]:
    """Each printed tensor's full name and shape, and whether it is one of a run (then named by
    the run's first index): proportional to the tree, never unrolled."""
    for child in node.children:
        if isinstance(child, Block):
            here = join(prefix, child.name)
            here = here if child.repeat is None else join(here, str(child.start))
            yield from names(child, here, repeated or (child.repeat or 1) > 1)
        else:
            yield join(prefix, child.name), tuple(child.shape), repeated


def _family(class_name: str) -> Any:
    """The paramcount family that defines ``class_name``, if any (for tie defaults)."""
    from ..arch import family, model_type_of_class

    try:
        model_type = model_type_of_class(class_name)
        return family(model_type) if model_type else None
    except Exception:  # only a hint for the likely tie: a broken family module must not stop a count
        return None


def _tie_note(c: Counted, class_name: str, fam: Any, likely: bool, known: bool) -> str:
    n = len(c.ties)
    first, target = c.ties[0]
    names = [name for name, _ in c.ties]
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if n > 1 else first
    what = f"{listed} {'has' if n == 1 else 'have'} the shape of {target}"
    chosen = "tied" if likely else "untied"
    head = f"print(model) cannot show ties: {what}. Tied: {c.tied_total:,}; untied: {c.untied_total:,}."
    if known:
        return f"{head} Counted {chosen}, as asked."
    return f"{head} {_default_said(class_name, fam)}, so the {chosen} count is given."


def _default_said(class_name: str, fam: Any) -> str:
    """Whose default chose the tie: the family's config, or the assumption for an unknown class."""
    if fam is not None and "tie_word_embeddings" in fam.defaults:
        return f"{class_name}'s config default is tie_word_embeddings={fam.defaults['tie_word_embeddings']}"
    return f"{class_name} is not a family paramcount knows, so tied is assumed"


def _open_tie(c: Counted, said: str, likely: bool) -> str:
    """Why a count is not exact when the text leaves a tie open and the caller did not settle it."""
    counted, other = (c.tied_total, c.untied_total) if likely else (c.untied_total, c.tied_total)
    first, other_word = ("tied", "untied") if likely else ("untied", "tied")
    return (
        f"not exact: print(model) cannot show whether {c.ties[0][0]} is tied to {c.ties[0][1]}; {said}, so "
        f"{counted:,} counts it {first}; {other_word}, {other:,}; --set tie_word_embeddings=true|false settles it"
    )


RAW = "(raw parameters)"  # an Unknown's class for parameters held beside submodules


def _hidden_raw(family: Block | None, tree: Block) -> list[Unknown]:
    """The known family's raw parameters that the printed modules cannot have shown (its tree
    at its defaults says which modules hold parameters beside submodules)."""
    if family is None:
        return []
    expected = raw_names(family)
    printed: dict[str, set[str]] = {}
    for path, block in [("", tree), *blocks(tree)]:
        printed.setdefault(pattern(path), set()).update(c.name for c in block.children if not isinstance(c, Block))
    out = []
    for path, names in expected.items():
        missing = sorted(names - printed.get(path, names))
        if missing:
            where = path.replace("*", "0") or "(root)"
            reason = f"holds {', '.join(missing)} beside its submodules, which print(model) does not show"
            out.append(Unknown(where, RAW, 1, reason))
    return out


def _source_raw(root: Mod, tree: Block) -> list[Unknown]:
    """For a class no family defines: what transformers' source says its modules hold beside
    their submodules (printout_source; only where transformers is installed), less what a
    tower's family filled in."""
    from .printout_source import hidden, walk

    out = []
    found = hidden(root)
    where: dict[str, list[str]] = {}  # each class with hidden parameters -> every path it is printed at
    for p, mod, _ in walk(root) if found else ():
        where.setdefault(mod.cls, []).append(p)
    for path, cls, names in found:
        places = [_subtree(tree, p) for p in where.get(cls, [])]
        names = [n for n in names if not all(b is not None and n in {c.name for c in b.children} for b in places)]
        if names:
            reason = f"holds {', '.join(names)} beside its submodules, which print(model) does not show ({cls})"
            out.append(Unknown(path or "(root)", RAW, 1, reason))
    return out


def _subtree(tree: Block, path: str) -> Block | None:
    """The block printed at ``path`` (an entry of a run: the run's body); None where nothing is."""
    node: Block | None = tree
    keys = path.split(".") if path else []
    while keys and node is not None:
        key = keys.pop(0)
        found = [c for c in node.children if isinstance(c, Block) and c.name == key]
        plain = next((c for c in found if c.repeat is None), None)
        if plain is not None or not keys or not keys[0].isdigit():
            node = plain
            continue
        i = int(keys.pop(0))  # ``layers.3``: the run of ``layers`` that holds entry 3
        node = next((c for c in found if c.repeat is not None and c.start <= i < c.start + c.repeat), None)
    return node


def _towers(root: Mod, tree: Block, path: str = "") -> Iterator[tuple[str, Block, Block]]:
    """(path, family tree, printed tree) of each named submodule whose class a family defines
    (not looking inside them)."""
    for c in root.children:
        if c.mod is None or c.start is not None or not c.mod.children:
            continue
        here = join(path, c.key)
        family = family_tree(_family(c.mod.cls), c.mod.cls)
        printed = _subtree(tree, here) if family is not None else None
        if family is not None and printed is not None:
            yield here, family, printed
        elif family is None:
            yield from _towers(c.mod, tree, here)


def _tower_count(root: Mod, c: Counted, likely: bool) -> tuple[Counted, list[str], list[Unknown]]:
    """For a root no family defines: the count again with its towers' families filling in (the
    first MAX_TOWERS), the note, and what each tower's family holds that is still missing."""
    towers = list(_towers(root, c.tree))
    if not towers:
        return c, [], []
    filler = Towers([(path, Filler(family, printed)) for path, family, printed in towers[:MAX_TOWERS]])
    c = count(root, likely, filler)
    missing = []
    for path, family, _ in towers:
        for u in _hidden_raw(family, _subtree(c.tree, path) or Block(path)):
            missing.append(replace(u, path=join(path, u.path) if u.path != "(root)" else path))
    return c, [note] if (note := filler.note()) else [], missing


def _holding(root: Mod, unknown: tuple[Unknown, ...]) -> tuple[Unknown, ...]:
    """The unknown leaves less those whose class transformers' source shows holds no parameter
    (Llama 4's ``Llama4TextL2Norm(eps=1e-05)``)."""
    from .printout_source import parameter_free

    leaves = {u.class_name for u in unknown if not _EXPERTS.fullmatch(u.class_name)}
    free = parameter_free(root, leaves) if leaves else set()
    return tuple(u for u in unknown if u.class_name not in free)


def _source_ties(root: Mod, c: Counted, likely: bool) -> tuple[Counted, list[str]]:
    """For a class no family defines: the ties transformers' source declares, in place of the
    guess from shapes, and why the count may still hold a shared module more than once."""
    from .printout_source import expand, sharing

    s = sharing(root)
    if s is None:
        return c, []
    printed = {name: (shape, run) for name, shape, run in names(c.untied)}
    done = {name for name, t in _ties_of(c.untied)}
    why = list(s.unreadable) if likely else []
    ties: dict[str, str] = {}
    for prefix, keys in s.keys:
        got = expand(keys, prefix, {n: run for n, (_, run) in printed.items()})
        if got is None or any(printed[t][0] != printed[src][0] for t, src in got.items()):
            why += [f"the ties declared at {prefix or '(root)'} do not fit the printed names"] if likely else []
            continue
        ties.update({t: src for t, src in got.items() if t not in done})
    return retied(c, list(ties.items()), likely), why + _handed(s.handed, printed)


def _handed(handed: list[tuple[str, str]], printed: dict[str, Any]) -> list[str]:
    """Why each class that is handed a module holding parameters may share it."""
    by_class: dict[str, dict[str, str]] = {}  # class -> each child it is handed -> its first path
    for path, cls in handed:
        if any(n.startswith(path + ".") for n in printed):
            by_class.setdefault(cls, {}).setdefault(path.rsplit(".", 1)[-1], path)
    out = []
    for cls, keys in by_class.items():
        said = f"{cls} is handed {', '.join(keys)} by its caller, which may hand one module to several layers"
        out.append(f"{said} (e.g. {next(iter(keys.values()))})")
    return out


def _ties_of(node: Block, prefix: str = "") -> Iterator[tuple[str, Tie]]:
    for child in node.children:
        if isinstance(child, Tie):
            yield join(prefix, child.name), child
        elif isinstance(child, Block) and child.repeat in (None, 1):
            here = join(prefix, child.name)
            yield from _ties_of(child, here if child.repeat is None else join(here, str(child.start)))


def _shared_note(shared: tuple[str, ...], unknown: tuple[Unknown, ...], total: int) -> str:
    said = f"not exact: {total:,} may count a shared module more than once, as print(model) prints one at "
    said += "every place it is used, and transformers' source says: "
    said += "; ".join(shared[:3]) + (f" (and {len(shared) - 3} more)" if len(shared) > 3 else "")
    if unknown:
        said += "; it also leaves out " + _unknown_note(unknown, total).split("; print(model) does not show ", 1)[1]
    return said


def _unknown_note(unknown: tuple[Unknown, ...], total: int) -> str:
    by_class: dict[str, list[Unknown]] = {}
    for u in unknown:
        by_class.setdefault(u.class_name, []).append(u)
    raw = by_class.pop(RAW, [])
    parts = [
        f"{cls} ×{sum(u.copies for u in us)} (e.g. {us[0].path or '(root)'}: {us[0].reason})"
        for cls, us in by_class.items()
    ]
    said = f"lower bound: at least {total:,}; print(model) does not show"
    said += " the parameters of " + "; ".join(parts) if parts else ""
    if raw:
        held = "; ".join(f"{u.path}: {u.reason.split(' beside')[0].removeprefix('holds ')}" for u in raw[:8])
        held += f" (and {len(raw) - 8} more modules)" if len(raw) > 8 else ""
        said += f"{'; nor' if parts else ''} the parameters these modules hold beside their submodules: {held}"
    return said


@dataclass(frozen=True)
class Printout:
    """A printout counted: the Model (under the likely tie) and what the text leaves open."""

    model: Model
    unknown: tuple[Unknown, ...]
    ties: tuple[tuple[str, str], ...]
    tied_total: int
    untied_total: int
    likely_tied: bool
    shared: tuple[str, ...] = ()  # why a printed module may be one module used in several places

    @property
    def lower_bound(self) -> bool:
        """Whether the total is at most the model's (it leaves parameters out and may not count
        a shared module twice)."""
        return bool(self.unknown) and not self.shared


def _backbone(root: Mod, fam: Any) -> Mod | None:
    if fam is None or root.cls == fam.backbone:
        return None
    for c in root.children:
        if c.mod is not None and c.start is None and c.mod.cls == fam.backbone:
            return c.mod
    return None


def _filled_count(mod: Mod, fam: Any, likely: bool) -> tuple[Counted, list[str], Block | None]:
    """``mod`` counted, then again with what its family fills in (printout_fill), the note
    saying what was filled, and the family's tree (None when the family does not define it)."""
    c = count(mod, likely)
    family = family_tree(fam, mod.cls)
    if family is None or not (c.unknown or _hidden_raw(family, c.tree)):
        return c, [], family
    filler = Filler(family, c.tree)
    c = count(mod, likely, filler)
    note = filler.note()
    return c, [note] if note else [], family


def _missing(root: Mod, family: Block | None, c: Counted, in_towers: list[Unknown]) -> tuple[Unknown, ...]:
    """What the count leaves out: unknown leaves that may hold parameters, and the raw parameters
    the family (or transformers' source and the towers' families) says the text cannot show."""
    if family is not None:
        hidden = _hidden_raw(family, c.tree)
    else:  # the source and a tower's family may both name a module's raw parameters: once each
        hidden = _source_raw(root, c.tree)
        hidden += [u for u in in_towers if u.path not in {h.path for h in hidden}]
    return (*_holding(root, c.unknown), *hidden)


def _inexact(shared: tuple[str, ...], unknown: tuple[Unknown, ...], total: int) -> str | None:
    if shared:
        return _shared_note(shared, unknown, total)
    return _unknown_note(unknown, total) if unknown else None


def from_text(text: str, source: str = "<text>", name: str | None = None, tied: bool | None = None) -> Printout:
    """Count the model whose ``print(model)`` text is ``text``.

    ``tied`` says whether the token embedding is shared with the head (and with the other
    embeddings of its shape) when the caller knows; by default the family's config default
    decides, and both totals are in the result either way.
    """
    root = parse(text, source)
    fam = _family(root.cls)
    likely = bool(fam.defaults.get("tie_word_embeddings", True)) if fam is not None else True
    known = tied is not None
    likely = tied if tied is not None else likely
    c, filled, family = _filled_count(root, fam, likely)
    shared: list[str] = []
    in_towers: list[Unknown] = []
    if family is None:
        c, filled, in_towers = _tower_count(root, c, likely)
        c, shared = _source_ties(root, c, likely)
    notes = [f"counted from the text of print(model) ({root.cls})", *c.notes, *filled]
    open_tie = bool(c.ties) and not known and c.tied_total != c.untied_total  # a guess between two totals
    if c.ties and not open_tie:
        notes.append(_tie_note(c, root.cls, fam, likely, known))
    unknown = _missing(root, family, c, in_towers)
    inexact = _inexact(tuple(shared), unknown, min(c.tied_total, c.untied_total) if open_tie else c.tree.count)
    if open_tie:  # never exact, and a lower bound only from the smaller (tied) total
        inexact = "; ".join(filter(None, (inexact, _open_tie(c, _default_said(root.cls, fam), likely))))
    if inexact:
        notes.append(inexact)
    inner = _backbone(root, fam)
    backbone = _filled_count(inner, fam, likely)[0].tree if inner is not None else c.tree
    model = Model(
        name=name or source,
        source=source,
        model_type=fam.model_type if fam is not None else "unknown",
        class_name=root.cls,
        tree=c.tree,
        backbone_class=inner.cls if inner is not None else root.cls,
        backbone=backbone,
        notes=tuple(notes),
        inexact=inexact,
    )
    return Printout(model, unknown, c.ties, c.tied_total, c.untied_total, likely, tuple(shared))


# --- files and standard input ------------------------------------------------------------

_LOOKS_LIKE = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_.]{0,199}\(")


def looks_like(head: str) -> bool:
    """Whether text starts as a printout does (``BloomForCausalLM(``), not JSON or binary."""
    return bool(_LOOKS_LIKE.match(head.lstrip("\ufeff")))


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParamcountError(f"not UTF-8 text (byte {e.start})", source=source) from None


def read_stdin(tied: bool | None = None) -> Model:
    data = sys.stdin.buffer.read(MAX_TEXT_CHARS + 1)
    if len(data) > MAX_TEXT_CHARS:
        raise ParamcountError(f"more than {MAX_TEXT_CHARS:,} bytes: too large for a printout", source="<stdin>")
    return from_text(_decode(data, "<stdin>"), "<stdin>", tied=tied).model


def read(source: str | Path, overrides: Any = None) -> Model | None:
    """A Model from ``-`` (standard input) or a printout file; None for anything else.
    ``overrides`` (``--set``) may settle the tie a text leaves open (:func:`tie_of`).

    A ``.txt`` file is taken as a printout (so its errors are a printout's) unless it holds
    JSON; other files only when their text starts like one.
    """
    if str(source) == "-":
        return read_stdin(tie_of(overrides, "<stdin>"))
    path = Path(source)
    if not path.is_file():
        return None
    src = str(path)
    try:
        with open_regular(path, src) as f:  # is_file() said so a moment ago: fstat says so of what is read
            head = f.read(4096)
            text = head.decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
            if text.startswith(("{", "[")) or (path.suffix.lower() != ".txt" and not looks_like(text)):
                return None
            data = head + f.read(MAX_TEXT_CHARS + 1 - len(head))
    except OSError as e:
        raise ParamcountError(f"cannot read: {e.__class__.__name__}: {e}", source=src) from None
    if len(data) > MAX_TEXT_CHARS:
        raise ParamcountError(f"more than {MAX_TEXT_CHARS:,} bytes: too large for a printout", source=src)
    return from_text(_decode(data, src), src, tied=tie_of(overrides, src)).model


def tie_of(overrides: Any, source: str) -> bool | None:
    """The tie ``--set tie_word_embeddings=true|false`` settles for a printout: the one config
    field a text takes (its shapes are fixed); any other is refused."""
    fields = dict(overrides or {})
    tied = fields.pop("tie_word_embeddings", None)
    if fields or not (tied is None or isinstance(tied, bool)):
        raise ParamcountError(
            "a print(model) text takes only --set tie_word_embeddings=true|false: its shapes are fixed",
            source=source,
            field="--set",
        )
    return tied
