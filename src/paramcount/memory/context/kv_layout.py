"""The KV-cache layout of a counted model: its family's (:mod:`paramcount.arch.cache`) read
from its config, or llama.cpp's for a GGUF file (:mod:`paramcount.gguf.kv`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...arch import family
from ...arch.cache import BUILDERS, MLA_FORMS, Layout, NoLayout
from ...arch.config import Cfg
from ...errors import ParamcountError
from ...model import Model
from ..core.plan import as_model


def attention_layout(model: Any, *, mla: str = "latent") -> Layout:
    """The KV-cache layout of ``model`` (a :class:`~paramcount.model.Model`, or a printout's).
    ``mla`` picks the MLA form: ``"latent"`` (transformers 5, vLLM, SGLang) or ``"expanded"``
    (per-head keys and values)."""
    model = _model_of(model)
    if mla not in MLA_FORMS:
        raise ParamcountError(f"unknown MLA cache form {mla!r}; choose one of: {', '.join(MLA_FORMS)}", field="mla")
    if model.class_name == "GGUF":
        from ...gguf.kv import gguf_layout

        return gguf_layout(model, mla)
    c = cfg_of(model)
    builder = BUILDERS.get(model.model_type) or family(model.model_type, model.source).cache_layout
    if builder is None:
        raise NoLayout(f"no KV-cache layout for model_type {model.model_type!r}", source=model.source)
    kinds, notes = builder(c, model.model_type, model.class_name, mla)
    form = mla if any(k.stores.startswith("mla-") for k in kinds) else None
    return Layout(model.name, model.model_type, tuple(kinds), tuple(notes), form)


def _model_of(model: Any) -> Model:
    if isinstance(getattr(model, "model", None), Model):  # a Printout wraps its Model
        return model.model
    return as_model(model)


def cfg_of(model: Any) -> Cfg:
    """The model's config seen through its family, or an error for a model without one."""
    from ...frontends.config import is_native

    if not model.config or model.model_type in ("unknown", "module"):
        raise NoLayout(
            "the KV cache needs the model's transformers config (config.json): this model was read "
            "without one; put config.json beside the weights, or load its config or catalog name instead",
            source=model.source,
        )
    if getattr(model, "counted_by", "paramcount") != "paramcount" or not is_native(model.model_type):
        how = f"it was counted by {model.counted_by}" if model.counted_by != "paramcount" else "it was read"
        raise NoLayout(
            f"no KV-cache layout for {model.model_type!r}: {how} without a native paramcount family, "
            "so its attention layout is not known here",
            source=model.source,
        )
    return family(model.model_type, model.source).cfg(model.config, model.source)


def layout_of(model: Model, mla: str) -> tuple[Any, str | None]:
    """The model's KV-cache layout and None, or None and why it has none (a printout, a bare
    checkpoint, an unmapped GGUF architecture)."""

    def build() -> tuple[Any, str | None]:
        try:
            return attention_layout(model, mla=mla), None
        except NoLayout as e:
            return None, str(e)

    return model.derived(("layout", mla), build)


def attention_heads(model: Model) -> int | None:
    """The most query heads any attention layer has: a GGUF file's ``head_count``, a config's
    ``num_attention_heads`` (its text model's, for a composite); None where neither says."""
    if model.class_name == "GGUF":
        from ...gguf.meta import metadata

        return max(metadata(model).per_layer("attention.head_count", 0)) or None
    config = dict(model.config or {})
    text = config.get("text_config")
    for source in (config, text if isinstance(text, Mapping) else {}):
        for key in ("num_attention_heads", "n_head", "num_heads"):
            v = source.get(key)
            if isinstance(v, list) and v:
                v = max(v)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    return None
