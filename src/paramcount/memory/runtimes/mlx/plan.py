"""MLX's memory plan: weights, KV cache and the peak of one ``mlx_lm.generate`` run.

A plan is one sequence (mlx_lm.generate runs one) of ``--prompt`` tokens grown to ``--context``
(prompt + generated; the prompt defaults to the whole context). Its terms are the weights
(:mod:`.quant`, exact), the KV cache when the sequence holds ``--context`` tokens (:mod:`.cache`,
exact) and the working set above both at the peak (:mod:`.peak`, an estimate); they sum to the
peak ``mx.get_peak_memory()`` reports, MLX arrays only (not the Python process, not Metal's
residency sets). The settings are mlx-lm's own: ``--max-kv-size``, ``--kv-bits``,
``--kv-group-size``, ``--quantized-kv-start``, ``--prefill-step-size``; ``--device cpu`` plans
MLX's CPU backend (the attention fallback), else an Apple GPU (the fused Metal kernels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....errors import ParamcountError
from ....model import Model
from ....slots import slots
from ...core.terms import Term
from . import cache as kv
from . import peak as pk
from .quant import FLOATS, SRC_QUANT, Quant, mlx_paths, scheme, setting, tensor_bytes

MLX_VERSION = "mlx 0.32.4, mlx-lm 0.32.2"
# mlx-lm's module for each model_type planned, and whether its Model.make_cache sets the caches
# itself (ignoring max_kv_size): mlx_lm/models/llama.py, gemma3_text.py have one; qwen2.py,
# qwen3.py and qwen3_moe.py use make_prompt_cache's. Mistral is mlx-lm's llama (MODEL_REMAPPING).
FAMILIES = {"llama": True, "mistral": True, "gemma3_text": True, "qwen2": False, "qwen3": False, "qwen3_moe": False}
FUSED_CHUNK = frozenset({64, 72, 80, 96, 128, 192, 256})  # has_fused_kernel, query length > 8
FUSED_TOKEN = frozenset({64, 96, 128, 192, 256})  # sdpa_vector
DEVICES = ("gpu", "cpu")


@dataclass(frozen=True)
class Options:
    """mlx_lm.generate's settings (its flag names) and the device MLX runs on."""

    prompt: int | None = None
    max_kv_size: int | None = None
    kv_bits: int | None = None
    kv_group_size: int = 64
    quantized_kv_start: int = 5000
    prefill_step_size: int = 2048
    device: str = "gpu"


def options(**given: Any) -> Options:
    """Options from keyword arguments, each checked, naming its flag when bad."""
    flags = {
        "prompt": ("--prompt", 1),
        "max_kv_size": ("--max-kv-size", 1),
        "kv_bits": ("--kv-bits", 1),
        "kv_group_size": ("--kv-group-size", 1),
        "quantized_kv_start": ("--quantized-kv-start", 0),
        "prefill_step_size": ("--prefill-step-size", 1),
    }
    other = sorted(k for k, v in given.items() if k not in (*flags, "device") and v is not None and v is not False)
    if other:
        flag = "--" + other[0].replace("_", "-")
        raise ParamcountError(f"{flag} is not an MLX setting", field=flag)
    out: dict[str, Any] = {}
    for key, (flag, low) in flags.items():
        v = given.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 1 << 24:
            raise ParamcountError(f"{flag} takes a whole number from {low} to {1 << 24:,}, got {v!r}", field=flag)
        out[key] = v
    if out.get("kv_bits") is not None and out["kv_bits"] not in (2, 3, 4, 5, 6, 8):
        raise ParamcountError(f"--kv-bits is 2, 3, 4, 5, 6 or 8 (mx.quantize), not {out['kv_bits']}", field="--kv-bits")
    device = given.get("device") or "gpu"
    if device not in DEVICES:
        raise ParamcountError(f"MLX runs on the gpu (Metal) or the cpu, not {device!r}", field="--device")
    return Options(**out, device=device)


def _int(c: Mapping[str, Any], key: str, default: int | None = None) -> int:
    v = c.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ParamcountError(f"expected a positive integer, got {v!r}", field=key)
    return v


class MlxPlanner:
    """Plans of one model under mlx-lm for any context (``fit`` searches over these)."""

    runtime = "mlx"
    one_sequence = True  # mlx_lm.generate runs one; fit searches no batch

    def __init__(
        self,
        model: Model,
        scheme_name: str | None = None,
        kv_dtype: str | None = None,
        overhead: Any = None,
        *,
        group_size: int | None = None,
        **given: Any,
    ):
        if overhead is not None:
            raise ParamcountError(
                "MLX's peak is its arrays' bytes: --overhead is not an MLX setting", field="--overhead"
            )
        if kv_dtype is not None:
            raise ParamcountError("MLX's cache is in the activation dtype, or --kv-bits", field="--kv-dtype")
        if model.class_name == "GGUF":
            raise ParamcountError("mlx-lm loads a safetensors folder, not a GGUF file", field="--runtime")
        if model.model_type not in FAMILIES:
            raise ParamcountError(
                f"the MLX plan covers {', '.join(FAMILIES)}; not {model.model_type!r}", field="--runtime"
            )
        from ...weights.stored import is_checkpoint

        self.model = model
        self.config = dict(model.config or {})
        self.o = options(**given)
        self.q: Quant = scheme(scheme_name, self.config, group_size)
        # a folder's safetensors hold the weights as MLX loads them (packed words, scales, biases);
        # another scheme is planned over the config's tree
        self.files = is_checkpoint(model) and (scheme_name or "stored").strip().lower() == "stored"
        self.tree = _config_model(model) if is_checkpoint(model) else model
        self.b = FLOATS[self.q.base]
        self.widths = _widths(self.config, model.model_type)
        self.kinds = self._kinds()
        self.s = kv.KvSettings(
            self.b, self.o.kv_bits, self.o.kv_group_size, self.o.quantized_kv_start, self.o.prefill_step_size
        )
        self._check_kv()
        self.weights_bytes, self.quantised_bytes = self._weights()

    # ---- weights ----------------------------------------------------------------------------

    def _weights(self) -> tuple[int, int]:
        """(all weights, the quantised modules' share) in bytes, tensor by tensor (a layer's
        settings may differ: the config's per-module entries); a folder's as its files hold them."""
        if self.files:
            from ...weights.stored import stored_weights

            rows = stored_weights(self.model).rows
            return sum(r.bytes for r in rows), sum(r.bytes for r in rows if _packed(r))
        total = quantised = 0
        for s in slots(self.tree.tree, self.model.model_type):
            layers = list(s.layers) if s.layers is not None else [None]
            for layer in layers:
                paths = mlx_paths(s, layer)
                for path in paths:  # fused gate_up: mlx-lm's gate_proj and up_proj, half each
                    chosen = setting(self.q, s, path, self.model.model_type)
                    n = tensor_bytes(s, chosen, self.b) * s.per_layer // len(paths)
                    total += n
                    quantised += n if chosen else 0
        return total, quantised

    def weights_term(self) -> Term:
        q = self.q
        how = (
            f"{q.name} group {q.group}: every Linear, Embedding and expert projection whose input width is a "
            f"multiple of the group as out·in·{q.bits}/8 B + 2·out·(in/{q.group})·{self.b} B (uint32-packed weights, "
            f"scales and biases in {q.base}); norms, biases and the rest whole in {q.base}; a tied head once"
            if q.bits
            else f"every tensor in {q.base}; a tied head once"
        )
        if self.files:
            how = f"as the folder's safetensors hold them ({self.model.source}): every tensor's stored bytes"
        elif q.stored:
            how += "; as the folder's config.json quantization block states (its per-module entries included)"
        if q.bits and self.model.model_type == "qwen3_moe" and not q.stored:
            how += "; the router (mlp.gate) at 8 bits, group 64 (Qwen3-MoE's quant_predicate)"
        formula = f"{self.quantised_bytes:,} B quantised + {self.weights_bytes - self.quantised_bytes:,} B whole"
        return Term("weights", f"weights ({q.name})", self.weights_bytes, formula, how, False, SRC_QUANT)

    # ---- KV cache -----------------------------------------------------------------------------

    def _kinds(self) -> tuple[kv.Kind, ...]:
        """The caches make_cache (or make_prompt_cache) gives each layer, grouped."""
        c, w = self.config, self.widths
        n_kv = _int(c, "num_key_value_heads", _int(c, "num_attention_heads"))
        d = w.query // w.heads
        layers = w.layers
        sliding = _sliding_layers(c, self.model.model_type, layers)
        if FAMILIES[self.model.model_type]:
            window = c.get("sliding_window") or 512  # gemma3_text.py ModelArgs.sliding_window's default
            kinds = [kv.Kind(layers - len(sliding), n_kv, d, d, None, 0, (layers - 1) not in sliding)]
            if sliding:
                kinds.append(kv.Kind(len(sliding), n_kv, d, d, _int({"w": window}, "w"), 0, (layers - 1) in sliding))
            return tuple(k for k in kinds if k.layers)
        if self.o.max_kv_size is not None:
            return (kv.Kind(layers, n_kv, d, d, self.o.max_kv_size, 4, True),)
        return (kv.Kind(layers, n_kv, d, d, None, 0, True),)

    def _check_kv(self) -> None:
        """What mlx-lm itself refuses: a quantised rotating cache, a head width the group does not divide."""
        if self.o.kv_bits is None:
            return
        if any(k.max_size is not None for k in self.kinds):
            raise ParamcountError(
                "mlx-lm cannot quantise a rotating (sliding-window or --max-kv-size) cache: "
                "RotatingKVCache.to_quantized raises NotImplementedError",
                field="--kv-bits",
            )
        d = self.kinds[0].key_dim
        if d % self.o.kv_group_size:
            raise ParamcountError(
                f"mx.quantize needs the head dim ({d}) to be a multiple of --kv-group-size {self.o.kv_group_size}",
                field="--kv-group-size",
            )

    def kv_term(self, context: int, prompt: int) -> Term:
        states = kv.final_states(self.kinds, self.s, prompt, context)
        n = kv.kv_bytes(self.kinds, self.s, states)
        parts = []
        for k, st in zip(self.kinds, states, strict=True):
            per = kv.slot_bytes(k, self.s, st.quantised)
            label = f"{k.layers} layers, " + (f"rotating (max {k.max_size:,})" if k.max_size else "KVCache")
            parts.append(f"{label}: {st.size:,} slots × {per:,} B")
        how = (
            f"one sequence of {context:,} tokens ({prompt:,} prompt); buffers grow by 256 slots "
            f"(KVCache.step), prefill in chunks of {self.o.prefill_step_size:,}"
        )
        if self.o.kv_bits:
            how += (
                f"; quantised to {self.o.kv_bits} bits, group {self.o.kv_group_size}, once the offset reaches "
                f"{self.o.quantized_kv_start:,}"
            )
        if FAMILIES[self.model.model_type] and self.o.max_kv_size is not None:
            how += f"; --max-kv-size ignored: mlx-lm's {self.model.model_type} Model.make_cache sets the caches"
        label = f"KV cache ({context:,} tokens)"
        return Term("kv_cache", label, n, " + ".join(parts) + f" = {n:,} B", how, False, kv.SRC_CACHE)

    # ---- peak --------------------------------------------------------------------------------

    def _fused(self, chunk: int) -> bool:
        d = self.kinds[0].key_dim
        return self.o.device == "gpu" and d in (FUSED_CHUNK if chunk > 8 else FUSED_TOKEN)

    def peak(self, context: int, prompt: int) -> tuple[int, str]:
        """The peak above the weights, and the call that sets it."""
        states = [kv.State() for _ in self.kinds]
        best, where = 0, ""
        for n, times in kv.calls(prompt, context, self.o.prefill_step_size):
            old = during = 0
            for k, st in zip(self.kinds, states, strict=True):
                kv.run(k, st, self.s, n, times - 1)  # the run's last call holds the most
                was = st.quantised  # a call attends over the cache as it was; quantised after it
                grown = kv.run(k, st, self.s, n, 1)
                old = max(old, grown * kv.slot_bytes(k, self.s, was))
                during += k.layers * st.size * kv.slot_bytes(k, self.s, was)
            total = during + old + self._work(n, states)
            if total > best:
                at = f"{'a chunk of' if n > 1 else 'a call of'} {n:,} tokens at {states[0].offset:,}"
                best, where = total, at
        return best, where

    def _work(self, n: int, states: list[kv.State]) -> int:
        """The call's working set: at the layer with the most keys among those it evaluates."""
        w, fused = self.widths, self._fused(n)
        if n == 1:
            keys = max(min(st.offset, st.size) for st in states)
            return pk.token_bytes(w, keys, self.b, fused)
        best = 0
        for k, st in zip(self.kinds, states, strict=True):
            if k.layers - k.last < 1:
                continue  # its only layer is the last, whose attention a chunk never evaluates
            keys = st.size if k.max_size is not None else st.offset
            scores, mask, rest = pk.chunk_bytes(w, n, keys, self.b, fused, k.max_size is not None)
            best = max(best, scores + mask + rest)
        return best or n * w.per_token(self.b)

    def plan(self, context: int, batch: int = 1, why: str = "--context") -> Any:
        from ...core.plan import Plan, positive

        context = positive(context, "--context")
        if batch != 1:
            raise ParamcountError("mlx_lm.generate runs one sequence: --batch 1", field="--batch")
        prompt = self.o.prompt or context
        if (prompt - 1) // self.o.prefill_step_size > kv.MAX_CHUNKS:
            raise ParamcountError(
                f"{prompt:,} prompt tokens in chunks of {self.o.prefill_step_size:,} are more than the "
                f"{kv.MAX_CHUNKS:,} chunks planned here: raise --prefill-step-size",
                field="--prefill-step-size",
            )
        if prompt > context:
            raise ParamcountError(
                f"--prompt ({prompt:,}) is longer than --context ({context:,}), the length the sequence reaches",
                field="--prompt",
            )
        from ...core.limits import Limit

        warned = Limit.of(self.model).check(context, "mlx")
        weights, cache = self.weights_term(), self.kv_term(context, prompt)
        above, where = self.peak(context, prompt)
        rest = above - cache.bytes
        work = Term(
            "activations",
            f"working set at the peak ({self.o.device})",
            rest,
            f"peak {weights.bytes + above:,} B − weights − KV cache = {rest:,} B (at {where})",
            self._work_said(),
            True,
            pk.SRC_PEAK,
        )
        settings = self._settings(context, prompt, why)
        notes = (*warned, *self._notes())
        return Plan(self.model, "inference", (weights, cache, work), settings, notes, planner=self)

    def total(self, context: int, batch: int = 1) -> int:
        return self.plan(context, batch).total

    def _work_said(self) -> str:
        path = (
            "the fused Metal kernels (no H_q × C × K scores)"
            if self.o.device == "gpu"
            else "the CPU fallback: H_q × C × K scores in the activation dtype and a C × K bool mask"
        )
        return (
            f"attention through {path}, for every layer but the last in a prefill chunk; per chunk token "
            f"{pk.HIDDEN_BYTES} B·hidden + ({pk.QUERY}·q + {pk.KEYVALUE}·kv + {pk.MLP}·MLP widths) × dtype of "
            "intermediates (measured on mlx 0.32's CPU backend); the cache's old buffer while it grows; "
            "mx.get_peak_memory counts MLX arrays only"
        )

    def _settings(self, context: int, prompt: int, why: str) -> dict[str, Any]:
        o = self.o
        return {
            "runtime": "mlx",
            "runtime_version": MLX_VERSION,
            "scheme": self.q.name,
            "group_size": self.q.group if self.q.bits else None,
            "dtype": self.q.base,
            "context": context,
            "context_from": why,
            "prompt": prompt,
            "batch": 1,
            "kv_dtype": self.q.base if o.kv_bits is None else f"{o.kv_bits}-bit (group {o.kv_group_size})",
            "kv_cache": "mlx-lm",
            "max_kv_size": o.max_kv_size,
            "kv_bits": o.kv_bits,
            "kv_group_size": o.kv_group_size,
            "quantized_kv_start": o.quantized_kv_start,
            "prefill_step_size": o.prefill_step_size,
            "device": o.device,
        }

    def _notes(self) -> tuple[str, ...]:
        notes = ["total: the peak mx.get_peak_memory() reports (MLX arrays only, not the Python process)"]
        if self.o.device == "gpu":
            notes.append("Apple GPU: the fused attention is modelled from MLX's Metal kernels, not measured here")
        return tuple(notes)


def _config_model(model: Model) -> Model:
    """The model its config.json describes (a folder's safetensors may hold MLX's packed tensors)."""
    from ....frontends.config import from_config

    return from_config(model.config, model.source, model_class=model.class_name)


def _packed(row: Any) -> bool:
    """A stored row of MLX's quantised layout: uint32 words, or their scales and biases."""
    return any(p.dtype in ("uint32", "U32") or p.what in ("scales", "biases") for p in getattr(row, "parts", ()))


def _widths(c: Mapping[str, Any], model_type: str) -> pk.Widths:
    heads = _int(c, "num_attention_heads")
    hidden = _int(c, "hidden_size")
    d = c.get("head_dim") or hidden // heads
    n_kv = _int(c, "num_key_value_heads", heads)
    mlp = _int(c, "intermediate_size")
    if model_type == "qwen3_moe" and c.get("num_experts"):
        mlp = _int(c, "num_experts_per_tok") * _int(c, "moe_intermediate_size")
    qk_norm = model_type in ("qwen3", "qwen3_moe", "gemma3_text")
    layers = _int(c, "num_hidden_layers")
    norms = 4 if model_type == "gemma3_text" else 2  # gemma3_text.py TransformerBlock: pre/post attention and MLP
    return pk.Widths(hidden, norms, heads * d, n_kv * d, mlp, qk_norm, heads, _int(c, "vocab_size"), layers)


def _sliding_layers(c: Mapping[str, Any], model_type: str, layers: int) -> set[int]:
    """The layers mlx-lm gives a rotating cache of the window: Gemma 3 all but every
    ``sliding_window_pattern``-th (gemma3_text.py Model.make_cache), Llama those its ``layer_types``
    marks sliding (llama.py; Mistral's bare ``sliding_window`` is not read)."""
    if model_type == "gemma3_text":
        p = _int(c, "sliding_window_pattern", 6)
        return {i for i in range(layers) if i % p != p - 1}
    types = c.get("layer_types")
    if model_type in ("llama", "mistral") and isinstance(types, list) and len(types) == layers:
        return {i for i, t in enumerate(types) if t == "sliding_attention"}
    return set()
