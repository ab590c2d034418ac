"""Inference memory as transformers on PyTorch allocates it: weights, KV cache, the forward's
working set, image and audio encoders, and the CUDA context and allocator's reserve."""

from __future__ import annotations

from typing import Any

from ....errors import ParamcountError
from ....model import Model
from ...context.kv_layout import layout_of
from ...core import overhead as _overhead
from ...core.limits import Limit
from ...core.plan import DTYPE_BYTES, Plan, activation_bytes, positive
from ...core.terms import Term
from ...tree.widths import shape_widths
from ...weights.dtype import compute_dtype, default_scheme


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
        from ...context.audio import audio as audio_input
        from ...context.images import images as image_input
        from ...core.gpus import gpu as find_gpu
        from ...weights.base import scheme as find
        from ...weights.schemes import weights
        from ...weights.stored import is_checkpoint
        from .attention import attending
        from .config_quant import config_method, config_weights, quant_config
        from .loading import dequantised, loading, shapes_note

        self.model = model
        self.images = image_input(model, images, image_size)  # their tokens join every sequence's context
        self.audio = audio_input(model, audio)  # and so do the clip's
        self._encoder_terms: dict[int, tuple[Term, ...]] = {}
        card = find_gpu(gpu) if gpu is not None else None
        # a config's quantization_config, no --dtype: what transformers loads for it (config_quant)
        from_config = scheme is None and not is_checkpoint(model) and quant_config(model) is not None
        self.from_config = None  # the quantization_config's method and what transformers does with it
        if from_config:
            w, self.loaded = config_weights(model, card, keep, pure)
            self.scheme = w.scheme
            self.from_config = config_method(model, self.loaded)
        else:
            self.scheme = find(scheme or default_scheme(model)).name
            w = weights(model, self.scheme, keep=keep, pure=pure)
            self.loaded = loading(model, card) if self.scheme == "stored" else None  # the quantization_config
        self.dtype = compute_dtype(self.scheme, model)
        self.kv_dtype = kv_dtype or self.dtype
        self.cache = {"cache": cache, "encoder_length": encoder_length, "mla": mla}
        self.overhead = _overhead.parse(overhead) if overhead is not None else _overhead.MEASURED
        if self.loaded and self.loaded.kept is False and not from_config:
            w = dequantised(w, self.loaded.why)
        self.keep = ",".join(w.keep) or "none"
        self.unquantised = w.unquantised()
        self.weights = w.term()
        self.stored_as = w.options if self.scheme == "stored" else None
        self.layout, self.partial = layout_of(model, mla)
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
        shapes = None if is_checkpoint(model) or from_config else shapes_note(model, card, self.scheme)
        self.quant_notes = (self.loaded.why,) if self.loaded else (shapes,) if shapes else ()
        if from_config and w.bound and not (self.loaded and self.loaded.kept is None):  # else its line says so
            self.quant_notes += (f"weights an estimate: {w.note.partition('an estimate: ')[2]}",)

    def plan(self, context: int, batch: int = 1, why: str = "--context") -> Plan:
        from ...context.kv_cache import kv_cache

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
        again, scores = self._cached_again(seen, batch)
        again += self._tied_again(rest - self._own(seen, batch, scores))
        covered = "KV cache + activations"
        extra = self.overhead.split_term(self.weights.bytes, rest - scores, covered, again)
        settings = self._settings(cache.dtype, cache.cache, context, why, batch)
        notes = (*warned, *cache.notes, *self._media_notes(), *self.quant_notes)
        return Plan(self.model, "inference", (*base, extra), settings, notes, planner=self)

    def _activations(self, seen: int, batch: int) -> Term:
        from .working_set import activations

        b = activation_bytes(self.dtype)
        storage = self._sliding_storage(seen, batch)
        return activations(self.model, seen, batch, b, self.dtype, self.widths, self.attending, storage)

    def _cached_again(self, seen: int, batch: int) -> tuple[tuple[Term, ...], int]:
        """Eager bf16 attention's cached score blocks under the measured overhead, and the scores'
        own bytes (one call's), which the reserve's share then leaves out: the blocks are their
        own term; the math kernel's scores, whose blocks the allocator reuses whole, leave it too
        (:func:`~.attention.exact_blocks`). A fixed-and-percent ``--overhead`` takes its share of
        everything instead."""
        from .attention import cached_again, exact_again, per_call

        a, b = self.attending, activation_bytes(self.dtype)
        k = a.kernel(seen, self.dtype) if a and isinstance(self.overhead, _overhead.Measured) else None
        again = cached_again(k, batch, seen, a.heads, b, a.sinks, self.dtype, a.path) if k else None
        again = again or (exact_again(k, batch, seen, a.heads) if k else None)
        if again is None:
            return (), 0
        return (again,), per_call(k, batch, seen, a.heads, b, a.sinks, self.dtype, a.path)

    def _own(self, seen: int, batch: int, scores: int) -> int:
        """What of one attention call's bytes reserves segments of its own, reused whole by every
        layer (:func:`~.attention.exact_blocks`): not served from the tied output's freed block."""
        from .attention import exact_blocks

        a = self.attending
        return scores if scores and exact_blocks(a.kernel(seen, self.dtype)) else 0

    def _tied_again(self, rest: int) -> tuple[Term, ...]:
        """The tied output layer's freed block under the measured overhead, for unquantised weights
        (:func:`~paramcount.memory.core.overhead.tied_output_cached`); none without a tie."""
        if not isinstance(self.overhead, _overhead.Measured) or self.scheme not in DTYPE_BYTES:
            return ()
        if not hasattr(self, "_tied"):  # once per planner: a fit's searches ask for hundreds of totals
            self._tied = sum(n for name, _, n in self.model.ties() if name.split(".")[-2:-1] == ["lm_head"])
        return (_overhead.tied_output_cached(self._tied * DTYPE_BYTES[self.scheme], rest),) if self._tied else ()

    def _sliding_storage(self, context: int, batch: int) -> int:
        """Bytes the sliding-window layers hold beyond their window after a prefill of ``context``
        tokens: DynamicSlidingWindowLayer.update keeps ``full[:, :, -W+1:]``, a view that holds the
        whole concatenated keys and values until the next step (a static cache writes in place)."""
        from ...context.kv_cache import sliding_overhang

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
            **({"quantization_config": self.from_config} if self.from_config else {}),
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
        from ...context.kv_cache import kv_bytes

        context, batch = positive(context, "--context"), positive(batch, "--batch")
        if self.partial:
            self.limit.check(context, "transformers")
            return self.weights.bytes + self.overhead.split(self.weights.bytes, 0)
        seen = context + self._media_tokens()
        self.limit.check(seen, "transformers")  # past a learned position table: refused as plan() does
        kv = kv_bytes(self.model, seen, batch, self.kv_dtype, **self.cache, layout=self.layout)
        act = self._activations(seen, batch).bytes
        rest = kv + act + sum(t.bytes for t in self._encoders(batch))
        again, scores = self._cached_again(seen, batch)
        again += self._tied_again(rest - self._own(seen, batch, scores))
        extra = self.overhead.split(self.weights.bytes, rest - scores) + sum(t.bytes for t in again)
        return self.weights.bytes + rest + extra
