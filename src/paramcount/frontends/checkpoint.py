"""A checkpoint counted from its headers: a .safetensors file, a sharded index, or a model folder.

Stored tensors split three ways: parameters (a packed one counts the values it holds),
quantisation bookkeeping, and buffers (causal masks, rotary ``inv_freq``, ``position_ids``),
which ``named_parameters()`` never yields. With a config.json beside the weights, names are
mapped onto the config's tree (components, ties, the class) and every disagreement between the
two is listed; without one the tree comes from the names alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import flat
from ..errors import ParamcountError
from ..flat import insert_tie
from ..ir import MAX_LISTED, Block, Leaf, Tie, leaf_count, leaves
from ..model import Model
from ..records import record, replace
from .config import from_config
from .configfile import read_json
from .diff import TORCH_DTYPES, Align, Difference, Item, align, compare, resolve
from .quant import Extra, Param, Split, classify, describe, quant_config
from .safetensors import Read, ShardSet, Stored, folder_sets, read_index, read_set, short

# Tensors a state dict holds that are not parameters (registered buffers of old checkpoints).
BUFFERS = [
    (re.compile(r"(^|\.)(attn|attention|self_attn|self_attention)\.(bias|masked_bias)$"), "attention mask buffer"),
    (re.compile(r"(^|\.)inv_freq$"), "rotary inv_freq buffer"),
    (re.compile(r"(^|\.)(cos|sin)_cached$"), "rotary cache buffer"),
    (re.compile(r"(^|\.)position_ids$"), "position_ids buffer"),
    (re.compile(r"(^|\.)token_type_ids$"), "token_type_ids buffer"),
    (re.compile(r"(^|\.)_float_tensor$"), "fairseq placeholder buffer"),
    (re.compile(r"(^|\.)(running_mean|running_var|num_batches_tracked)$"), "batch-norm statistics buffer"),
]
# Input embeddings a language-model head is commonly tied to.
_EMBEDDING = re.compile(r"(^|\.)(embed_tokens|wte|word_embeddings|embed_in|tok_embeddings|shared|token_embd)\.weight$")
_HEAD = re.compile(r"(^|\.)(lm_head|embed_out|output|cls|classifier|score|qa_outputs)(\.|$)")
SIDE_QUANT_FILES = ("quantize_config.json", "quant_config.json", "hf_quant_config.json")


def buffer_role(name: str) -> str | None:
    return next((role for rx, role in BUFFERS if rx.search(name)), None)


@dataclass(frozen=True)
class Checkpoint:
    """What the files hold, beside the model tree counted from them."""

    chosen: str  # the shard set read
    files: tuple[tuple[str, int | None], ...]  # (file, bytes; None where unknown)
    header_bytes: int | None
    params: tuple[Param, ...]
    bookkeeping: tuple[Extra, ...]
    buffers: tuple[Extra, ...]
    tied_copies: tuple[Extra, ...] = ()  # a tied tensor the files store again
    quantization: str | None = None
    against: str | None = None  # what the differences compare with
    differences: tuple[Difference, ...] = ()
    ignored: tuple[str, ...] = ()

    def stored(self) -> list[Stored]:
        return [p.stored for p in self.params] + [e.tensor for e in self.bookkeeping + self.buffers + self.tied_copies]

    @property
    def file_bytes(self) -> int | None:
        sizes = [size for _, size in self.files]
        return None if None in sizes else sum(sizes)

    @property
    def data_bytes(self) -> int:
        return sum(t.nbytes for t in self.stored())

    @property
    def stored_elements(self) -> int:
        return sum(t.count for t in self.stored())

    @property
    def parameters(self) -> int:
        return sum(p.count for p in self.params)

    def by_dtype(self) -> dict[str, tuple[int, int, int]]:
        """Stored dtype -> (tensors, elements, bytes) over every tensor in the files."""
        return _sums((t.dtype, t.count, t.nbytes) for t in self.stored())

    def by_storage(self) -> dict[str, tuple[int, int, int]]:
        """How parameters are stored ("BF16", "int4 GPTQ (I32)") -> (tensors, parameters, bytes)."""
        return _sums((p.storage, p.count, p.nbytes) for p in self.params)

    def bookkeeping_by_role(self) -> dict[str, tuple[int, int, int]]:
        return _sums((e.role, e.tensor.count, e.tensor.nbytes) for e in self.bookkeeping)


def _sums(rows) -> dict[str, tuple[int, int, int]]:
    out: dict[str, list[int]] = {}
    for key, count, nbytes in rows:
        acc = out.setdefault(key, [0, 0, 0])
        acc[0] += 1
        acc[1] += count
        acc[2] += nbytes
    return {k: (a, b, c) for k, (a, b, c) in out.items()}


@record(frozen=True)
class CheckpointModel(Model):
    """A Model counted from checkpoint headers, with what the files hold beside it."""

    checkpoint: Checkpoint | None = None
    expected_active: int | None = None  # the config's active count, when the files match it
    # The config's model of the class the files hold, where every stored name and shape is the
    # config's (dtypes may differ): explain, compute and compare read its tree, with symbols.
    family: Model | None = None
    unchecked: str | None = None  # why there is no ``family`` (no config, a disagreement, ...)

    @property
    def active_total(self) -> int:
        return super().active_total if self.expected_active is None else self.expected_active


# --- the config's side ------------------------------------------------------------------


@dataclass(frozen=True)
class _Expected:
    model: Model
    class_name: str
    leaves: tuple[Leaf, ...]
    is_backbone: bool
    checkpoint_names: bool = True  # published checkpoint names, or transformers' in-memory ones

    def items(self, dtype: str | None) -> list[Item]:
        return [Item(x.name, tuple(map(int, x.shape)), x.count, dtype) for x in self.leaves if not x.tied_to]

    def ties(self) -> dict[str, str]:
        return {x.name: x.tied_to for x in self.leaves if x.tied_to}

    def kinds(self) -> dict[str, str]:
        return {x.name: x.kind for x in self.leaves}


def _variants(model: Model) -> list[_Expected]:
    """The config's class and its backbone (a base model saved alone), each under the names
    published checkpoints use and under transformers' in-memory names (what it saves now).
    A variant that unrolls past ``MAX_LISTED`` tensors is not compared name by name."""
    out: list[_Expected] = []
    for cls, tree, is_backbone in ((model.class_name, model.tree, False), (model.backbone_class, model.backbone, True)):
        if is_backbone and cls == model.class_name:
            break
        for checkpoint in (True, False):
            if leaf_count(tree, checkpoint) > MAX_LISTED:
                continue
            found = tuple(leaves(tree, checkpoint=checkpoint))
            if not any(v.leaves == found for v in out):
                out.append(_Expected(model, cls, found, is_backbone, checkpoint))
    return out


def _expected_model(config: Mapping[str, Any], source: str, opts: Mapping[str, Any]) -> tuple[Model | None, str | None]:
    try:
        return from_config(config, source, **opts), None
    except ParamcountError as e:
        return None, f"{e}; counted from the checkpoint alone"


def _choose(variants: Sequence[_Expected], names: Sequence[str]) -> tuple[_Expected, Align]:
    """The variant and alignment that leave the fewest names unmatched on either side."""
    scored = []
    for i, v in enumerate(variants):
        known = {x.name for x in v.leaves}
        how, _ = align(known, names)
        matched = sum(resolve(how(n), known) in known for n in names)
        wanted = sum(1 for x in v.leaves if not x.tied_to)
        # names that match as they stand say which class saved the file (a base model saved
        # alone has no ``model.`` prefix); failing that, the fewest names left over
        as_is = how == Align() and 2 * matched >= len(names)
        scored.append((as_is, 2 * matched - wanted, -i, v, how))
    *_, v, how = max(scored, key=lambda s: s[:3])
    return v, how


def _renamed(split: Split, expected: Model, notes: list[str]) -> Split:
    """The stored names as transformers renames them on loading, where the family says how
    (``Family.renames``: pre-transformers-5 LLaVA and Qwen2-VL checkpoints) and that makes more
    of them the config's names."""
    from ..arch import family

    if expected.counted_by != "paramcount":
        return split
    rules = [(re.compile(a), b) for a, b in family(expected.model_type).renames]
    if not rules:
        return split
    known = {x.name for x in leaves(expected.tree)}

    def rename(name: str) -> str:
        for pattern, to in rules:
            name = pattern.sub(to, name, count=1)
        return name

    renamed = [replace(p, name=rename(p.name)) for p in split.params]
    if sum(p.name in known for p in renamed) <= sum(p.name in known for p in split.params):
        return split
    moved = [(a.name, b.name) for a, b in zip(split.params, renamed, strict=True) if a.name != b.name]
    said = list(dict.fromkeys(_changed_prefix(a, b) for a, b in moved))
    notes.append(
        f"{len(moved):,} stored names read as transformers renames them on loading: {', '.join(said[:4])}"
        + (" …" if len(said) > 4 else "")
    )
    return replace(split, params=renamed)


def _changed_prefix(old: str, new: str) -> str:
    """``language_model.model.* → model.language_model.*``: the parts before a common ending."""
    a, b = old.split("."), new.split(".")
    while len(a) > 1 and len(b) > 1 and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    return f"{'.'.join(a)}.* → {'.'.join(b)}.*" if a != old.split(".") else f"{old} → {new}"


# --- counting ------------------------------------------------------------------------------


def _split_buffers(params: Sequence[Param], known: set[str], how: Align) -> tuple[list[Param], list[Extra]]:
    kept, buffers = [], []
    for p in params:
        role = None if p.scheme or resolve(how(p.name), known) in known else buffer_role(p.name)
        if role:
            buffers.append(Extra(p.stored, role))
        else:
            kept.append(p)
    return kept, buffers


def _unpack_hidden(params: list[Param], expected: Mapping[str, Item], how: Align) -> list[Param]:
    """bitsandbytes 4-bit hides a weight's shape: take the config's where the counts agree."""
    out = []
    for p in params:
        x = expected.get(resolve(how(p.name), expected)) if p.shape is None else None
        if x is not None and x.count in (p.count, p.count - 1):
            p = replace(p, shape=x.shape, count=x.count)
        out.append(p)
    return out


def _back(how: Align, name: str) -> str:
    """A config name as the checkpoint spells it (the inverse of the alignment)."""
    if how.add and name.startswith(how.add):
        name = name[len(how.add) :]
    return how.strip + name


def _tree(params: Sequence[Param], kinds: Mapping[str, str], source: str) -> Block:
    names = {p.name for p in params}
    for name in names:  # ``a`` and ``a.b`` cannot both be parameters: no module is both
        i = name.find(".")
        while i != -1:
            if name[:i] in names:
                raise ParamcountError(f"{short(name)}: a tensor and a module share a name", source=source)
            i = name.find(".", i + 1)
    rows = [(p.name, p.shape if p.shape is not None else (p.count,), p.storage) for p in params]
    try:
        return flat.tree(rows, kind=lambda n: kinds.get(n) or flat.kind_of(n))
    except ValueError as e:  # a name nested past flat.MAX_PARTS
        raise ParamcountError(f"tensor names do not form a tree: {e}", source=source) from None


def _backbone(tree: Block, prefix: str | None) -> Block:
    """The base model inside the tree: the root child named ``prefix``, or by shape alone the
    one block holding most parameters when everything else at the root is a head."""
    blocks = [c for c in tree.children if isinstance(c, Block) and c.repeat is None]
    if prefix is not None:
        found = next((c for c in blocks if c.name == prefix), None)
        return replace(found, name="") if found else tree
    if len(blocks) == 1 and blocks[0].count * 2 >= tree.count:
        others = [c for c in tree.children if c is not blocks[0]]
        if all(_HEAD.search(c.name + ".") for c in others):
            return replace(blocks[0], name="")
    return tree


def _base_prefix(v: _Expected) -> str | None:
    """``model`` in ``model.layers…``: the root block of the class that is its backbone."""
    model = v.model
    if model.class_name == model.backbone_class:
        return None
    inner = [x.name for x in leaves(model.backbone, checkpoint=v.checkpoint_names)][:50]
    names = {x.name for x in v.leaves}
    for child in model.tree.children:
        if isinstance(child, Block) and inner and all(f"{child.name}.{n}" in names for n in inner):
            return child.name
    return None


@dataclass
class _Plan:
    params: list[Param]
    bookkeeping: list[Extra]
    buffers: list[Extra]
    notes: list[str]
    kinds: dict[str, str]
    ties: list[tuple[str, tuple[int, ...], str, str]]  # (name, shape, target, kind) to insert
    differences: list[Difference]
    tied_copies: list[Extra] = field(default_factory=list)


def _without_config(split_params: Sequence[Param], bookkeeping: list[Extra], notes: list[str]) -> _Plan:
    params, buffers = _split_buffers(split_params, set(), Align())
    heads = [p for p in params if _HEAD.search(p.name)]
    embeds = [p for p in params if _EMBEDDING.search(p.name)]
    if embeds and not heads:
        notes.append(
            f"no output head is stored: if this is a language model its head may be tied to {embeds[0].name} "
            "(a config.json beside the weights would say)"
        )
    return _Plan(params, bookkeeping, buffers, notes, {}, [], [])


def _with_config(
    split_params: Sequence[Param], bookkeeping: list[Extra], notes: list[str], v: _Expected, how: Align
) -> _Plan:
    config = v.model.config
    dtype = TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype") or ""))
    exp_items = {x.name: x for x in v.items(dtype)}
    ties = v.ties()
    known = set(exp_items) | set(ties)
    params, buffers = _split_buffers(split_params, known, how)
    params = _unpack_hidden(params, exp_items, how)
    mine = [Item(p.name, p.shape, p.count, p.stored.dtype, packed=p.scheme is not None) for p in params]
    diffs, _, _ = compare(list(exp_items.values()), mine, ties, {}, how)
    kinds = v.kinds()
    kinds = {p.name: kinds.get(resolve(how(p.name), kinds), "") for p in params}
    stored = {resolve(how(p.name), known): p.name for p in params}
    tie_nodes, copies = [], []
    for name, target in ties.items():
        leaf = next(x for x in v.leaves if x.name == name)
        if name in stored:
            notes.append(
                f"the checkpoint stores {stored[name]} although the config ties it to {target}; "
                "loading shares one tensor, so it is counted once"
            )
            copies += [Extra(p.stored, f"stored copy of tied {name}") for p in params if p.name == stored[name]]
            params = [p for p in params if p.name != stored[name]]
        if target in stored:
            tie_nodes.append((_back(how, name), tuple(map(int, leaf.shape)), stored[target], leaf.kind))
    return _Plan(params, bookkeeping, buffers, notes, kinds, tie_nodes, diffs, copies)


def count_read(
    read: Read,
    source: str,
    config: Mapping[str, Any] | None = None,
    config_source: str = "config.json",
    side_quant: Mapping[str, Any] | None = None,
    ignored: Sequence[str] = (),
    files: Sequence[tuple[str, int | None]] | None = None,
    header_bytes: int | None = None,
    opts: Mapping[str, Any] | None = None,
    where: str = "safetensors",
) -> CheckpointModel:
    """The model a shard set holds; ``config`` (its config.json) names ties, class and components."""
    qc = quant_config(config, side_quant)
    split = classify(read.tensors, qc)
    notes = [*read.notes, *split.notes]
    expected, why = _expected_model(config, config_source, opts or {}) if config else (None, None)
    if why:
        notes.append(why)
    bookkeeping = list(split.bookkeeping)
    if expected is not None:
        split = _renamed(split, expected, notes)
    variants = _variants(expected) if expected is not None else []
    if expected is not None and not variants:
        n = leaf_count(expected.tree)
        notes.append(
            f"{config_source} ({expected.class_name}) unrolls to {n:,} tensors, more than the {MAX_LISTED:,}"
            " compared name by name; counted from the checkpoint alone"
        )
    if not variants:
        plan, v = _without_config(split.params, bookkeeping, notes), None
    else:
        v, how = _choose(variants, [p.name for p in split.params])
        plan = _with_config(split.params, bookkeeping, notes, v, how)
    tree = _tree(plan.params, plan.kinds, source)
    for name, shape, target, kind in plan.ties:
        tree = insert_tie(tree, name.split("."), Tie(name.rsplit(".", 1)[-1], shape, target, kind))
    checkpoint = Checkpoint(
        chosen=read.shard_set.label,
        files=tuple(files if files is not None else ((h.file, h.size) for h in read.headers)),
        header_bytes=header_bytes if files is not None else read.header_bytes,
        params=tuple(plan.params),
        bookkeeping=tuple(plan.bookkeeping),
        buffers=tuple(plan.buffers),
        tied_copies=tuple(plan.tied_copies),
        quantization=describe(qc, split.schemes),
        against=f"{config_source} ({v.class_name})" if v else None,
        differences=tuple(plan.differences),
        ignored=tuple(ignored),
    )
    return _model(tree, checkpoint, source, config or {}, v, plan.notes, where)


def _model(
    tree: Block,
    ck: Checkpoint,
    source: str,
    config: Mapping[str, Any],
    v: _Expected | None,
    notes: list[str],
    where: str,
) -> CheckpointModel:
    if ck.buffers:
        notes.append(f"{len(ck.buffers)} stored buffer(s) are not parameters and are not counted (listed below)")
    if ck.differences:
        kinds = Counter(d.kind for d in ck.differences)
        said = ", ".join(f"{n} {k}" for k, n in kinds.items())
        notes.append(f"the checkpoint and {ck.against} disagree: {said} (listed below)")
    if v is None:
        prefix, cls, base_cls, mtype = None, "checkpoint", "backbone", str(config.get("model_type") or "unknown")
    else:
        prefix = None if v.is_backbone else _base_prefix(v)
        cls, base_cls, mtype = v.class_name, v.model.backbone_class, v.model.model_type
    active, backbone = None, _backbone(tree, prefix)
    fam, unchecked = _family(tree, ck, config, v)
    if fam is not None and not v.is_backbone:  # the files hold exactly what the config builds
        active, backbone = v.model.active_total, v.model.backbone
    return CheckpointModel(
        name=source,
        source=f"{where}: {ck.chosen}",
        model_type=mtype,
        class_name=cls,
        tree=tree,
        backbone_class=base_cls,
        backbone=backbone,
        config=config,
        notes=tuple(notes),
        checkpoint=ck,
        expected_active=active,
        family=fam,
        unchecked=unchecked,
    )


def _family(
    tree: Block, ck: Checkpoint, config: Mapping[str, Any], v: _Expected | None
) -> tuple[Model | None, str | None]:
    """The config's model of the class the files hold when every stored name and shape is the
    config's (a dtype may differ), else None and why."""
    if v is None:
        return None, "no config.json beside the weights" if not config else "config.json gives no tree to check against"
    if v.model.counted_by != "paramcount":
        return None, f"{v.model.model_type!r} has no native family (counted by {v.model.counted_by})"
    wrong = [d for d in ck.differences if d.kind != "dtype"]
    model = v.model if not v.is_backbone else _backbone_model(v.model)
    if wrong or tree.count != model.total:
        said = ", ".join(f"{n} {k}" for k, n in Counter(d.kind for d in wrong).items()) or "the totals differ"
        return None, f"the stored tensors and {ck.against} disagree ({said})"
    return model, None


def _backbone_model(model: Model) -> Model:
    """A config's backbone as a model of its own: what a base model saved alone holds."""
    return replace(model, class_name=model.backbone_class, tree=model.backbone)


# --- files and folders -------------------------------------------------------------------


def side_quant(folder: Path) -> dict[str, Any] | None:
    for name in SIDE_QUANT_FILES:
        path = folder / name
        if path.is_file():
            data = read_json(path)
            inner = data.get("quantization")
            return dict(inner) if name == "hf_quant_config.json" and isinstance(inner, dict) else data
    return None


def _config(folder: Path) -> tuple[dict[str, Any] | None, str]:
    path = folder / "config.json"
    return (read_json(path) if path.is_file() else None), str(path)


def load_path(
    path: str | Path,
    model_class: str | None = None,
    num_labels: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Model | None:
    """Count a .safetensors file, an index, or a folder of weights; None if ``path`` is none of these.

    A folder with config.json and only pickled weights (never unpickled) is counted from the
    config, with a note saying the weights were not read.
    """
    p = Path(path)
    opts = {"model_class": model_class, "num_labels": num_labels, "overrides": overrides}
    if p.is_dir():
        return _folder(p, opts)
    if p.name.endswith(".safetensors.index.json"):
        chosen = read_index(p)
    elif p.name.endswith(".safetensors"):
        chosen = ShardSet(p.name, (p,))
    else:
        return None
    return count_set(chosen, str(p), p.parent, (), opts)


def count_set(
    chosen: ShardSet, source: str, folder: Path, ignored: Sequence[str], opts, where: str = "safetensors"
) -> CheckpointModel:
    read = read_set(chosen, source)
    config, config_source = _config(folder)
    return count_read(read, source, config, config_source, side_quant(folder), ignored, opts=opts, where=where)


def _folder(folder: Path, opts: Mapping[str, Any]) -> Model | None:
    sets, others = folder_sets(folder)
    config, config_source = _config(folder)
    if not sets:
        if config is None or not others:
            return None
        model = from_config(config, config_source, name=str(folder), **opts)
        note = f"weights not read: {'; '.join(others)}; counted from config.json alone"
        return replace(model, notes=(*model.notes, note))
    chosen = sets[0]
    ignored = [f"{s.label} (another safetensors set)" for s in sets[1:]] + others
    return count_set(chosen, str(folder), folder, ignored, opts)
