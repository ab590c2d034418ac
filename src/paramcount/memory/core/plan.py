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
from .limits import max_positions
from .terms import GB, GIB, Term

SCHEMA = "paramcount.memory/1"
DEFAULT_CONTEXT = 4096  # when neither the caller nor a smaller model limit says otherwise
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
        """The JSON document, schema ``paramcount.memory/1`` (see docs/json.md, "Memory and fit")."""
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
        **({"error": dict(t.error)} if t.error else {}),
    }


def model_dict(model: Model) -> dict[str, Any]:
    return {"name": model.name, "source": model.source, "class": model.class_name, "parameters": model.total}


# ---- settings ---------------------------------------------------------------------------------


def as_model(model: Any) -> Model:
    """The model a planner is given: planners take a counted :class:`~paramcount.model.Model`
    (``paramcount.load(source)``); the CLI, the page and the caller resolve sources."""
    if not isinstance(model, Model):
        raise TypeError(f"plan a paramcount Model (paramcount.load(source)), not a {type(model).__name__}")
    return model


def positive(value: Any, field: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParamcountError(f"expected an integer ≥ {low}, got {value!r}", field=field)
    return value


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


def activation_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ParamcountError(f"activations are fp32, fp16 or bf16, not {dtype!r}", field="--dtype")
    return DTYPE_BYTES[dtype]
