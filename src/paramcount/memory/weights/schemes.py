"""Weight memory by precision and quantisation scheme, exact to the byte.

Every figure is tensors × their storage as the runtime holds it, from integer tables
(:mod:`paramcount.dtypes`), never rounded bits per weight. Repeated layers are counted once
and multiplied; a tied tensor is stored once. The schemes (``SCHEMES``):

* ``fp32``, ``fp16``, ``bf16``, ``fp8`` (E4M3), ``fp8_e5m2``, ``int8``, ``int4``: every parameter
  in that type, nothing else (int4 packs two per byte with no scales: exactly half a byte).
  ``fp16`` keeps the modules transformers' ``from_pretrained`` keeps in fp32 (T5's ``wo``).
* ``nf4``, ``fp4``: bitsandbytes ``Linear4bit`` as transformers 5 loads it with
  ``BitsAndBytesConfig(load_in_4bit=True)``: per linear layer, n/2 bytes of packed values
  (rounded up), an fp32 absmax per 64 values and a 16-value fp32 quant map; with double
  quantisation the absmax is one byte each, plus an fp32 absmax per 256 blocks, a 256-value
  fp32 map and an fp32 offset. Only ``nn.Linear``/``Conv1D`` weights are quantised: the fused
  3-D MoE expert tensors of transformers 5 are not linear layers and stay bf16.
* ``bnb-int8``: bitsandbytes LLM.int8 (``load_in_8bit=True``): int8 weights and an fp32 scale
  per output row (``SCB``).
* ``gptq-int4``, ``gptq-int8``: the GPTQ checkpoint layout (AutoGPTQ / GPTQModel / transformers):
  ``qweight`` int32 [in·bits/32, out], ``qzeros`` int32 [⌈in/g⌉, out·bits/32], ``scales`` fp16
  [⌈in/g⌉, out], ``g_idx`` int32 [in]; group g = 128 unless ``group_size`` says (-1: one
  group per row). ``awq-int4``: AutoAWQ GEMM: ``qweight`` int32 [in, out/8], ``qzeros`` int32
  [in/g, out/8], ``scales`` fp16 [in/g, out]. Only linear layers inside the decoder layers
  (experts one by one, as the checkpoints store them), not routers; the rest fp16.
* llama.cpp file types (``q4_k_m``, ``q4_0``, ``q8_0``, ``q2_k``, ``q3_k_m``, ``iq4_xs``, …), each
  the mix ``llama-quantize`` writes (``pure=True``: every tensor in the one type), and GGUF
  types that are no file type (``q4_k``, ``q5_k``): every tensor in that type. See
  :mod:`paramcount.gguf.types` and :mod:`paramcount.gguf.mix`.
* ``stored``: a checkpoint's weights exactly as its files store them (a GGUF file's types, a
  safetensors checkpoint's dtypes, packings and quantisation bookkeeping): see
  :mod:`paramcount.memory.weights.stored`. Only for models read from weight files.

Bytes are those of the tensors in memory. A saved bitsandbytes state dict also holds a small
JSON blob per 4-bit layer (``quant_state.bitsandbytes__nf4``, whose length depends on the
data) and a one-byte ``weight_format`` per 8-bit layer, and leaves out the 4-byte offset,
which lives inside that blob.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...errors import ParamcountError
from ...gguf import layout as gguf_layout
from ...gguf import mix as qm
from ...gguf import types as gg
from ...gguf.meta import is_gguf, metadata
from ...ir import KINDS
from ...records import replace
from ...slots import Slot, slots
from .base import FP32_MODULES, GROUP, KEEP_WORDS, Row, Scheme, Weights, assumption, numel, scheme
from .layouts import Part, awq, bnb4, gptq, part


@dataclass(frozen=True)
class _Plan:
    model_type: str
    scheme: Scheme
    group: int
    double_quant: bool
    fp32: frozenset[int]  # slot orders kept in fp32 (transformers)
    skip: frozenset[int]  # slot orders bitsandbytes never converts (non-strict fp32 modules)
    kept: frozenset[int]  # slot orders kept by the keep items
    kept_last: frozenset[int] = frozenset()  # slot orders whose last layer's copy is kept
    mix: tuple = ()  # GGUF mix: (roles, {(layer, order): rank in its role group}, {group: count})
    mmproj: str = ""  # an image+text composite's mix: the mmproj file's output type
    gguf: bool = False  # a GGUF file: llama.cpp's own tensor names decide what is quantised
    projector: tuple[tuple[int, str], ...] = ()  # a GGUF mmproj file's slots and their types, kept


def weights(
    model,
    scheme: str = "bf16",
    *,
    keep: str | Iterable[str] | None = None,
    group_size: int | None = None,
    double_quant: bool | None = None,
    pure: bool = False,
) -> Weights:
    """The exact weight memory of ``model`` stored under ``scheme`` (see ``SCHEMES``).

    ``keep`` names what stays in high precision (the scheme's ``base`` dtype: bf16 for
    bitsandbytes, fp16 for GPTQ/AWQ, F16 for GGUF, fp32 for fp16/bf16) instead of the
    scheme's default. It is a comma-separated string (or a list) of items:

    * a component: ``embeddings``, ``attention``, ``feed_forward``, ``experts``, ``router``,
      ``norms``, ``output_head``, ``pooler``, ``other``;
    * ``output``: what transformers' quantisers skip: tied layers, the output embeddings (the
      projection to the vocabulary) and the module of the model's last parameter if a weight;
    * ``outside``: everything outside the decoder-layer stack;
    * a module or tensor name or glob, matched against the full name with layer ranges
      (``lm_head``, ``mlp.gate``, ``model.layers.*.mlp.down_proj.weight``);
    * ``default`` (the scheme's own list: ``output`` for bitsandbytes, ``outside,router`` for
      GPTQ/AWQ, nothing otherwise) or ``none``.

    Tensors a scheme cannot hold (1-D tensors and biases under bitsandbytes, GPTQ, AWQ and
    GGUF; fused MoE experts under bitsandbytes) stay in high precision whatever ``keep`` says.
    ``group_size`` applies to GPTQ/AWQ (default 128; -1 for GPTQ's one group per row);
    ``double_quant`` to nf4/fp4 (default False, as ``BitsAndBytesConfig``; QLoRA uses True).
    ``stored`` (a checkpoint's weights as its files hold them) takes none of these options.
    ``pure`` (``llama-quantize --pure``) puts every quantisable tensor of a llama.cpp file type
    (``q4_k_m``, ``q4_0``, …) in its default type (Q4_K, Q4_0), without the mix's rules.
    """
    s = _pure(_scheme_arg(scheme), pure)
    group, dq = _options(s, group_size, double_quant)
    if s.method == "stored":
        if _keep_items(keep, s):
            raise ParamcountError("--keep applies to schemes computed from the shapes, not to stored", field="keep")
        from .stored import stored_weights

        return stored_weights(model)
    if s.method == "gguf":  # the converter's file follows the config's family, not the stored names
        model = configured(model)
    named = s.method in ("gptq", "awq")  # by the checkpoint's names
    found = model.derived(("slots", named), lambda: tuple(slots(model.tree, model.model_type, checkpoint=named)))
    items = _keep_items(keep, s)
    file = _file_layout(model, s, found)
    found = file.slots if file else found
    plan = _make_plan(model, s, group, dq, found, items)
    rows = tuple(r for slot in found for r in _rows(slot, plan))
    w = Weights(getattr(model, "name", ""), s.name, rows, items, _options_text(s, group, dq))
    return replace(w, **_said(model, s, w, plan, file))


# Names a checkpoint holds beyond what transformers builds, which llama.cpp's converter writes as
# more blocks: Qwen's mtp.*, DeepSeek's and GLM's model.layers.{n…} past num_hidden_layers
_MTP_NAME = re.compile(r"^(model\.)?mtp\.|\.layers\.(\d+)\.")


def configured(model):
    """A model folder (config.json beside safetensors) whose files hold what its config builds,
    as the config's family counts it: llama.cpp's converter and quantiser read the family (its
    experts, their count, the per-layer rules and the MTP layers it appends), which a tree built
    from the stored names does not carry. Any other model is returned as it is."""
    ck = getattr(model, "checkpoint", None)
    if ck is None or ck.against is None or not model.config:
        return model
    n = model.config.get("num_hidden_layers")
    if not all(d.kind == "dtype" or (d.kind == "extra" and _beyond(d.name, n)) for d in ck.differences):
        return model
    return model.derived("configured", lambda: _from_config(model))


def _beyond(name: str, n_layers) -> bool:
    """A stored tensor of the multi-token-prediction layers the converter appends."""
    m = _MTP_NAME.search(name)
    if m is None:
        return False
    return m[2] is None or (isinstance(n_layers, int) and int(m[2]) >= n_layers)


def _from_config(model):
    from ...frontends.config import from_config

    try:
        cls = model.class_name
        found = from_config(dict(model.config), model.source, name=model.name, model_class=cls, fallback=False)
    except ParamcountError:
        return model
    return found if found.model_type == model.model_type else model


def _said(model, s: Scheme, w: Weights, plan: _Plan, file: gguf_layout.Layout | None) -> dict:
    """The note and bound of a plan, where its scheme's words do not say all (a GGUF file's
    layout, its two files, the token embedding's cut, the MTP layers)."""
    words, bound, mt = [], bool(file and file.bound), model.model_type
    if plan.mmproj:
        words.append(MMPROJ_NOTE.format(gg.mmproj_said(mt, plan.mmproj)))
    if plan.projector:
        words.append(PROJECTOR_NOTE)
    if file and file.note:
        words.append("; " + file.note)
    if s.method == "gguf" and not is_gguf(model) and gg.arch_of(mt) in VOCAB_CUT:
        words.append(VOCAB_NOTE.format(VOCAB_CUT[gg.arch_of(mt)]))
        bound = True
    if file and file.mtp:
        words.append(_mtp_note([x for x in file.slots if not gg.in_mmproj(mt, x)], plan, file.mtp))
    return {"note": assumption(w) + "".join(words), "bound": bound} if words else {}


def _file_layout(model, s: Scheme, found: Sequence[Slot]) -> gguf_layout.Layout | None:
    """For a llama.cpp type planned from a config: the tensors the converter writes, where they
    are not the model's (gguf/layout.py), for a file type (a mix or ``--pure``), or for
    a single GGUF type where the layout says so (gguf_layout.SINGLE)."""
    if s.method != "gguf" or is_gguf(model):
        return None
    file_type = s.name in gg.MIXES
    return model.derived(("gguf-layout", file_type), lambda: gguf_layout.layout(model, found, file_type))


# convert_hf_to_gguf.py (_QwenMtpMixin) writes the MTP layers unless --no-mtp; llama.cpp's loader
# skips them unless llama_model_params.load_mtp (TENSOR_SKIP in llama_model_qwen3next::load_arch_tensors)
MTP_NOTE = (
    "; the file holds the checkpoint's {n} multi-token-prediction layer(s), which transformers skips,"
    " as llama.cpp's converter writes them by default (mtp.layers.i as block {first}: model.layers.{first}…;"
    " mtp.fc as nextn.eh_proj; its norms as nextn.enorm, hnorm, shared_head_norm): {bytes:,} B planned here."
    " llama.cpp loads them only for MTP drafting (load_mtp); convert_hf_to_gguf.py --no-mtp leaves them out"
)


def _mtp_note(found: Sequence[Slot], plan: _Plan, n: int) -> str:
    """What the MTP layers add to the plan (they are its last slots)."""
    first = max(s.layers.stop for s in found if s.layers) - n
    extra = sum(r.bytes for s in found if gg.hybrid.is_mtp(s, first) for r in _rows(s, plan))
    return MTP_NOTE.format(n=n, first=first, bytes=extra)


# convert_hf_to_gguf.py Gemma3Model.modify_tensors: "remove OOV (out-of-vocabulary) rows in token_embd"
# (Gemma4Model inherits it): the converter classes that cut the token embedding, by architecture
VOCAB_CUT = {"gemma3": "Gemma3Model.modify_tensors", "gemma4": "Gemma3Model.modify_tensors, which Gemma4Model inherits"}
VOCAB_NOTE = (
    "; an upper bound: llama.cpp's converter keeps only the tokenizer's rows of the token embedding"
    " ({}), which a config does not give; planned at vocab_size rows"
)


MMPROJ_NOTE = (
    "; two llama.cpp files: the language model in the mix, and the encoder towers (vision, and audio where the"
    " model has one) and projector as the mmproj file's ({}; llama-quantize is run on the language model's"
    " file only)"
)
PROJECTOR_NOTE = (
    "; the type re-plans the language model's file; the mmproj file beside it is kept as it stores its tensors"
)


def _pure(s: Scheme, pure: bool) -> Scheme:
    """The single-type scheme of a llama.cpp file type, for ``pure``."""
    if not pure:
        return s
    if s.method != "gguf":
        raise ParamcountError(f"pure applies to llama.cpp (GGUF) types, not {s.name}", field="--pure")
    return replace(s, qtype=gg.MIXES.get(s.qtype, s.qtype)) if s.qtype in gg.MIXES else s


def _scheme_arg(name: str | Scheme) -> Scheme:
    return name if isinstance(name, Scheme) else scheme(name)


def _options(s: Scheme, group_size: int | None, double_quant: bool | None) -> tuple[int, bool]:
    if group_size is not None and s.method not in ("gptq", "awq"):
        raise ParamcountError(f"group_size applies to GPTQ and AWQ schemes, not {s.name}", field="group_size")
    if double_quant and s.method != "bnb4":
        raise ParamcountError(f"double_quant applies to nf4 and fp4, not {s.name}", field="double_quant")
    group = GROUP if group_size is None else group_size
    valid = (
        isinstance(group, int) and not isinstance(group, bool) and (group > 0 or (group == -1 and s.method == "gptq"))
    )
    if not valid:
        allowed = "a positive integer" + (" or -1 (one group per row)" if s.method == "gptq" else "")
        raise ParamcountError(f"group_size must be {allowed}, not {group_size!r}", field="group_size")
    return group, bool(double_quant)


def _options_text(s: Scheme, group: int, dq: bool) -> str:
    if s.method in ("gptq", "awq"):
        return "one group per row" if group == -1 else f"group {group}"
    if s.method == "gguf" and s.name in gg.MIXES and s.qtype not in gg.MIXES:
        return "pure"
    return "double quant" if s.method == "bnb4" and dq else ""


def _keep_items(keep: str | Iterable[str] | None, s: Scheme) -> tuple[str, ...]:
    if keep is None:
        return s.keep
    raw = keep.split(",") if isinstance(keep, str) else list(keep)
    items = [str(i).strip() for i in raw if str(i).strip()]
    out: list[str] = []
    for item in items:
        if item == "none":
            continue
        out.extend(s.keep if item == "default" else [item])
    return tuple(dict.fromkeys(out))


def _make_plan(model, s: Scheme, group: int, dq: bool, found: Sequence[Slot], items: tuple[str, ...]) -> _Plan:
    mt = model.model_type
    fp32 = _matching(found, FP32_MODULES.get(mt, ()))
    bnb = s.method in ("bnb4", "bnb8")  # loaded in bf16, where transformers upcasts nothing
    kept, kept_last = _kept(found, items)
    plan = _Plan(
        mt, s, group, dq, fp32 if s.name == "fp16" else frozenset(), fp32 if bnb else frozenset(), kept, kept_last
    )
    plan = replace(plan, gguf=is_gguf(model))
    if s.method == "gguf" and plan.gguf:
        plan = replace(plan, projector=_projector(model, found))
    if s.qtype in gg.MIXES:
        plan = replace(plan, mix=_mix(model, found))
    config = dict(model.config or {})
    if s.name in gg.MIXES and not plan.gguf and mt in gg.COMPOSITES and not gg.not_stated(mt, config):
        plan = replace(plan, mmproj=gg.mmproj_outtype(config))  # a file type, mixed or --pure: two files
    return plan


def _projector(model, found: Sequence[Slot]) -> tuple[tuple[int, str], ...]:
    """The slots of a GGUF mmproj file beside a language model's GGUF (its vision encoder,
    projector and audio encoder towers) and their stored types: a llama.cpp type re-plans the
    language model's file, as llama-quantize run on it would; the mmproj is a file of its own,
    served as it is."""
    from ...gguf.reader import MMPROJ_TOWERS
    from .stored import _dtypes

    kinds = {getattr(c, "tower", None) for c in model.tree.children}
    towers = tuple(f"{c.name}." for c in model.tree.children if getattr(c, "tower", None) in MMPROJ_TOWERS.values())
    if not towers or "language_model" not in kinds:  # an mmproj file alone: the type is for it
        return ()
    types = list(_dtypes(model.tree))
    return tuple((s.order, t) for s, t in zip(found, types, strict=True) if s.name.startswith(towers))


def _matching(found: Sequence[Slot], names: Sequence[str]) -> frozenset[int]:
    """Slots whose name has one of ``names`` as a dotted segment (``wo``, ``e_score_correction_bias``)."""
    return frozenset(s.order for s in found if any(n in s.name.split(".") for n in names))


def _kept(found: Sequence[Slot], items: Sequence[str]) -> tuple[frozenset[int], frozenset[int]]:
    """Slot orders kept whole, and those of which only the last layer's copy is kept."""
    out: set[int] = set()
    output, last = _output_modules(found) if "output" in items else (set(), set())
    for item in items:
        hit = {s.order for s in found if _keeps(item, s, output)}
        if not hit and item not in KEEP_WORDS:
            raise ParamcountError(
                f"keep item {item!r} names no component and matches no tensor;"
                f" use {', '.join(KEEP_WORDS)} or a tensor name or glob",
                field="keep",
            )
        out |= hit
    return frozenset(out), frozenset(s.order for s in found if _module(s) in last) - out


def _keeps(item: str, s: Slot, output: set[str]) -> bool:
    if item in KINDS:
        return s.kind == item
    if item == "output":
        return _module(s) in output
    if item == "outside":
        return s.layers is None
    name = s.name
    return any(fnmatch.fnmatchcase(name, p) for p in (item, f"{item}.*", f"*.{item}", f"*.{item}.*"))


def _module(s: Slot) -> str:
    return s.name.rsplit(".", 1)[0]


def _output_modules(found: Sequence[Slot]) -> tuple[set[str], set[str]]:
    """What transformers' quantisers leave alone (``get_keys_to_not_convert``): tied modules
    and the output embeddings (the projection to the vocabulary), whole; and the module of
    the model's last parameter when that is a ``weight`` (a bias leaves its module converted),
    which in a layer stack is only the last layer's copy. ``from_pretrained`` asks before it
    ties weights, so a tied head counts as the last parameter."""
    targets = {s.tie for s in found if s.tie}
    tied = {_module(s) for s in found if s.tie or s.name in targets}
    out = _output_slot(found)
    whole = tied | ({_module(out)} if out is not None else set())
    last = found[-1] if found and found[-1].rest.endswith("weight") else None
    if last is not None and last.layers is None:
        whole.add(_module(last))
    return whole, ({_module(last)} if last is not None and last.layers is not None else set())


def _output_slot(found: Sequence[Slot]) -> Slot | None:
    """The output embeddings: the last linear layer of the output head (or tied to the input
    embeddings) that projects to the vocabulary."""
    vocab = {s.shape[0] for s in found if gg.token_embedding(s)}
    head = [
        s
        for s in found
        if s.linear and s.rest.endswith("weight") and s.kind in ("output_head", "embeddings") and s.shape[0] in vocab
    ]
    return head[-1] if head else None


def _mix(model, found: Sequence[Slot]) -> tuple:
    """llama.cpp's state for a mix: each slot's role and the model's facts, and each
    (layer, slot)'s rank among the tensors of its role group in llama.cpp's order (by layer,
    then name), with the groups' sizes: attn_v-like, ffn_down, ffn_gate, ffn_up."""
    mt = model.model_type
    if is_gguf(model):
        kept = {o for o, _ in _projector(model, found)}  # the mmproj file's: not in the mix
        found = [s for s in found if s.order not in kept]
        roles = gg.gguf_roles(metadata(model), found)
    elif why := gg.NO_MIX.get(mt):
        raise ParamcountError(f"no llama.cpp mix for {mt!r}: {why}; use a single GGUF type such as q4_k", field="dtype")
    elif why := gg.not_stated(mt, dict(model.config or {})):
        raise ParamcountError(
            f"no llama.cpp mix is stated for this {mt!r} config: {why}; use a single GGUF type such as q4_k",
            field="dtype",
        )
    elif mt not in gg.MIX_FAMILIES:
        raise ParamcountError(
            f"the llama.cpp mixes are stated here for {', '.join(sorted(gg.MIX_FAMILIES))} configs and for"
            f" GGUF files, not {mt!r}; use a single GGUF type such as q4_k",
            field="dtype",
        )
    else:
        n_expert = max((n for n in _expert_counts(model.tree)), default=0)
        if not n_expert and getattr(model, "checkpoint", None) is not None and _stated_experts(model.config):
            raise ParamcountError(_UNMATCHED, field="dtype")
        found = [s for s in found if not gg.in_mmproj(mt, s)]  # the language-model file's tensors only
        roles = gg.config_roles(mt, dict(model.config or {}), found, n_expert, _output_slot(found))
    quantised = [s for s in found if gg.allowed(s, roles.gguf)]
    ranks: dict[tuple[int, int], int] = {}
    counts: dict[str, int] = {}
    for group in ("attn_v", "ffn_down", "ffn_gate", "ffn_up"):
        members = [s for s in quantised if _group(roles.of(s)) == group]
        order = sorted((i, s.rest, s.order) for s in members for i in (s.layers or (-1,)) for _ in range(s.per_layer))
        for rank, (i, _, o) in enumerate(order):
            ranks.setdefault((i, o), rank)
        counts[group] = len(order)
    return roles, ranks, counts


# config keys stating a MoE's expert count
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_UNMATCHED = (
    "the checkpoint's tensors are not what its config.json builds (see the differences `paramcount` lists for"
    " it), so llama.cpp's rules for experts (their count, each layer's ffn_down rank) cannot be placed on"
    " them; plan the mix from config.json, or fix the checkpoint"
)


def _stated_experts(config) -> bool:
    """Whether a config states routed experts (more than one), which a tree built from a
    checkpoint's names alone does not carry."""
    values = [config.get(k) for k in _EXPERT_KEYS] if config else []
    return any(isinstance(v, int) and not isinstance(v, bool) and v > 1 for v in values)


def _group(role: str) -> str:
    return "attn_v" if role in qm.ATTN_V else role


def _expert_counts(node) -> Iterable[int]:
    if getattr(node, "active", None):
        yield node.active[1]
    for child in getattr(node, "children", ()):
        yield from _expert_counts(child)


def _rows(s: Slot, plan: _Plan) -> list[Row]:
    if s.order in plan.kept_last and s.layers:
        return _split_last(s, plan)
    sch = plan.scheme
    if s.tie is not None:
        return [Row(s.name, s.copies, s.shape, "tied", "tied", (), s.kind)]
    if plan.mmproj and gg.in_mmproj(plan.model_type, s):  # the mmproj file's, as the converter writes it
        return _mmproj_rows(s, plan)
    if plan.projector and (stored := dict(plan.projector).get(s.order)):
        return [_stored(s, stored, "not quantised")]
    if s.order in plan.fp32:
        return [_stored(s, "fp32", "fp32 (transformers)")]
    if not _quantisable(s, plan):
        return [_stored(s, gg.unquantised(s) if sch.method == "gguf" else sch.base, "not quantised")]
    if s.order in plan.kept:
        return [_stored(s, sch.base, "kept")]
    if sch.method == "gguf":
        return _gguf_rows(s, plan)
    fmt, parts = _quantise(s, plan)
    return [Row(s.name, s.copies, s.shape, fmt, "quantised", parts, s.kind)]


def _mmproj_rows(s: Slot, plan: _Plan) -> list[Row]:
    """A tower or projector tensor as the mmproj file holds it: one row per tensor written (a
    split one as its pieces), each in the converter's type."""
    out = []
    for name, shape, dtype in gg.mmproj_tensors(plan.model_type, s, plan.mmproj):
        n = numel(shape)
        out.append(Row(name, s.copies, shape, dtype, "not quantised", (part("weight", dtype, n),), s.kind))
    return out


def _split_last(s: Slot, plan: _Plan) -> list[Row]:
    """The layers before the last as planned, the last layer's copy kept."""
    inner = replace(plan, kept_last=frozenset())
    head = replace(s, layers=s.layers[:-1], copies=s.per_layer * (len(s.layers) - 1))
    tail = replace(s, layers=s.layers[-1:], copies=s.per_layer)
    rows = _rows(head, inner) if head.layers else []
    return rows + _rows(tail, replace(inner, kept=inner.kept | {s.order}))


def _quantisable(s: Slot, plan: _Plan) -> bool:
    method = plan.scheme.method
    if method == "cast":
        return True
    if method == "gguf":
        return gg.allowed(s, plan.gguf)
    return s.linear and s.order not in plan.skip


def _stored(s: Slot, dtype: str, role: str) -> Row:
    return Row(s.name, s.copies, s.shape, dtype, role, (_plain(s, dtype),), s.kind)


def _plain(s: Slot, dtype: str) -> Part:
    n = s.elements
    if dtype == "int4":  # packed two per byte; an odd count leaves half a byte unused
        return Part("weight", dtype, n, (n + 1) // 2)
    return part("weight", dtype, n)


def _quantise(s: Slot, plan: _Plan) -> tuple[str, tuple[Part, ...]]:
    sch = plan.scheme
    if sch.method == "cast":
        return sch.qtype, (_plain(s, sch.qtype),)
    if sch.method == "bnb4":
        return sch.qtype + (", double quant" if plan.double_quant else ""), bnb4(s.elements, plan.double_quant)
    if sch.method == "bnb8":
        return "int8 (LLM.int8)", (part("weight", "int8", s.elements), part("SCB (row scales)", "fp32", s.in_out[1]))
    if sch.method == "gptq":
        return f"GPTQ int{sch.bits}, {_options_text(sch, plan.group, False)}", gptq(s, sch.bits, plan.group)
    return f"AWQ int4, group {plan.group}", awq(s, plan.group)


def _gguf_rows(s: Slot, plan: _Plan) -> list[Row]:
    qtype = plan.scheme.qtype
    if not plan.mix:
        return [_gguf_row(s, s.layers, gg.fallback(qtype, s), s.copies)]
    roles, ranks, counts = plan.mix
    role = roles.of(s)
    runs: list[tuple[str, list[int]]] = []
    for i in s.layers or (None,):
        layer = -1 if i is None else i
        rank, count, ne2 = ranks.get((layer, s.order), 0), counts.get(_group(role), 0), _ne2(s)
        t = qm.Tensor(role, gg.ne0(s), rank, count, max(layer, 0), ne2)
        t = qm.tensor_type(qtype, t, roles.facts)
        if runs and runs[-1][0] == t:
            runs[-1][1].append(i)
        else:
            runs.append((t, [i]))
    if s.layers is None:
        return [_gguf_row(s, None, runs[0][0], s.copies)]
    return [_gguf_row(s, range(ix[0], ix[-1] + 1), t, len(ix) * s.per_layer) for t, ix in runs]


def _ne2(s: Slot) -> int:
    """ggml's ne[2] of the tensor (its shape reversed): a stacked tensor's leading dimension."""
    return int(s.shape[-3]) if len(s.shape) >= 3 else 1


def _gguf_row(s: Slot, layers: range | None, qtype: str, count: int) -> Row:
    return Row(s.name_at(layers), count, s.shape, qtype, "quantised", (part("weight", qtype, s.elements),), s.kind)
