"""A memory plan: every term a run needs, each with its formula and assumptions, and the total.

Inference = weights + KV cache + activation working set + runtime overhead. Training = the
training terms (weights, master weights, gradients, optimizer states, activations, adapters)
+ runtime overhead. Weights and KV cache are identities of the model's shapes and the chosen
dtypes; activations and overhead are estimates and say so, with their sources.

A model read from weight files (a GGUF file, a safetensors checkpoint) is planned by default
with its weights as stored (scheme ``stored``) and its compute dtype (fp16 for GGUF, GPTQ and
AWQ; bf16 for bitsandbytes; else the stored float type). A model with no KV-cache layout (a
``print(model)`` text, weights without a config.json, a GGUF architecture not mapped) is
planned at inference as its weights and overhead alone, the plan saying why (``partial``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ParamcountError
from ...model import Model
from . import overhead as _overhead
from .limits import Limit
from .terms import GB, GIB, Term

SCHEMA = "paramcount.memory/1"
DEFAULT_CONTEXT = 4096  # when neither the caller nor a smaller model limit says otherwise
UINT32 = (1 << 32) - 1
_POSITIONS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx", "context_length")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class Plan:
    """The memory a run needs: ``terms`` (each a :class:`Term`) and their ``total`` in bytes.

    ``total`` is what the device holds (a GPU's memory, or the CPU's with llama.cpp's
    ``--device cpu``): every term but those marked ``host``, which a runtime keeps in host RAM
    beside a GPU and ``host`` sums. ``settings`` holds every choice the figures depend on
    (scheme, context, batch, dtypes, ...).
    """

    model: Model = field(repr=False)
    mode: str  # "inference" or "training"
    terms: tuple[Term, ...]
    settings: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    planner: Any = field(default=None, repr=False, compare=False)  # re-plans at another context/batch
    partial: str | None = None  # why only the weights and overhead are planned (no KV-cache layout)

    @property
    def device_terms(self) -> tuple[Term, ...]:
        """The terms on the device, which ``total`` sums."""
        return tuple(t for t in self.terms if not t.host)

    @property
    def host_terms(self) -> tuple[Term, ...]:
        """The terms held in host memory beside the device, which ``host`` sums."""
        return tuple(t for t in self.terms if t.host)

    @property
    def total(self) -> int:
        """Bytes on the device: the terms not held in host memory."""
        return sum(t.bytes for t in self.device_terms)

    @property
    def host(self) -> int:
        """Bytes held in host memory beside the device (not in ``total``)."""
        return sum(t.bytes for t in self.host_terms)

    @property
    def estimated(self) -> int:
        """The part of the total that is modelled rather than exact."""
        return sum(t.bytes for t in self.device_terms if t.estimate)

    def at(self, context: int, batch: int) -> Plan:
        """The same setup at another context and batch (what plots and fit searches draw on)."""
        return self.planner.plan(context, batch)

    def term(self, key: str) -> Term:
        for t in self.terms:
            if t.key == key:
                return t
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, schema ``paramcount.memory/1`` (see README, "Memory and fit")."""
        return {
            "schema": SCHEMA,
            "model": model_dict(self.model),
            "mode": self.mode,
            "settings": dict(self.settings),
            "total": size_dict(self.total),
            "estimated": size_dict(self.estimated),
            "terms": [term_dict(t) for t in self.terms],
            "notes": list(self.notes),
            **({"partial": self.partial} if self.partial else {}),
            **({"host": size_dict(self.host)} if self.host_terms else {}),
        }


def size_dict(n: int) -> dict[str, Any]:
    return {"bytes": n, "gb": round(n / GB, 3), "gib": round(n / GIB, 3)}


def term_dict(t: Term) -> dict[str, Any]:
    return {
        "key": t.key,
        "label": t.label,
        **size_dict(t.bytes),
        "formula": t.formula,
        "assumption": t.assumption,
        "estimate": t.estimate,
        "source": t.source,
        "parts": [term_dict(p) for p in t.parts],
        **({"host": True} if t.host else {}),
    }


def model_dict(model: Model) -> dict[str, Any]:
    return {"name": model.name, "source": model.source, "class": model.class_name, "parameters": model.total}


# ---- settings ---------------------------------------------------------------------------------


def as_model(model: Model | str | Mapping[str, Any]) -> Model:
    """A counted model, or a catalog name / path / config dict to count."""
    if isinstance(model, Model):
        return model
    from ... import load

    return load(model)


def positive(value: Any, field: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParamcountError(f"expected an integer ≥ {low}, got {value!r}", field=field)
    return value


def max_positions(model: Model) -> int | None:
    """The longest context the model's config allows, when it says (a vision encoder: its
    patches and class token)."""
    from ...frontends.config import is_native
    from ...gguf.meta import is_gguf, metadata

    if is_gguf(model):
        return metadata(model).integer("context_length", None, high=UINT32)  # only a limit: any uint32
    if model.config and is_native(model.model_type) and model.counted_by == "paramcount":
        from ...arch import family

        fam = family(model.model_type)
        if fam.max_tokens is not None:
            return int(fam.max_tokens(fam.cfg(model.config, model.source)))
    text = model.config.get("text_config") if model.config else None  # a composite's language model
    for config in (model.config or {}, text if isinstance(text, Mapping) else {}):
        for name in _POSITIONS:
            value = config.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def context_for(model: Model, context: int | None) -> tuple[int, str]:
    """The context to plan for, and why it is that."""
    if context is not None:
        return positive(context, "--context"), "--context"
    limit = max_positions(model)
    if limit is None:
        return DEFAULT_CONTEXT, "the default; the config states no limit"
    if limit <= DEFAULT_CONTEXT:
        return limit, "the model's limit"
    return DEFAULT_CONTEXT, f"the default; the model allows {limit:,}"


def default_scheme(model: Model) -> str:
    """``stored`` for a model read from weight files, else bf16."""
    from ..weights.stored import is_checkpoint

    return "stored" if is_checkpoint(model) else "bf16"


def compute_dtype(scheme: str, model: Model | None = None) -> str:
    """What a scheme computes in, which activations and (by default) the KV cache use: fp32 and
    fp16 themselves; fp16 for GGUF (llama.cpp's default f16 cache), GPTQ and AWQ (fp16 kernels);
    bf16 for the rest (bitsandbytes' and transformers' usual compute dtype); for ``stored``,
    the checkpoint's (:func:`paramcount.memory.weights.stored.compute_dtype`)."""
    from ..weights.schemes import scheme as find

    s = find(scheme)
    if s.method == "stored":
        from ..weights.stored import compute_dtype as stored_dtype

        return stored_dtype(model)
    if s.qtype in ("fp32", "fp16"):
        return s.qtype
    return "fp16" if s.method in ("gguf", "gptq", "awq") else "bf16"


def activation_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ParamcountError(f"activations are fp32, fp16 or bf16, not {dtype!r}", field="--dtype")
    return DTYPE_BYTES[dtype]


# ---- inference --------------------------------------------------------------------------------


class InferencePlanner:
    """The weights term computed once; plans for any context and batch (fit bisects over these).

    ``scheme`` defaults to ``stored`` for a checkpoint and bf16 otherwise; ``keep`` goes to
    :func:`~paramcount.memory.weights.schemes.weights`; ``cache`` (default: dynamic, llama.cpp for a
    GGUF file), ``encoder_length`` and ``mla`` to :func:`~paramcount.memory.context.kv_cache.kv_cache`;
    ``images`` of ``image_size`` (:mod:`~paramcount.memory.context.images`) and ``audio`` seconds
    (:mod:`~paramcount.memory.context.audio`) add their tokens to every sequence's context.
    ``partial`` is why only the weights and overhead can be planned, or None.
    """

    def __init__(
        self,
        model: Model,
        scheme: str | None = None,
        kv_dtype: str | None = None,
        overhead: Any = None,
        *,
        keep: Any = None,
        cache: str | None = None,
        encoder_length: int | None = None,
        mla: str = "latent",
        pure: bool = False,
        images: int | None = None,
        image_size: Any = None,
        audio: Any = None,
        attn: str | None = None,
        gpu: Any = None,
    ):
        from ..context.audio import audio as audio_input
        from ..context.images import images as image_input
        from ..runtimes.transformers.attention import attending
        from ..runtimes.transformers.loading import dequantised, loading, shapes_note
        from ..weights.schemes import scheme as find
        from ..weights.schemes import weights
        from ..weights.stored import is_checkpoint
        from .gpus import gpu as find_gpu

        self.model = model
        self.images = image_input(model, images, image_size)  # their tokens join every sequence's context
        self.audio = audio_input(model, audio)  # and so do the clip's
        self._encoder_terms: dict[int, tuple[Term, ...]] = {}
        self.scheme = find(scheme or default_scheme(model)).name
        self.dtype = compute_dtype(self.scheme, model)
        self.kv_dtype = kv_dtype or self.dtype
        self.cache = {"cache": cache, "encoder_length": encoder_length, "mla": mla}
        self.overhead = _overhead.parse(overhead) if overhead is not None else _overhead.MEASURED
        w = weights(model, self.scheme, keep=keep, pure=pure)
        card = find_gpu(gpu) if gpu is not None else None
        self.loaded = loading(model, card) if self.scheme == "stored" else None  # the quantization_config
        if self.loaded and self.loaded.kept is False:
            w = dequantised(w, self.loaded.why)
        self.keep = ",".join(w.keep) or "none"
        self.unquantised = w.unquantised()
        self.weights = w.term()
        self.stored_as = w.options if self.scheme == "stored" else None
        self.layout, self.partial = _layout(model, mla)
        if self.images and self.images.states and not self.partial:
            if encoder_length is not None:  # the images fix what the cross-attention layers hold
                raise ParamcountError(
                    "the cross-attention layers hold the images' states (--images)", field="--encoder-length"
                )
            self.layout = self.images.layout(self.layout)
        self.widths = None if self.partial else shape_widths(model)
        heads_width = getattr(self.widths, "heads_width", 0)
        self.attending = None if self.partial else attending(model, self.layout, attn, heads_width)
        if self.attending:
            self.attending.kernel(1, self.dtype)  # refuses flash_attention_2 in fp32 now, not at a fit's search
        self.limit = Limit.of(model)
        shapes = None if is_checkpoint(model) else shapes_note(model, card, self.scheme)
        self.quant_notes = (self.loaded.why,) if self.loaded else (shapes,) if shapes else ()

    def plan(self, context: int, batch: int = 1, why: str = "--context") -> Plan:
        from ..context.kv_cache import kv_cache

        context, batch = positive(context, "--context"), positive(batch, "--batch")
        if self.partial:
            self.limit.check(context, "transformers")
            return self._weights_only(batch)
        seen = context + self._media_tokens()  # what the language model holds: text, image and audio tokens
        warned = self.limit.check(seen, "transformers")
        cache = kv_cache(self.model, seen, batch, self.kv_dtype, **self.cache, layout=self.layout)
        kv = cache.term()
        act = self._activations(seen, batch)
        base = (self.weights, kv, act, *self._encoders(batch))
        rest = sum(t.bytes for t in base) - self.weights.bytes
        extra = self.overhead.split_term(self.weights.bytes, rest, "KV cache + activations")
        settings = self._settings(cache.dtype, cache.cache, context, why, batch)
        notes = (*warned, *cache.notes, *self._media_notes(), *self.quant_notes)
        return Plan(self.model, "inference", (*base, extra), settings, notes, planner=self)

    def _activations(self, seen: int, batch: int) -> Term:
        from ..runtimes.transformers.working_set import activations

        b = activation_bytes(self.dtype)
        storage = self._sliding_storage(seen, batch)
        return activations(self.model, seen, batch, b, self.dtype, self.widths, self.attending, storage)

    def _sliding_storage(self, context: int, batch: int) -> int:
        """Bytes the sliding-window layers hold beyond their window after a prefill of ``context``
        tokens: DynamicSlidingWindowLayer.update keeps ``full[:, :, -W+1:]``, a view that holds the
        whole concatenated keys and values until the next step (a static cache writes in place)."""
        from ..context.kv_cache import sliding_overhang

        if self.cache["cache"] not in (None, "dynamic"):
            return 0
        return sliding_overhang(self.layout, context, batch, self.kv_dtype)

    def _media_tokens(self) -> int:
        return (self.images.tokens if self.images else 0) + (self.audio.tokens if self.audio else 0)

    def _encoders(self, batch: int) -> tuple[Term, ...]:
        """The vision and audio encoders' activations over every sequence's images and clip,
        kept per batch (a fit's searches ask for the same few many times)."""
        if batch not in self._encoder_terms:
            b = activation_bytes(self.dtype) * batch
            media = (self.images, self.audio)
            self._encoder_terms[batch] = tuple(m.activations(b, self.dtype) for m in media if m)
        return self._encoder_terms[batch]

    def _media_notes(self) -> tuple[str, ...]:
        notes = []
        if self.images:
            i = self.images
            notes.append(
                f"{i.count} image{'s' * (i.count != 1)} of {i.size[0]}x{i.size[1]} px add {i.tokens:,} tokens to "
                f"each sequence's context ({i.each.tokens:,} each): {i.each.said}"
            )
        if self.audio:
            a = self.audio
            notes.append(
                f"{float(a.seconds):g} s of audio add {a.tokens:,} tokens to each sequence's context: {a.each.said}"
            )
        return tuple(notes)

    def _settings(self, kv_dtype: Any, kv_cache: Any, context: Any, why: str, batch: int) -> dict[str, Any]:
        """Every choice the figures depend on; ``stored_as`` only for weights as stored."""
        stored = {"stored_as": self.stored_as} if self.stored_as else {}
        return {
            "scheme": self.scheme,
            **stored,
            "keep": self.keep,
            "compute_dtype": self.dtype,
            "kv_dtype": kv_dtype,
            "kv_cache": kv_cache,
            "context": context,
            "context_from": why,
            "batch": batch,
            "overhead": self.overhead.text,
            **({"attn": self.attending.impl, "attn_from": self.attending.why} if self.attending else {}),
            **({"images": self.images.count, "image_tokens": self.images.tokens} if self.images else {}),
            **({"audio_seconds": float(self.audio.seconds), "audio_tokens": self.audio.tokens} if self.audio else {}),
        }

    def _weights_only(self, batch: int) -> Plan:
        """The weights and the overhead on them, for a model without a KV-cache layout."""
        extra = self.overhead.split_term(self.weights.bytes, 0, "nothing beyond the weights")
        settings = self._settings(None, None, None, "weights only", batch)
        note = f"weights and overhead only, no KV cache or activations: {self.partial}"
        notes = (note, *self.quant_notes)
        return Plan(self.model, "inference", (self.weights, extra), settings, notes, self, self.partial)

    def total(self, context: int, batch: int = 1) -> int:
        """``plan(context, batch).total`` without writing any term's formula: a fit's searches
        ask for hundreds of totals per table (tests/test_plan.py holds the two equal)."""
        from ..context.kv_cache import kv_bytes

        context, batch = positive(context, "--context"), positive(batch, "--batch")
        if self.partial:
            self.limit.check(context, "transformers")
            return self.weights.bytes + self.overhead.split(self.weights.bytes, 0)
        seen = context + self._media_tokens()
        self.limit.check(seen, "transformers")  # past a learned position table: refused as plan() does
        kv = kv_bytes(self.model, seen, batch, self.kv_dtype, **self.cache, layout=self.layout)
        act = self._activations(seen, batch).bytes
        rest = kv + act + sum(t.bytes for t in self._encoders(batch))
        return self.weights.bytes + rest + self.overhead.split(self.weights.bytes, rest)


def _layout(model: Model, mla: str) -> tuple[Any, str | None]:
    """The model's KV-cache layout and None, or None and why it has none (a printout, a bare
    checkpoint, an unmapped GGUF architecture)."""
    from ..context.kv_layout import NoLayout, attention_layout

    def build() -> tuple[Any, str | None]:
        try:
            return attention_layout(model, mla=mla), None
        except NoLayout as e:
            return None, str(e)

    return model.derived(("layout", mla), build)


def shape_model(model: Model) -> Model:
    """The model activation estimates read layer widths from: a safetensors checkpoint's
    config.json model (the same architecture, in the nested tree the estimates walk; a tree
    built from a checkpoint's flat names has no attention blocks to find), else the model."""
    if getattr(model, "checkpoint", None) is not None and model.config:
        from ...frontends.config import from_config

        try:
            return from_config(model.config, model.source, model_class=model.class_name)
        except ParamcountError:
            pass
    return model


def shape_widths(model: Model) -> Any:
    """The layer widths the inference activation estimate reads: a GGUF file's from its tensors
    (:func:`paramcount.gguf.meta.widths`), any other model's from :func:`shape_model`."""
    from ...gguf.meta import is_gguf
    from ...gguf.meta import widths as gguf_widths
    from ..runtimes.transformers.working_set import widths

    return model.derived("widths", lambda: gguf_widths(model) if is_gguf(model) else widths(shape_model(model)))


def inference(
    model: Model | str | Mapping[str, Any],
    scheme: str | None = None,
    context: int | None = None,
    batch: int = 1,
    kv_dtype: str | None = None,
    overhead: Any = None,
    **options: Any,
) -> Plan:
    """Inference memory: weights at ``scheme`` + KV cache + activation working set + overhead.

    ``scheme`` defaults to ``stored`` (the weights as the files hold them) for a model read from
    a GGUF or safetensors checkpoint, and to bf16 otherwise. A model without a KV-cache layout
    gets its weights and overhead alone (``Plan.partial`` says why).
    ``context`` defaults to the model's limit capped at 4,096 tokens; ``kv_dtype`` to the
    scheme's compute dtype (bf16; fp32/fp16 for those schemes; fp16 for GGUF, GPTQ and AWQ);
    ``overhead`` is the measured CUDA context, cuBLAS workspace and allocator reserve
    (:data:`paramcount.memory.core.overhead.MEASURED`) unless given (a string like ``"1GB+5%"`` or an
    Overhead); ``attn`` (``sdpa``/``eager``/``flash_attention_2``) overrides transformers' choice;
    ``gpu`` (a name or :class:`~paramcount.memory.core.gpus.GPU`) is the card a checkpoint with a
    ``quantization_config`` is loaded on: it decides whether its weights stay quantised
    (:mod:`paramcount.memory.runtimes.transformers.loading`).
    ``options``: ``keep`` (what stays in high precision), ``cache`` (``dynamic``/``static``/``llama.cpp``),
    ``encoder_length``, ``mla`` (``latent``/``expanded``), as the weights and KV modules take them;
    ``runtime`` (:mod:`paramcount.memory.runtimes`: llama.cpp by default for a GGUF file, whose
    options are :class:`paramcount.memory.runtimes.llamacpp.plan.Options`' fields).
    """
    from ..runtimes import planner

    model = as_model(model)
    context, why = context_for(model, context)
    runtime = options.pop("runtime", None)
    return planner(model, scheme, runtime, kv_dtype=kv_dtype, overhead=overhead, **options).plan(context, batch, why)


# ---- training ---------------------------------------------------------------------------------

# The rows of a training fit: full fine-tuning at each precision, and QLoRA (NF4 base + LoRA).
TRAINING_PRECISIONS = ("fp32", "mixed", "bf16", "qlora")


class TrainingPlanner:
    """One training setup; plans for any context, batch, GPU count and ZeRO stage.

    The model states (weights, master weights, gradients, optimizer states, adapters) come from
    :func:`paramcount.memory.training.optimizer.training` once per (ZeRO stage, GPUs); the activations, the
    same as ``training``'s, from :mod:`paramcount.memory.training.saved` per (context, batch).
    """

    def __init__(
        self,
        model: Model,
        precision: str = "mixed",
        *,
        optimizer: str = "adamw",
        zero: int = 0,
        gpus: int = 1,
        recompute: str = "none",
        flash: bool = True,
        lora: Any = None,
        lora_targets: Any = None,
        qlora: bool | int = False,
        overhead: Any = None,
    ):
        self.model = model
        self.qlora_bits = (4 if qlora is True else qlora or None) if precision != "qlora" else 4
        self.precision = "mixed" if precision == "qlora" else precision
        self.optimizer, self.zero, self.gpus = optimizer, zero, gpus
        self.recompute, self.flash = recompute, flash
        self.adapters = _adapters(model, lora, lora_targets, self.qlora_bits)
        self._states: dict[tuple[int, int], list[Term]] = {}
        self.shapes = shape_model(model)  # what the activation estimate reads widths from
        self.overhead = _overhead.parse(overhead) if overhead is not None else _overhead.MEASURED_TRAINING

    def states(self, zero: int, gpus: int) -> list[Term]:
        if (zero, gpus) not in self._states:
            from ..training.optimizer import states

            terms = states(
                self.model,
                optimizer=self.optimizer,
                precision=self.precision,
                zero=zero,
                gpus=gpus,
                lora=self.adapters,
                qlora_bits=self.qlora_bits,
            )
            self._states[zero, gpus] = terms
        return self._states[zero, gpus]

    def plan(
        self, context: int, batch: int = 1, gpus: int | None = None, zero: int | None = None, why: str = ""
    ) -> Plan:
        from ..training.saved import of_step

        context, batch = positive(context, "--context"), positive(batch, "--batch")
        gpus, zero = gpus or self.gpus, self.zero if zero is None else zero
        act = of_step(self.shapes, self._step(context, batch))
        states = _at_peak(self.states(zero, gpus), act)
        base = (*states, act)
        weights = sum(t.bytes for t in base if t.key in ("weights", "master_weights"))
        rest = sum(t.bytes for t in base) - weights
        extra = self.overhead.split_term(weights, rest, "the training terms beyond the weights")
        settings = self._settings(context, batch, gpus, zero, why)
        return Plan(self.model, "training", (*base, extra), settings, planner=self)

    def _step(self, context: int, batch: int) -> Any:
        from ..training.saved import step

        options = {"recompute": self.recompute, "flash": self.flash, "adapters": self.adapters}
        return step(self.model, context, batch, self.precision, **options)

    def _settings(self, context: int, batch: int, gpus: int, zero: int, why: str) -> dict[str, Any]:
        a = self.adapters
        return {
            "precision": "qlora" if self.qlora_bits else self.precision,
            "optimizer": self.optimizer,
            "zero": zero,
            "gpus": gpus,
            "context": context,
            "context_from": why or "--context",
            "batch": batch,
            "recompute": self.recompute,
            "flash": self.flash,
            "lora": None if a is None else f"rank {a.rank} on {_targets_text(a.targets)}",
            "qlora": {4: "nf4", 8: "int8"}.get(self.qlora_bits),
            "overhead": self.overhead.text,
        }

    def total(self, context: int, batch: int = 1) -> int:
        return self.plan(context, batch).total


def _at_peak(states: list[Term], act: Term) -> list[Term]:
    """The gradients as the peak holds them. The step peaks at the start of the loss's backward,
    with the activations saved and no gradients yet; the backward frees the activations as the
    gradients fill in, and the optimizer step holds the gradients and AdamW's temporaries
    (``torch._foreach_sqrt`` of exp_avg_sq: one moment's size). The gradients term is what
    that second phase needs beyond the first: none when the activations are larger."""
    grads = next((t for t in states if t.key == "gradients"), None)
    if grads is None:
        return states
    opt = next((t for t in states if t.key == "optimizer"), None)
    temp = sum(p.bytes for p in opt.parts if p.key == "optimizer.moments") // 2 if opt else 0
    need = max(0, grads.bytes + temp - act.bytes)
    formula = f"max(0, gradients {grads.bytes:,} + AdamW temporaries {temp:,} − activations {act.bytes:,}) = {need:,} B"
    said = (
        f"{grads.label}: {grads.bytes:,} B at the optimizer step, when the activations are freed; the total "
        "counts the larger phase once"
    )
    held = Term("gradients", f"{grads.label}, beyond the activations", need, formula, said, True, grads.source)
    return [held if t is grads else t for t in states]


def _targets_text(targets: Any) -> str:
    return targets if isinstance(targets, str) else ",".join(targets)


def _adapters(model: Model, lora: Any, targets: Any, qlora_bits: int | None) -> Any:
    """A LoRA result from a rank (and targets), or the one given; QLoRA implies rank 8."""
    from ..training.lora import LoRA
    from ..training.lora import lora as make_lora

    if isinstance(lora, LoRA):
        return lora
    if lora is None and targets is None and qlora_bits is None:
        return None
    if isinstance(targets, str) and "," in targets:
        targets = tuple(t.strip() for t in targets.split(",") if t.strip())
    kwargs = {} if targets is None else {"targets": targets}
    return make_lora(model, rank=8 if lora is None else lora, **kwargs)


def train(
    model: Model | str | Mapping[str, Any],
    *,
    optimizer: str = "adamw",
    precision: str = "mixed",
    zero: int = 0,
    gpus: int = 1,
    batch: int = 1,
    context: int | None = None,
    recompute: str = "none",
    flash: bool = True,
    lora: Any = None,
    lora_targets: Any = None,
    qlora: bool | int = False,
    overhead: Any = None,
) -> Plan:
    """Training memory per GPU: the terms of :func:`paramcount.memory.training.optimizer.training` + overhead.

    ``precision`` is ``mixed`` (bf16 with fp32 master weights), ``fp32``, ``bf16`` or ``qlora``
    (an NF4 base with LoRA adapters); ``lora`` a rank (default targets peft's for the model type, or
    ``lora_targets``) or a :class:`~paramcount.memory.training.lora.LoRA`; ``qlora`` True (4-bit) or 8;
    ``batch`` the micro-batch per GPU; ``context`` as for :func:`inference`.
    """
    model = as_model(model)
    context, why = context_for(model, context)
    planner = TrainingPlanner(
        model,
        precision,
        optimizer=optimizer,
        zero=zero,
        gpus=gpus,
        recompute=recompute,
        flash=flash,
        lora=lora,
        lora_targets=lora_targets,
        qlora=qlora,
        overhead=overhead,
    )
    return planner.plan(context, batch, why=why)
