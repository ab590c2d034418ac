"""LoRA adapters: the parameters peft adds to a model, counted from the tree as peft creates them.

For each targeted module peft adds two matrices of rank r (``get_peft_model(model, LoraConfig(...))``):

- ``nn.Linear(in, out)``: ``lora_A.weight`` (r, in) and ``lora_B.weight`` (out, r);
- HF ``Conv1D`` (GPT-2's ``c_attn``, ``c_proj``, ``c_fc``; weight stored in→out, peft's
  ``fan_in_fan_out``): the same, with in and out read from the stored (in, out);
- ``nn.Embedding(rows, dim)``: ``lora_embedding_A`` (r, rows) and ``lora_embedding_B`` (dim, r);
- a weight parameter (peft's ``target_parameters``): a 2-D (out, in) weight gets (r, in) and
  (out, r); a 3-D fused experts weight (E, out, in) gets ``lora_A`` (r·E, in) and ``lora_B``
  (out, r·E).

Targets match as peft's ``target_modules`` do: a list of names matches every module whose full
name is, or ends in ``.``, one of them; a string is a regular expression for the whole name;
``"all-linear"`` is every ``nn.Linear`` and ``Conv1D`` but the output embedding (the module
``get_output_embeddings()`` returns). For Mixtral, Qwen3-MoE and DeepSeek-V3, whose experts
transformers 5 fuses into 3-D parameters, peft renames the old targets as its
``convert_peft_config_for_transformers`` does: ``gate_proj``/``w1`` and ``up_proj``/``w3``
become the experts' ``gate_up_proj`` parameter, ``down_proj``/``w2`` the experts'
``down_proj``, ``gate`` the router's weight; "all-linear" includes all of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ... import dtypes
from ...errors import ParamcountError, brief
from ...ir import Tensor, Tie
from ...model import Model
from ...pattern import Pattern, PatternError
from ...pattern import compile as compile_pattern
from ..core.terms import Term
from ..tree.modules import CONV1D, EMBEDDING, LINEAR, Module, output_embedding, walk

ALL_LINEAR = "all-linear"
BIASES = ("none", "all", "lora_only")
DEFAULT_ALPHA = 8  # LoraConfig.lora_alpha
MAX_PATTERN = 1024  # a bound on a targets or modules_to_save pattern's length (peft has none)

# peft's map from transformers 4 target names to the transformers 5 fused MoE layout
# (peft/utils/transformers_weight_conversion.py); Qwen2-MoE keeps its v4 names.
_QWEN = {"gate": "gate.weight", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj", "down_proj": "down_proj"}
_MIXTRAL = {"gate": "gate.weight", "w1": "gate_up_proj", "w3": "gate_up_proj", "w2": "down_proj"}
MOE_RENAMES = {"mixtral": _MIXTRAL, "qwen3_moe": _QWEN, "deepseek_v3": _QWEN}
_FUSED = {"mixtral": ("w1", "w3"), "qwen3_moe": ("gate_proj", "up_proj"), "deepseek_v3": ("gate_proj", "up_proj")}


@dataclass(frozen=True)
class AdapterRow:
    """The adapter of one targeted module (or parameter), standing for ``copies`` of them.

    ``a`` and ``b`` are the shapes of ``lora_A`` and ``lora_B`` (``lora_embedding_A``/``_B``
    for an embedding); ``module`` is Linear, Conv1D, Embedding or Parameter.
    """

    name: str
    module: str
    copies: int
    d_in: int
    d_out: int
    a: tuple[int, int]
    b: tuple[int, int]

    @property
    def each(self) -> int:
        return math.prod(self.a) + math.prod(self.b)

    @property
    def params(self) -> int:
        return self.copies * self.each


@dataclass(frozen=True)
class SavedRow:
    """A module in ``modules_to_save``: peft trains a full copy of it (the original stays frozen)."""

    name: str
    copies: int
    each: int

    @property
    def params(self) -> int:
        return self.copies * self.each


@dataclass(frozen=True)
class LoRA:
    """The adapters of one LoRA configuration on one model.

    ``params`` are the new lora_A/lora_B parameters; ``trainable`` is what peft's
    ``get_nb_trainable_parameters()`` reports (adapters, the copies of ``modules_to_save``, and
    the base biases ``bias`` unfreezes); ``total`` its all-parameters figure.
    """

    model: Model = field(repr=False)
    rank: int
    alpha: float
    targets: tuple[str, ...] | str
    bias: str
    rows: tuple[AdapterRow, ...]
    saved: tuple[SavedRow, ...] = ()
    biases: tuple[tuple[int, int], ...] = ()  # (size, copies) of each base bias ``bias`` unfreezes
    notes: tuple[str, ...] = ()

    @property
    def bias_params(self) -> int:
        return sum(size * copies for size, copies in self.biases)

    @property
    def params(self) -> int:
        return sum(r.params for r in self.rows)

    @property
    def saved_params(self) -> int:
        return sum(s.params for s in self.saved)

    @property
    def trainable(self) -> int:
        return self.params + self.saved_params + self.bias_params

    @property
    def total(self) -> int:
        return self.model.total + self.params + self.saved_params

    @property
    def modules(self) -> int:
        """How many modules (or parameters) carry an adapter."""
        return sum(r.copies for r in self.rows)

    def term(self, dtype: str = "fp32") -> Term:
        """The new parameters' memory at ``dtype`` (peft keeps adapters in fp32 by default:
        ``autocast_adapter_dtype=True``), key ``adapters``, one part per row."""
        size = dtypes.nbytes(dtype, 1)
        parts = tuple(_row_term(r, self.rank, dtype, size) for r in self.rows)
        parts += tuple(_saved_term(s, dtype, size) for s in self.saved)
        new = self.params + self.saved_params
        return Term(
            key="adapters",
            label=f"LoRA adapters (r={self.rank}, {self.modules:,} modules, {dtype})",
            bytes=new * size,
            formula=f"Σ copies·r·(in + out) = {new:,} parameters × {size} B = {new * size:,} B",
            assumption=self._assumption(dtype),
            parts=parts if len(parts) > 1 else (),
        )

    def _assumption(self, dtype: str) -> str:
        said = [f"rank {self.rank}, targets {_show(self.targets)} (--lora-rank, --lora-targets)", f"adapters {dtype}"]
        if self.bias_params:
            said.append(f"bias={self.bias}: {self.bias_params:,} base biases trained in place")
        return "; ".join(said + list(self.notes))


def _row_term(r: AdapterRow, rank: int, dtype: str, size: int) -> Term:
    formula = f"{r.copies:,} × ({'·'.join(map(str, r.a))} + {'·'.join(map(str, r.b))}) × {size} B"
    return Term("adapters.module", f"{r.name} ({r.module})", r.params * size, formula, f"rank {rank}, {dtype}")


def _saved_term(s: SavedRow, dtype: str, size: int) -> Term:
    formula = f"{s.copies:,} × {s.each:,} × {size} B"
    return Term("adapters.saved", f"{s.name} (modules_to_save copy)", s.params * size, formula, dtype)


def _show(targets: tuple[str, ...] | str) -> str:
    return repr(targets) if isinstance(targets, str) else ", ".join(targets)


# ---- default targets ---------------------------------------------------------------------------

# peft's default ``target_modules`` per model type (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
# in peft.utils.constants, peft 0.21), for the families paramcount models; a test compares them.
PEFT_TARGETS: dict[str, tuple[str, ...] | str] = {
    "bert": ("query", "value"),
    "roberta": ("query", "value"),
    "xlm-roberta": ("query", "value"),
    "electra": ("query", "value"),
    "gpt2": ("c_attn",),
    "gpt_neox": ("query_key_value",),
    "bloom": ("query_key_value",),
    "falcon": ("query_key_value",),
    "phi": ("q_proj", "v_proj", "fc1", "fc2"),
    "t5": ("q", "v"),
    "mt5": ("q", "v"),
    "stablelm": ("q_proj", "v_proj"),
    "gpt_neo": ("q_proj", "v_proj"),
    "gpt_bigcode": ("c_attn",),
    "mpt": ("Wqkv",),
    **dict.fromkeys(
        ("gptj", "opt", "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "bart"),
        ("q_proj", "v_proj"),
    ),
    "nemotron_h": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "llama4": ("q_proj", "v_proj"),  # Llama4ForConditionalGeneration: its vision tower's too
    "deberta-v2": ("query_proj", "value_proj"),
    # a regular expression: the language model's projections, not the vision or audio tower's
    "gemma4": r".*language_model\..*\.(q_proj|v_proj)",
}
# Families peft names no default for (it asks for target_modules): their query and value
# projections, as peft's default is for the others.
OWN_TARGETS = {
    "distilbert": ("q_lin", "v_lin"),
    "albert": ("query", "value"),
    "camembert": ("query", "value"),
    "umt5": ("q", "v"),
    "mpnet": ("q", "v"),
    "whisper": ("q_proj", "v_proj"),
    "modernbert": ("Wqkv",),  # its fused query-key-value projection (peft's default for MPT's)
    **dict.fromkeys(("mbart", "m2m_100", "marian"), ("q_proj", "v_proj")),
    "phi3": ("qkv_proj",),
    # MLA: q_proj where q_lora_rank is null
    **dict.fromkeys(
        ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "longcat_flash", "glm4_moe_lite", "mistral4"),
        ("q_proj", "q_b_proj", "kv_b_proj"),
    ),
    "deepseek_v4": ("q_b_proj", "kv_proj"),  # its query up-projection and shared K=V projection
    **dict.fromkeys(("qwen2_moe", "qwen3_moe", "olmo", "starcoder2"), ("q_proj", "v_proj")),
    **dict.fromkeys(
        ("gpt_oss", "olmoe", "phimoe", "ernie4_5_moe", "minimax_m2", "glm4_moe", "mimo_v2_flash"), ("q_proj", "v_proj")
    ),
    # GLM-4.5V: its language model's q_proj/v_proj (the vision blocks' qkv is fused, left alone)
    **dict.fromkeys(("glm4v_moe", "glm4v_moe_text"), ("q_proj", "v_proj")),
    **dict.fromkeys(("vit", "dinov2", "clip", "clip_text_model", "clip_vision_model", "llava"), ("q_proj", "v_proj")),
    **dict.fromkeys(
        (
            "siglip",
            "siglip_text_model",
            "siglip_vision_model",
            "siglip2",
            "siglip2_text_model",
            "siglip2_vision_model",
            "paligemma",
            "gemma3",
            "pixtral",
            "mistral3",
            "qwen2_vl",
            "qwen2_vl_text",
            "qwen2_5_vl",
            "qwen2_5_vl_text",
            "idefics3",
            "smolvlm",
            "internvl",
            "internvl_vision",
        ),
        ("q_proj", "v_proj"),
    ),
    # linear-attention hybrids: the softmax layers' q_proj/v_proj (and Kimi's KDA projections of those names)
    **dict.fromkeys(("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "kimi_linear", "minimax"), ("q_proj", "v_proj")),
    # the dense Llama variants (arch/dense.py)
    **dict.fromkeys(
        ("granite", "cohere", "cohere2", "olmo2", "olmo3", "smollm3", "ministral3", "seed_oss", "ernie4_5", "exaone4"),
        ("q_proj", "v_proj"),
    ),
    **dict.fromkeys(("apertus", "glm4", "hunyuan_v1_dense"), ("q_proj", "v_proj")),
    # Mamba mixers have no q/v projections: their input and output projections
    **dict.fromkeys(("mamba", "mamba2"), ("in_proj", "out_proj")),
    # state-space hybrids: their attention layers' query and value projections
    **dict.fromkeys(("jamba", "falcon_h1", "granitemoe", "granitemoehybrid", "lfm2"), ("q_proj", "v_proj")),
    "llama4_text": ("q_proj", "v_proj"),
    # image+text composites: the language model's (and a vision tower's) q_proj/v_proj; fused
    # vision qkv projections (Qwen3-VL's) are left alone, as peft's default for Qwen2-VL does
    **dict.fromkeys(
        (
            "gemma4_text",
            "llava_onevision",
            "mllama",
            "qwen3_vl",
            "qwen3_vl_text",
            "qwen3_vl_moe",
            "qwen3_vl_moe_text",
            "qwen3_5",
            "qwen3_5_moe",
            "step3p5",
            "step3p7",
        ),
        ("q_proj", "v_proj"),
    ),
}


def default_targets(model: Model) -> tuple[tuple[str, ...], str | None]:
    """peft's default targets for the model's type, and a note where peft has none."""
    if model.model_type in PEFT_TARGETS:
        return PEFT_TARGETS[model.model_type], None
    own = OWN_TARGETS.get(model.model_type, ("q_proj", "v_proj"))
    text = _text_type(model)
    extra = OWN_TARGETS.get(text, ()) if text != model.model_type else ()
    if isinstance(own, tuple) and isinstance(extra, tuple) and not set(extra) <= set(own):
        # a composite over a language model with other projections (Mistral Small 4: mistral3's
        # q_proj/v_proj, the Pixtral tower's, and its MLA mistral4 text model's): both sets
        own = tuple(dict.fromkeys((*own, *extra)))
    return own, f"peft has no default target_modules for {model.model_type}; assumed {', '.join(own)} (--lora-targets)"


def _text_type(model: Model) -> str | None:
    """A composite's language-model type (its ``text_config.model_type``), else None."""
    text = (model.config or {}).get("text_config")
    return text.get("model_type") if isinstance(text, dict) else None


# ---- the public call --------------------------------------------------------------------------


def lora(
    model: Model,
    rank: int = 8,
    targets: str | Iterable[str] | None = None,
    *,
    alpha: float | None = None,
    bias: str = "none",
    modules_to_save: Iterable[str] = (),
    parameters: Iterable[str] = (),
) -> LoRA:
    """The adapters ``get_peft_model(model, LoraConfig(r=rank, target_modules=targets, ...))``
    adds, counted from the tree (repeated layers multiply, never unrolled unless a target names
    a layer index). ``parameters`` is peft's ``target_parameters``. Without ``targets``, peft's
    default for the model type (:data:`PEFT_TARGETS`; :data:`OWN_TARGETS` where peft has none).

    Raises ParamcountError when the targets match no module (naming the linear layers there
    are), name a module LoRA cannot wrap, or split a fused experts weight.
    """
    rank = _rank(rank)
    if bias not in BIASES:
        raise ParamcountError(f"bias must be one of {', '.join(BIASES)}, not {bias!r}", field="bias")
    default = None
    if targets is None:
        targets, default = default_targets(model)
    given = targets if isinstance(targets, str) else tuple(_names(targets, "targets"))
    parameters = tuple(_names(parameters, "parameters"))
    saves = tuple(_names(modules_to_save, "modules_to_save"))
    spec, params, fused = _convert_moe(model, _spec(given), parameters)
    hits, rows = _rows(model, spec, params, fused, saves, rank)
    if not rows or (parameters and not any(r.module == "Parameter" for r in rows)):
        raise _no_match(model, given, params)
    unfrozen = _biases(walk(model) if bias == "all" else hits if bias == "lora_only" else ())
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    notes = (*_notes(model, params), *([default] if default else []))
    return LoRA(model, rank, alpha, given, bias, tuple(rows), _saved(model, saves), unfrozen, notes)


def _rows(
    model: Model, spec: _Spec, params: frozenset[str], fused: dict[str, int], saves: tuple[str, ...], rank: int
) -> tuple[list[Module], list[AdapterRow]]:
    """The targeted modules, and the adapter rows of those modules and of targeted parameters."""
    mods = _modules(model, spec, params)
    hits = [m for m in mods if _targeted(m, spec, saves)]
    rows = [_module_row(m, rank) for m in hits]
    for m in mods:
        rows += [_param_row(m, t, rank * fused.get(t.name, 1)) for t in m.tensors() if _param_targeted(m, t, params)]
    return hits, rows


def _rank(rank: object) -> int:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ParamcountError(f"rank must be a whole number ≥ 1, not {rank!r}", field="rank")
    return rank


def _names(values: str | Iterable[str], what: str) -> list[str]:
    names = [values] if isinstance(values, str) else list(values)
    bad = [v for v in names if not isinstance(v, str) or not v]
    if bad:
        raise ParamcountError(f"{what} must be module names, not {bad[0]!r}", field=what)
    return names


# ---- targets: a predicate on modules ----------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    """Which modules a config targets: by name suffix (``names``), by regular expression
    (``pattern``) or all linear layers but the output embedding (``all_linear``)."""

    names: frozenset[str] = frozenset()
    pattern: Pattern | None = None
    all_linear: bool = False

    @property
    def by_index(self) -> bool:
        """Whether a match can depend on a layer index (then repeated layers are unrolled)."""
        return self.pattern is not None or any(s.isdigit() for n in self.names for s in n.split("."))


def _spec(targets: str | tuple[str, ...]) -> _Spec:
    if not isinstance(targets, str):
        return _Spec(names=frozenset(targets))
    if targets.lower() == ALL_LINEAR:
        return _Spec(all_linear=True)
    return _Spec(pattern=_pattern(targets, "targets", whole=True))


def _pattern(text: str, field: str, whole: bool = False, given: str | None = None) -> Pattern:
    """peft's regular expression (``re.fullmatch`` for targets, ``re.match`` for modules_to_save),
    matched by paramcount.pattern in time linear in the name: a user's pattern could make Python's
    re backtrack for minutes. Its syntax is ECMAScript's, which covers what module patterns use.
    ``given``: the user's part of ``text``, named in a refusal."""
    given = text if given is None else given
    if len(given) > MAX_PATTERN:
        raise ParamcountError(f"a pattern is at most {MAX_PATTERN} characters, not {len(given):,}", field=field)
    try:
        return compile_pattern(text, whole)
    except PatternError as e:
        why = str(e) if given == text else str(e).rpartition(" (position")[0] or str(e)  # a place in text, not given
        raise ParamcountError(
            f"{field} {brief(given)} is not a regular expression this matcher takes: {why}", field=field
        ) from None


def _matches(spec: _Spec, name: str) -> bool:
    if spec.pattern is not None:
        return spec.pattern.search(name)
    return name in spec.names or any(name.endswith("." + n) for n in spec.names)


def _modules(model: Model, spec: _Spec, params: frozenset[str]) -> list[Module]:
    by_index = spec.by_index or any(s.isdigit() for p in params for s in p.split("."))
    mods = list(walk(model, expand=by_index))
    if spec.all_linear:
        out = output_embedding(model)
        return [m for m in mods if not (m.type in (LINEAR, CONV1D) and m.name == out)]
    return mods


def _targeted(m: Module, spec: _Spec, saves: tuple[str, ...]) -> bool:
    hit = m.type in (LINEAR, CONV1D) if spec.all_linear else _matches(spec, m.name)
    if not hit or any(_pattern(rf"^(?:(^|.*\.){s}($|\..*))", "modules_to_save", given=s).search(m.name) for s in saves):
        return False
    if m.type is None:
        raise ParamcountError(
            f"{m.name} is not a layer LoRA can wrap (only Linear, Conv1D and Embedding layers are)", field="targets"
        )
    return True


def _module_row(m: Module, rank: int) -> AdapterRow:
    # An embedding's (rows, dim) plays (in, out): lora_embedding_A (r, rows), lora_embedding_B (dim, r).
    return AdapterRow(m.label, m.type, m.copies, m.d_in, m.d_out, (rank, m.d_in), (m.d_out, rank))


# ---- target_parameters, and peft's renaming for transformers 5 MoE layouts ---------------------


def _param_targeted(m: Module, t: Tensor | Tie, params: frozenset[str]) -> bool:
    key = f"{m.name}.{t.name}"
    return isinstance(t, Tensor) and (key in params or any(key.endswith("." + p) for p in params))


def _param_row(m: Module, t: Tensor, rank: int) -> AdapterRow:
    shape = tuple(int(d) for d in t.shape)
    name = f"{m.label}.{t.name}"
    if len(shape) == 2:
        out, d_in = shape
        return AdapterRow(name, "Parameter", m.copies, d_in, out, (rank, d_in), (out, rank))
    if len(shape) == 3:  # (experts, out, in); peft gives every expert its own rank-r slice
        experts, out, d_in = shape
        return AdapterRow(name, "Parameter", m.copies, d_in, out, (rank * experts, d_in), (out, rank * experts))
    raise ParamcountError(f"{name} has shape {shape}; LoRA targets only 2-D and 3-D parameters", field="parameters")


def _convert_moe(model: Model, spec: _Spec, params: tuple[str, ...]) -> tuple[_Spec, frozenset[str], dict[str, int]]:
    """peft's ``_convert_peft_config_moe``: old expert and router names become parameters, and
    a fused parameter whose parts are all targeted gets their ranks summed (``rank_pattern``)."""
    renames = MOE_RENAMES.get(model.model_type)
    names = None if renames is None else _leaf_targets(model, spec, renames)
    if names is None:
        return spec, frozenset(params), {}
    kept, found, fused = set(), set(params), set()
    for target in names:
        old = next((o for o in renames if target == o or target.endswith("." + o)), None)
        if old is None:
            kept.add(target)
        else:
            found.add(renames[old])
            fused.update({old} & set(_FUSED[model.model_type]))
    _check_fused(model.model_type, fused)
    return _Spec(names=frozenset(kept)), frozenset(found), {"gate_up_proj": len(fused)} if fused else {}


def _leaf_targets(model: Model, spec: _Spec, renames: dict[str, str]) -> set[str] | None:
    """A string target resolved to the leaf names it reaches, as peft does before renaming."""
    if not spec.all_linear and spec.pattern is None:
        return set(spec.names)
    mods = list(walk(model, expand=spec.pattern is not None))
    if spec.all_linear:
        out = output_embedding(model)
        return {m.name.rpartition(".")[2] for m in mods if m.type in (LINEAR, CONV1D) and m.name != out} | set(renames)
    keys = [m.name for m in mods] + [f"{m.name}.{t.name}" for m in mods for t in m.tensors()]
    found = {k.rpartition(".")[2] for k in keys if spec.pattern.search(k)}
    holders = [(m.name, t.name) for m in mods for t in m.tensors()]
    found |= {
        old for old, new in renames.items() if any(p == new and spec.pattern.search(f"{h}.{old}") for h, p in holders)
    }
    return found or None


def _check_fused(model_type: str, present: set[str]) -> None:
    needed = set(_FUSED[model_type])
    if present and present != needed:
        raise ParamcountError(
            f"{', '.join(sorted(present))} cannot be targeted without {', '.join(sorted(needed - present))}: "
            f"transformers 5 fuses them into the experts' gate_up_proj",
            field="targets",
        )


def _notes(model: Model, params: frozenset[str]) -> tuple[str, ...]:
    if model.model_type in MOE_RENAMES and params:
        return (f"peft maps the experts and router targets to parameters {', '.join(sorted(params))}",)
    return ()


# ---- modules_to_save, biases, and the error ---------------------------------------------------


def _saved(model: Model, saves: tuple[str, ...]) -> tuple[SavedRow, ...]:
    """Outermost modules whose name ends with a ``modules_to_save`` entry (peft's test)."""
    rows, taken = [], []
    for m in walk(model):
        if any(m.name.endswith(s) for s in saves) and m.name and not any(m.name.startswith(t + ".") for t in taken):
            taken.append(m.name)
            rows.append(SavedRow(m.label, m.copies, m.block.count_with_ties))
    missing = [s for s in saves if not any(t.endswith(s) for t in taken)]
    if missing:
        raise ParamcountError(f"modules_to_save {missing[0]!r} matches no module", field="modules_to_save")
    return tuple(rows)


def _biases(mods: Iterable[Module]) -> tuple[tuple[int, int], ...]:
    """(size, copies) of the ``bias`` parameters of ``mods``, each once: the base parameters
    peft unfreezes with ``bias="all"`` (every module) or ``"lora_only"`` (the targeted ones)."""
    found: dict[str, tuple[int, int]] = {}
    for m in mods:
        for t in m.tensors():
            if t.name == "bias":
                key = t.target if isinstance(t, Tie) else f"{m.name}.bias"
                found[key] = (t.aliased_count if isinstance(t, Tie) else t.count, m.copies)
    return tuple(found.values())


def _no_match(model: Model, given: object, params: frozenset[str]) -> ParamcountError:
    linear = dict.fromkeys(m.name.rpartition(".")[2] for m in walk(model) if m.type in (LINEAR, CONV1D, EMBEDDING))
    what = f"targets {_show(given)}" + (f" and parameters {', '.join(sorted(params))}" if params else "")
    return ParamcountError(
        f"{what} match no module; the model's linear and embedding layers are named {', '.join(linear)}",
        source=model.name,
        field="targets",
    )


__all__ = ["ALL_LINEAR", "AdapterRow", "LoRA", "SavedRow", "lora"]
