"""A context longer than the model was built or trained for: refused, or planned with a warning.

The limit is the config's ``max_position_embeddings`` (or ``n_positions``, …) or a GGUF file's
``context_length`` (:func:`paramcount.memory.core.limits.max_positions`). Past it:

* A model with a table of learned positions (BERT's ``position_embeddings``, GPT-2's ``wpe``,
  BART's ``embed_positions``, a GGUF ``position_embd``) has no row for the extra tokens: no
  runtime can run it, and the plan is refused in one line.
* Other positions (rotary, ALiBi, relative) have no table, so the runtime runs the longer
  context, past what the model was trained on. llama.cpp logs "n_ctx_seq > n_ctx_train --
  possible training context overflow" (``llama_context::llama_context``) and runs; its YaRN
  flags (``--rope-scaling yarn --rope-scale F --yarn-orig-ctx N``) are what extend the trained
  context. transformers runs it as well; ``rope_scaling`` in config.json extends it. The plan
  is made, with a note saying so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ...errors import ParamcountError
from ...model import Model

LEARNED = frozenset({"wpe", "position_embeddings", "embed_positions", "position_embd"})


@dataclass(frozen=True)
class Limit:
    """A model's context limit, the metadata field that states it, and whether its positions
    are a learned table."""

    tokens: int | None
    field: str
    learned: bool

    @staticmethod
    def of(model: Any) -> Limit:

        def build() -> Limit:
            limit = max_positions(model)
            return Limit(limit, _field(model, limit), limit is not None and _learned_positions(model))

        return model.derived("limit", build)

    def check(self, context: int, runtime: str) -> tuple[str, ...]:
        """The notes a plan at ``context`` carries, or a one-line error when it cannot run."""
        limit = self.tokens
        if limit is None or context <= limit:
            return ()
        if self.learned:
            raise ParamcountError(
                f"{context:,} tokens is past the model's {limit:,} learned positions ({self.field}); "
                "no runtime can run it: plan at most that many (--context)",
                field="--context",
            )
        ratio = -(-context // limit)
        if runtime == "llama.cpp":
            how = (
                "llama.cpp runs it with a warning (n_ctx_seq > n_ctx_train: possible training context overflow); "
                f"--rope-scaling yarn --rope-scale {ratio} --yarn-orig-ctx {limit} extends the trained context"
            )
        elif runtime == "vllm":
            how = (
                "vLLM refuses a --max-model-len past the derived limit (_get_and_verify_max_len, "
                "vllm/config/model.py) unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set; --hf-overrides with "
                f"rope_scaling (yarn, factor {ratio}) extends the trained context"
            )
        elif runtime == "mlx":
            how = (
                "mlx_lm.generate runs it (it checks no position limit; RoPE has no table); "
                f'rope_scaling {{"type": "yarn", "factor": {ratio}}} in config.json extends the trained context'
            )
        else:
            how = (
                "transformers runs it (its positions have no table); "
                f'rope_scaling {{"rope_type": "yarn", "factor": {ratio}}} in config.json extends the trained context'
            )
        return (f"{context:,} tokens is past the model's {self.field} of {limit:,}: {how}",)


def _field(model: Any, limit: int | None) -> str:
    """The metadata field that states the limit (``n_positions`` for GPT-2, …)."""
    if getattr(model, "class_name", "") == "GGUF":
        return "context_length"
    config = dict(getattr(model, "config", None) or {})
    text = config.get("text_config")
    for source in (config, text if isinstance(text, dict) else {}):
        for key in POSITION_FIELDS:
            if source.get(key) == limit:
                return key
    return "position limit"


def _learned_positions(model: Any) -> bool:
    from ...slots import slots

    tree = getattr(model, "tree", None)
    if tree is None:
        return False
    return any(s.module in LEARNED and s.tie is None for s in slots(tree, getattr(model, "model_type", "")))


UINT32 = (1 << 32) - 1
POSITION_FIELDS = (
    "max_position_embeddings",
    "n_positions",
    "max_sequence_length",
    "seq_length",
    "n_ctx",
    "context_length",
)


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
    configs = (model.config or {}, text if isinstance(text, Mapping) else {})
    for config in configs:
        for name in POSITION_FIELDS:
            value = config.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    # A config that leaves it out gets its class's default, from transformers as from llama.cpp's
    # converter (conversion/base.py load_hparams reads configs through AutoConfig).
    defaults = _default_positions()
    types = [model.model_type, *(c.get("model_type") for c in configs[1:])]
    return next((defaults[t] for t in types if isinstance(t, str) and t in defaults), None)


@cache
def _default_positions() -> dict[str, int]:
    from importlib import resources

    return json.loads((resources.files("paramcount") / "arch" / "config_positions.json").read_text())
