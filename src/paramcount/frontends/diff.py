"""Two lists of named tensors compared: missing, extra, different shape, different dtype, tie.

Names are aligned first, the way transformers itself loads a checkpoint into a class: a base
model saved alone lacks the ``model.`` prefix its ``ForCausalLM`` class adds, and old files call
a LayerNorm's weight ``gamma`` and its bias ``beta``. Quantised tensors are compared by count
(their stored layout is not the module's), plain ones by shape and dtype.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# config.json's torch_dtype / dtype -> the safetensors name of that dtype
TORCH_DTYPES = {
    "float32": "F32",
    "float": "F32",
    "float16": "F16",
    "half": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
}

_LEGACY = {"gamma": "weight", "beta": "bias"}  # pre-2019 LayerNorm names transformers still renames


@dataclass(frozen=True)
class Item:
    """A tensor to compare: logical shape (None when packing hides it), count and stored dtype."""

    name: str
    shape: tuple[int, ...] | None
    count: int
    dtype: str | None = None
    packed: bool = False


@dataclass(frozen=True)
class Difference:
    kind: str  # "missing" (only in A), "extra" (only in B), "shape", "dtype", "tie"
    name: str  # as A names it (B's name for extras)
    a: str = ""
    b: str = ""
    why: str = ""  # a conversion's reason (paramcount.gguf_diff)


@dataclass(frozen=True)
class Align:
    """How B's names become A's: strip a prefix, then add one."""

    strip: str = ""
    add: str = ""

    def __call__(self, name: str) -> str:
        if self.strip and name.startswith(self.strip):
            name = name[len(self.strip) :]
        return self.add + name

    def describe(self) -> str | None:
        if self.strip and self.add:
            return f"names compared with prefix {self.strip!r} read as {self.add!r}"
        if self.strip:
            return f"names compared without the prefix {self.strip!r}"
        if self.add:
            return f"names compared with the prefix {self.add!r} added"
        return None


def _prefixes(names: Iterable[str]) -> list[str]:
    """First segments that most names share (base-model prefixes such as ``model.``)."""
    firsts = Counter(n.split(".", 1)[0] + "." for n in names if "." in n)
    total = sum(firsts.values()) or 1
    return [p for p, c in firsts.most_common(4) if c * 4 >= total]


def resolve(name: str, target: Mapping[str, object] | set[str]) -> str:
    """``name`` as the target names it, allowing the legacy gamma/beta spelling."""
    if name in target:
        return name
    head, _, last = name.rpartition(".")
    renamed = f"{head}.{_LEGACY[last]}" if head and last in _LEGACY else name
    return renamed if renamed in target else name


def align(a: Iterable[str], b: Iterable[str]) -> tuple[Align, int]:
    """The prefix change that makes most of B's names A's, and how many (of a sample) then match."""
    a_set, b_list = set(a), list(b)
    candidates = [Align()]
    candidates += [Align(strip=p) for p in _prefixes(b_list)]
    candidates += [Align(add=p) for p in _prefixes(a_set)]
    candidates += [Align(strip=p, add=q) for p in _prefixes(b_list) for q in _prefixes(a_set) if p != q]
    sample = b_list[:: max(1, len(b_list) // 2000)]  # prefixes show in any few thousand names
    scored = [(sum(resolve(f(n), a_set) in a_set for n in sample), -i, f) for i, f in enumerate(candidates)]
    best, _, f = max(scored, key=lambda s: (s[0], s[1]))
    return f, best


def shape_text(shape: Sequence[int] | None, count: int) -> str:
    if shape is None:
        return f"{count:,} values (packed)"
    return "(" + ", ".join(f"{int(d):,}" for d in shape) + ")"


def _same_shape(x: Item, y: Item) -> bool:
    if x.packed or y.packed:  # a packing stores [in, out] or a flat column: counts must agree
        if x.shape is None or y.shape is None:
            return x.count == y.count
        return sorted(int(d) for d in x.shape) == sorted(int(d) for d in y.shape)
    return x.shape is not None and y.shape is not None and tuple(map(int, x.shape)) == tuple(map(int, y.shape))


def compare(
    a: Sequence[Item],
    b: Sequence[Item],
    a_ties: Mapping[str, str] | None = None,
    b_ties: Mapping[str, str] | None = None,
    how: Align | None = None,
) -> tuple[list[Difference], Align, int]:
    """Every difference between A and B, after aligning B's names to A's.

    ``*_ties`` map a tied name to its target; a tie on one side that the other side stores as
    a tensor is a difference, one the other side simply lacks is not (that is how a tied
    checkpoint is saved). Returns the differences, the alignment and how many names matched.
    """
    a_ties, b_ties = dict(a_ties or {}), dict(b_ties or {})
    by_a = {x.name: x for x in a}
    names_a = set(by_a) | set(a_ties)
    if how is None:
        how, _ = align(names_a, [y.name for y in b] + list(b_ties))
    out: list[Difference] = []
    matched: set[str] = set()
    for y in b:
        name = resolve(how(y.name), names_a)
        x = by_a.get(name)
        if x is None:
            out.append(
                Difference("tie", name, f"tied to {a_ties[name]}", "stored")
                if name in a_ties
                else Difference("extra", y.name, "", _describe(y))
            )
            continue
        matched.add(name)
        if not _same_shape(x, y):
            out.append(Difference("shape", name, shape_text(x.shape, x.count), shape_text(y.shape, y.count)))
        elif x.dtype and y.dtype and not (x.packed or y.packed) and x.dtype != y.dtype:
            out.append(Difference("dtype", name, x.dtype, y.dtype))
    b_tied = {resolve(how(n), names_a): t for n, t in b_ties.items()}
    for x in a:
        if x.name in matched:
            continue
        if x.name in b_tied:
            out.append(Difference("tie", x.name, "stored", f"tied to {b_tied[x.name]}"))
        else:
            out.append(Difference("missing", x.name, _describe(x), ""))
    return out, how, len(matched)


def _describe(x: Item) -> str:
    return shape_text(x.shape, x.count) + (f" {x.dtype}" if x.dtype else "")


INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)")


def collapse(names: Iterable[str]) -> list[tuple[str, int]]:
    """Names with their layer and expert numbers folded: (``layers.*.attn.bias``, 24); a name
    alone in its group keeps its numbers."""
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(INDEX.sub("*", n), []).append(n)
    return [(members[0] if len(members) == 1 else p, len(members)) for p, members in groups.items()]


def counts_by_kind(diffs: Iterable[Difference]) -> dict[str, int]:
    return dict(Counter(d.kind for d in diffs))


@dataclass(frozen=True)
class ModelDiff:
    """``paramcount diff A B``: every tensor-level difference between two counted sources."""

    a: str
    b: str
    a_total: int
    b_total: int
    matched: int
    differences: tuple[Difference, ...]
    alignment: str | None = None
    # across formats (a GGUF file and its checkpoint): what the conversion changed on purpose
    # (merged, split, permuted, transposed, padded, dropped, added), not differences
    conversions: tuple[Difference, ...] = ()


def items_of(model) -> tuple[list[Item], dict[str, str]]:
    """A counted model's tensors for comparing: stored ones for a checkpoint (packed ones
    marked), else the tree's under checkpoint names with the config's dtype."""
    ties = {name: target for name, target, _ in model.ties()}
    if getattr(model, "checkpoint", None) is not None:  # a checkpoint's stored tensors
        params = model.checkpoint.params
        return [Item(p.name, p.shape, p.count, p.stored.dtype, p.scheme is not None) for p in params], ties
    config = model.config or {}
    dtype = TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype") or ""))
    items = [
        Item(x.name, tuple(int(d) for d in x.shape), x.count, x.dtype or dtype)
        for x in model.tensors(checkpoint=True, instead="; paramcount compare A B compares them by component")
        if not x.tied_to
    ]
    return items, ties


def diff_models(a, b) -> ModelDiff:
    """Compare two Models (any source) tensor by tensor."""
    a_items, a_ties = items_of(a)
    b_items, b_ties = items_of(b)
    diffs, how, matched = compare(a_items, b_items, a_ties, b_ties)
    return ModelDiff(a.name, b.name, a.total, b.total, matched, tuple(diffs), how.describe())
