"""``paramcount diff`` between a GGUF file and a transformers source (config, checkpoint, catalog).

The two name their tensors differently: llama.cpp's converter (``convert_hf_to_gguf.py``) maps
each checkpoint name through gguf-py's tensor map (:mod:`paramcount.gguf.names`). The
checkpoint's tensors are mapped as the converter maps them, then compared with the file's. What
the conversion changes on purpose is reported apart from real differences
(``ModelDiff.conversions``), each kind read in the converter (llama-cpp-python 0.3.36's
``conversion/*.py``):

* merged: per-expert tensors stacked into one ``ffn_*_exps`` (``E × rows × cols``), and parts
  the converter concatenates when asked (``--fuse-qkv``: q, k and v into ``attn_qkv``; gate and
  up experts into ``ffn_gate_up_exps``);
* split: MLA's ``kv_b_proj`` into ``attn_k_b`` and ``attn_v_b`` (``DeepseekV2Model.modify_tensors``),
  a checkpoint's fused qkv into ``attn_q``, ``attn_k`` and ``attn_v`` (``Ernie4_5Model``);
* permuted: q/k rows reordered for llama.cpp's rope (``LlamaModel.permute``, same shape);
* transposed: stored the other way round (GPT-2's Conv1D weights);
* padded: the token embedding or head with other rows than the checkpoint's;
* dropped: what the file leaves out (rotary ``inv_freq``, layers past ``block_count`` such as
  multi-token-prediction layers, the vision tower that goes to the mmproj file);
* added: what the converter computes (``rope_freqs``, rope factors).

A GGUF's shapes are read in PyTorch order (the reverse of its ``ne``), so the converter's shapes
compare with the checkpoint's as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .frontends.diff import Difference, Item, ModelDiff, diff_models, items_of, shape_text
from .gguf.meta import is_gguf, metadata
from .gguf.names import NameMap, name_map

# conversion/*.py: LlamaModel.undo_permute is True for these model_arch values (Llama, Arcee,
# SmolLM3, Granite and GraniteMoe, GraniteHybrid, Ministral3); Apertus, Llama 4, Mistral's own
# format and GraniteSwitch set it False.
PERMUTED = frozenset({"llama", "arcee", "smollm3", "granite", "granitemoe", "granitehybrid", "mistral3"})
# conversion/gpt2.py GPT2Model.modify_tensors: Conv1D weights transposed (a square c_proj keeps its shape)
TRANSPOSED = {"gpt2": (".c_attn.weight", ".c_proj.weight", ".c_fc.weight")}
_EXPERT = re.compile(r"^(?P<head>.*\.experts)\.(?P<e>\d+)\.(?P<rest>.+)$")
_BLOCK = re.compile(r"^blk\.(\d+)\.")
# File tensors no checkpoint parameter maps to, that the converter writes on purpose
_ADDED = (
    (re.compile(r"^(rope_freqs|rope_factors_long|rope_factors_short)\.weight$"), "computed by the converter"),
    (
        re.compile(r"^blk\.\d+\.exp_probs_b\.bias$"),
        "the router's e_score_correction_bias: a buffer in transformers, not a parameter",
    ),
    (
        re.compile(r"^blk\.\d+\.layer_output_scale\.weight$"),
        "Gemma 4's layer_scalar: a buffer in transformers, not a parameter (conversion/gemma.py filter_tensors)",
    ),
)
# Checkpoint tensors the converter writes elsewhere or never: (pattern, why)
_DROPPED = (
    (re.compile(r"(^|\.)inv_freq$|rotary_emb\."), "rotary inv_freq: llama.cpp computes the rotation itself"),
    (
        re.compile(
            r"^(model\.)?(vision_tower|visual|vision_model|multi_modal_projector|mm_projector|connector|audio_tower|embed_vision|embed_audio)\."
        ),
        "vision/audio tower: convert_hf_to_gguf.py --mmproj writes it to a separate file",
    ),
)


@dataclass(frozen=True)
class _Mapped:
    """A tensor the converter writes from checkpoint tensors: GGUF name, expected shape, sources."""

    gguf: str
    shape: tuple[int, ...]
    sources: tuple[str, ...]
    kind: str | None = None  # a conversion: "merged", "split"
    said: str = ""


def diff_any(a, b) -> ModelDiff:
    """``paramcount diff A B``: across formats when one side is a GGUF file and the other is not."""
    if is_gguf(a) == is_gguf(b):
        return diff_models(a, b)
    return diff_across(a, b)


def diff_across(a, b) -> ModelDiff:
    """A GGUF file against a transformers source (either order), through the converter's names."""
    g, h = (a, b) if is_gguf(a) else (b, a)
    meta = metadata(g)
    names = name_map(meta.arch)
    if not names.known:  # an architecture gguf-py never named: no map to read names through
        plain = diff_models(a, b)
        return replace(plain, alignment=f"{meta.arch} is not an architecture gguf-py names: names compared as they are")
    file = {x.name: x for x in items_of(g)[0]}
    h_items, h_ties = items_of(h)
    heads = meta.get("attention.head_count")
    mapped, unmapped = _convert(h_items, names, file, heads if isinstance(heads, int) else 0)
    out = _Result(g is a, names.arch, _layers(h), meta.get("block_count"), "token_embd.weight" in file)
    mapped = _fused(mapped, file)
    by_name = {x.name: x for x in h_items}
    for name in unmapped:
        out.absent(name, by_name[name], None)
    for m in mapped:
        out.compare(m, file.get(m.gguf))
    for x, role in _buffers(h):
        out.buffer(x, role, names.gguf(converter_name(x.name)), file)
    for name, x in file.items():
        if name not in out.seen:
            out.leftover(x, h_ties)
    note = f"names mapped as llama.cpp's converter maps them for {meta.arch} (gguf-py's tensor map)"
    matched = len(out.matched)
    return ModelDiff(a.name, b.name, a.total, b.total, matched, tuple(out.diffs), note, tuple(out.conversions))


# ModelBase.filter_tensors (conversion/base.py) renames before mapping: an image+text model's
# language model loses its "language_model." (and SmolVLM's its "text_model.", LlamaModel.modify_tensors);
# a router's score-correction bias becomes a bias
_RENAMES = (("language_model.", ""), ("text_model.", ""), ("e_score_correction_bias", "e_score_correction.bias"))


def converter_name(name: str) -> str:
    """The name the converter hands gguf-py's map for checkpoint tensor ``name``."""
    for old, new in _RENAMES:
        name = name.replace(old, new)
    return name


def _convert(items: Sequence[Item], names: NameMap, file: dict, heads: int) -> tuple[list[_Mapped], list[str]]:
    """The converter's tensors from the checkpoint's (in order), and the names it does not map."""
    mapped: list[_Mapped] = []
    unmapped: list[str] = []
    experts: dict[str, list[Item]] = {}
    for x in items:
        name = converter_name(x.name)
        m = _EXPERT.match(name)
        if m and names.gguf(f"{m['head']}.{m['rest']}"):
            experts.setdefault(f"{m['head']}.{m['rest']}", []).append(x)
            continue
        gguf = names.gguf(name)
        split = _mla_split(x, name, gguf, names, file, heads) if gguf is None or gguf not in file else None
        if split:
            mapped += split
        elif gguf is None:
            unmapped.append(x.name)
        else:
            mapped.append(_Mapped(gguf, _shape(x), (x.name,)))
    for key, group in experts.items():
        mapped.append(_stacked(key, group, names))
    return mapped, unmapped


# Tensors the converter concatenates into one when asked (ModelBase.modify_tensors in
# conversion/base.py: --fuse-qkv cats q, k and v rows; fused gate and up experts cat along the rows
# of each expert), as (the file's tensor, its parts, the axis they are concatenated on)
FUSED = (("attn_qkv", ("attn_q", "attn_k", "attn_v"), 0), ("ffn_gate_up_exps", ("ffn_gate_exps", "ffn_up_exps"), 1))


def _fused(mapped: list[_Mapped], file: dict) -> list[_Mapped]:
    """Parts the file holds concatenated (its q, k and v as one attn_qkv) as one merged tensor."""
    by_name = {m.gguf: m for m in mapped}
    used: set[str] = set()
    out: list[_Mapped] = []
    for m in mapped:
        head, _, stem = m.gguf.rpartition(".")[0].rpartition(".")
        suffix = m.gguf[m.gguf.rindex(".") :]
        for whole, parts, axis in FUSED:
            names = [f"{head}.{p}{suffix}" if head else f"{p}{suffix}" for p in parts]
            fused = f"{head}.{whole}{suffix}" if head else f"{whole}{suffix}"
            if stem == parts[0] and fused in file and all(n in by_name and n not in file for n in names):
                out.append(_concatenated(fused, [by_name[n] for n in names], axis))
                used.update(names)
            elif stem == whole and m.gguf not in file and all(n in file for n in names):
                out += _parts(m, [file[n] for n in names], axis)  # a checkpoint's fused qkv, split
                used.add(m.gguf)
    return out + [m for m in mapped if m.gguf not in used]


def _parts(m: _Mapped, parts: list[Item], axis: int) -> list[_Mapped]:
    """A fused checkpoint tensor the file holds in parts (Ernie4_5Model splits a fused qkv): each
    part expected as the file has it, where the parts' rows add up to the checkpoint's."""
    shapes = [tuple(int(d) for d in p.shape) if p.shape is not None else (p.count,) for p in parts]
    rest = {s[:axis] + s[axis + 1 :] for s in shapes}
    whole = m.shape
    fits = len(rest) == 1 and len(whole) > axis and rest == {whole[:axis] + whole[axis + 1 :]}
    if not fits or sum(s[axis] for s in shapes) != whole[axis]:
        return [m]
    said = f"split into {len(parts)} along dimension {axis}"
    return [_Mapped(p.name, s, m.sources, "split", said) for p, s in zip(parts, shapes, strict=True)]


def _concatenated(name: str, parts: list[_Mapped], axis: int) -> _Mapped:
    shapes = [p.shape for p in parts]
    rest = {s[:axis] + s[axis + 1 :] for s in shapes}
    if len(rest) != 1 or any(len(s) <= axis for s in shapes):
        shape: tuple[int, ...] = (sum(_count(s) for s in shapes),)
    else:
        first = shapes[0]
        shape = (*first[:axis], sum(s[axis] for s in shapes), *first[axis + 1 :])
    sources = tuple(src for p in parts for src in p.sources)
    stems = [n.gguf.rsplit(".", 2)[-2] for n in parts]
    said = f"{', '.join(stems[:-1])} and {stems[-1]} concatenated (convert_hf_to_gguf.py fuses them)"
    return _Mapped(name, shape, sources, "merged", said)


def _shape(x: Item) -> tuple[int, ...]:
    return tuple(int(d) for d in x.shape) if x.shape is not None else (x.count,)


def _stacked(key: str, group: list[Item], names: NameMap) -> _Mapped:
    """``experts.{e}.w1.weight`` × E → one (E, rows, cols) tensor (LlamaModel, Qwen2MoeModel, …)."""
    shapes = {_shape(x) for x in group}
    shape = (len(group), *next(iter(shapes))) if len(shapes) == 1 else (sum(x.count for x in group),)
    said = f"{len(group)} experts × {shape_text(shape[1:], 0)} stacked"
    return _Mapped(str(names.gguf(key)), shape, tuple(x.name for x in group), "merged", said)


def _mla_split(x: Item, name: str, gguf: str | None, names: NameMap, file: dict, heads: int) -> list[_Mapped] | None:
    """MLA's kv_b_proj (H·(nope + v), rank) as DeepseekV2Model.modify_tensors splits it:
    ``attn_k_b`` (H, rank, nope), transposed per head, and ``attn_v_b`` (H, v, rank)."""
    if not name.endswith("kv_b_proj.weight") or x.shape is None or len(x.shape) != 2 or heads <= 0:
        return None
    k = names.gguf(name.replace("kv_b_proj", "k_b_proj"))
    v = names.gguf(name.replace("kv_b_proj", "v_b_proj"))
    if k not in file or v not in file or file[k].shape is None or len(file[k].shape) != 3:
        return None
    rows, rank = (int(d) for d in x.shape)
    nope = int(file[k].shape[2])
    per_head = rows // heads
    if rows % heads or per_head <= nope:
        return None
    said = f"split per head from kv_b_proj ({heads} heads × (nope {nope} + v {per_head - nope}), rank {rank})"
    return [
        _Mapped(str(k), (heads, rank, nope), (x.name,), "split", said),
        _Mapped(str(v), (heads, per_head - nope, rank), (x.name,), "split", said),
    ]


def _buffers(model) -> list[tuple[Item, str]]:
    """A checkpoint's stored tensors that are not parameters (rotary inv_freq, router biases)."""
    ck = getattr(model, "checkpoint", None)
    return [(Item(e.tensor.name, e.tensor.shape, e.tensor.count), e.role) for e in getattr(ck, "buffers", ())]


def _layers(model) -> int | None:
    """The decoder layers transformers builds: a checkpoint's blocks past them are MTP layers."""
    config = dict(model.config or {})
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    n = text.get("num_hidden_layers", config.get("num_hidden_layers"))
    return n if isinstance(n, int) and not isinstance(n, bool) else None


class _Result:
    """Differences and conversions gathered in order, with names and sides as A and B read."""

    def __init__(self, gguf_is_a: bool, arch: str, layers: int | None, blocks: Any, has_embd: bool):
        self.g_first, self.arch, self.layers, self.has_embd = gguf_is_a, arch, layers, has_embd
        self.blocks = blocks if isinstance(blocks, int) and not isinstance(blocks, bool) else None
        self.diffs: list[Difference] = []
        self.conversions: list[Difference] = []
        self.seen: set[str] = set()
        self.matched: set[str] = set()  # checkpoint tensors the file holds (a split one once)

    def _pair(self, kind: str, g_name: str, g_text: str, h_name: str, h_text: str, why: str = "") -> Difference:
        # named as A names it; a tensor only one side has (dropped, added) by that side's name
        if self.g_first:
            return Difference(kind, g_name or h_name, g_text, h_text, why)
        return Difference(kind, h_name or g_name, h_text, g_text, why)

    def _missing(self, h_name: str, text: str) -> Difference:
        kind = "extra" if self.g_first else "missing"
        return Difference(kind, h_name, "" if self.g_first else text, text if self.g_first else "")

    def absent(self, h_name: str, x: Item, gguf: str | None) -> None:
        """A checkpoint tensor the file does not hold: dropped on purpose, a tie, or a difference."""
        why = _dropped(h_name, gguf, self.blocks, self.layers)
        text = _describe(x)
        if why:
            self.conversions.append(self._pair("dropped", gguf or "", "", h_name, text, why))
        elif gguf == "output.weight" and self.has_embd:  # llama.cpp then uses token_embd as the head
            self.diffs.append(self._pair("tie", "output.weight", "tied to token_embd.weight", h_name, "stored"))
        else:
            self.diffs.append(self._missing(h_name, text))

    def buffer(self, x: Item, role: str, gguf: str | None, file: dict) -> None:
        """A stored buffer: written by the converter (ModelBase.filter_tensors' renames) or dropped."""
        if gguf in file and gguf not in self.seen:
            self.seen.add(gguf)
            said = f"the checkpoint's {role}, not a parameter: the file holds it"
            self.conversions.append(self._pair("added", gguf, _describe(file[gguf]), x.name, _describe(x), said))
            return
        why = _dropped(x.name, gguf, self.blocks, self.layers) or f"the checkpoint's {role}, not a parameter"
        self.conversions.append(self._pair("dropped", "", "", x.name, _describe(x), why))

    def compare(self, m: _Mapped, y: Item | None) -> None:
        h_name = m.sources[0] if len(m.sources) == 1 else _pattern(m.sources)
        if y is None:
            self.absent(h_name, Item(h_name, m.shape, _count(m.shape)), m.gguf)
            return
        self.seen.add(m.gguf)
        g_text, h_text = shape_text(y.shape, y.count), shape_text(m.shape, _count(m.shape))
        got = tuple(int(d) for d in y.shape) if y.shape is not None else (y.count,)
        kind, said = _shape_kind(m, got, self.arch)
        if kind == "shape":
            self.diffs.append(self._pair("shape", m.gguf, g_text, h_name, h_text))
            return
        self.matched.update(m.sources)
        if kind:
            self.conversions.append(self._pair(kind, m.gguf, g_text, h_name, h_text, said))

    def leftover(self, y: Item, h_ties: dict) -> None:
        """A file tensor no checkpoint tensor maps to: computed by the converter, or a difference."""
        text = _describe(y)
        why = next((why for rx, why in _ADDED if rx.match(y.name)), None)
        if why:
            self.conversions.append(self._pair("added", y.name, text, "", "", why))
        elif y.name == "output.weight" and any(n.endswith("lm_head.weight") for n in h_ties):
            self.diffs.append(self._pair("tie", y.name, "stored", "lm_head.weight", "tied to the input embeddings"))
        else:
            kind = "missing" if self.g_first else "extra"
            self.diffs.append(Difference(kind, y.name, text if self.g_first else "", "" if self.g_first else text))


def _shape_kind(m: _Mapped, got: tuple[int, ...], arch: str) -> tuple[str | None, str]:
    """How the file's shape relates to the converter's: None (as is), a conversion, or "shape"."""
    want = m.shape
    if got == want:
        if m.kind:
            return m.kind, m.said
        stem = m.gguf.rsplit(".", 2)[-2] if m.gguf.count(".") >= 2 else m.gguf
        if arch in PERMUTED and stem in ("attn_q", "attn_k"):
            return "permuted", "rows reordered for llama.cpp's rope (LlamaModel.permute)"
        if m.sources[0].endswith(TRANSPOSED.get(arch, ())):
            return "transposed", "Conv1D weight stored as a Linear's (GPT2Model.modify_tensors)"
        return None, ""
    if len(got) == len(want) == 2 and got == want[::-1]:
        return "transposed", "stored transposed"
    if m.gguf in ("token_embd.weight", "output.weight") and len(got) == len(want) and got[1:] == want[1:]:
        return "padded", f"{got[0]:,} rows in the file, {want[0]:,} in the checkpoint"
    return "shape", ""


def _dropped(h_name: str, gguf: str | None, blocks: int | None, layers: int | None) -> str | None:
    for rx, why in _DROPPED:
        if rx.search(h_name):
            return why
    m = _BLOCK.match(gguf or "")
    if m and blocks is not None and layers is not None and int(m.group(1)) >= max(blocks, layers):
        return (
            f"layer {m.group(1)} is past the config's {layers} decoder layers: a multi-token-prediction"
            " layer, which the converter leaves out"
        )
    return None


def _pattern(names: Sequence[str]) -> str:
    m = _EXPERT.match(names[0])
    return f"{m['head']}.*.{m['rest']}" if m else names[0]


def _count(shape: Sequence[int]) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _describe(x: Item) -> str:
    return shape_text(x.shape, x.count) + (f" {x.dtype}" if x.dtype else "")
