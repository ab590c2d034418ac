"""Reading a family's config fields: defaults, legacy names, types and bounds in one place."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from functools import cache, wraps

from ..errors import ParamcountError, brief
from ..ir import Sym

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any

# The letters a derivation writes for each config field (the seed articles' own where they have one).
SYMBOLS = {
    "vocab_size": "V",
    "hidden_size": "h",
    "n_embd": "h",
    "d_model": "h",
    "dim": "h",
    "embedding_size": "E_emb",
    "num_hidden_layers": "L",
    "n_layer": "L",
    "num_layers": "L",
    "encoder_layers": "L_enc",
    "decoder_layers": "L_dec",
    "num_decoder_layers": "L_dec",
    "intermediate_size": "I",
    "n_inner": "I",
    "d_ff": "I",
    "ffn_dim": "I",
    "encoder_ffn_dim": "I_enc",
    "decoder_ffn_dim": "I_dec",
    "hidden_dim": "I",
    "num_attention_heads": "a",
    "n_head": "a",
    "num_heads": "a",
    "encoder_attention_heads": "a_enc",
    "decoder_attention_heads": "a_dec",
    "num_key_value_heads": "a_kv",
    "head_dim": "d_head",
    "d_kv": "d_head",
    "max_position_embeddings": "P",
    "n_positions": "P",
    "type_vocab_size": "T",
    "num_labels": "C",
    "num_local_experts": "E",
    "num_experts": "E",
    "n_routed_experts": "E",
    "n_shared_experts": "E_s",
    "num_experts_per_tok": "k",
    "moe_intermediate_size": "I_e",
    "shared_expert_intermediate_size": "I_s",
    "q_lora_rank": "r_q",
    "kv_lora_rank": "r_kv",
    "qk_rope_head_dim": "d_rope",
    "qk_nope_head_dim": "d_nope",
    "v_head_dim": "d_v",
    "num_hidden_groups": "G",
    "rotary_dim": "d_rot",
}

MAX_DIM = 1 << 26  # 67,108,864: far above any real width or vocabulary
# Depth has its own bound: some outputs are per layer (a llama.cpp mix's types, --json's tensor
# list, diff), so every command must finish in seconds at it. Real models have at most a few
# hundred layers; tests/test_bounds.py runs every command here.
MAX_LAYERS = 1 << 12  # 4,096
# A ratio that divides (pixel shuffles' 1 / ratio, per side) stays at least this: 1 / 1,024 folds
# a million patches into one token, far past any real tower (0.5 in every config seen), and keeps
# 1 / ratio² an exact float; a multiplier of a width (mlp_ratio) at most its inverse.
MIN_RATIO = 1 / 1024
MAX_FACTOR = 1024.0


@cache  # a few dozen field names, asked on every count
def is_depth(field: str) -> bool:
    """A field that counts layers (``num_hidden_layers``, ``n_layer``, ``decoder_layers``)."""
    last = field.rsplit(".", 1)[-1]
    return last.endswith(("layers", "layer")) and "size" not in last


class Cfg:
    """A config dict seen through one family's defaults and legacy field names.

    ``aliases`` maps a field to other names it may appear under in a file (checked in
    order, the canonical name first), as transformers' ``attribute_map`` and legacy
    keyword arguments do.
    """

    def __init__(
        self,
        raw: Mapping[str, Any],
        defaults: Mapping[str, Any],
        source: str | None = None,
        aliases: Mapping[str, tuple[str, ...]] | None = None,
        prefix: str = "",
    ):
        self.raw = raw
        self.defaults = defaults
        self.source = source
        self.aliases = aliases or {}
        self.prefix = prefix  # "text_config." for a sub-config: errors name the field in the file
        self.seen: set[str] = set()  # every name looked up, to tell which given fields mattered
        self._ints: dict[tuple, Sym] = {}  # builders ask for the same few fields many times
        # A composite's class and backbone builders both ask for its towers: built once per
        # count (trees never change, so the class and backbone trees share them).
        self.memo: dict[tuple, Any] = {}

    def error(self, field: str, message: str) -> ParamcountError:
        return ParamcountError(message, source=self.source, field=self.prefix + field)

    def sub(
        self,
        field: str,
        defaults: Mapping[str, Any],
        aliases: Mapping[str, tuple[str, ...]] | None = None,
        legacy: str | None = None,
        absent: Mapping[str, Any] | None = None,
    ) -> Cfg:
        """A nested config (``text_config``, ``vision_config``) through its own class's defaults:
        absent or null is the composite's own ``absent`` fields over them (transformers'
        ``SubConfigSpec.init_kwargs``, used only then); ``legacy`` names an older field whose
        values win (CLIP's ``text_config_dict``)."""
        # Builders ask for a tower's config more than once per count. Keyed by the mappings'
        # identities, which the entry keeps alive (so no other mapping can take their ids).
        key = ("sub", field, id(defaults), id(aliases), legacy, id(absent))
        if key in self.memo:
            return self.memo[key][0]
        merged: dict[str, Any] = dict(absent or {}) if self.raw.get(field) is None else {}
        for name in (field, legacy):
            value = self.raw.get(name) if name else None
            if value is not None and not isinstance(value, Mapping):
                raise self.error(name, f"expected an object, got {value!r:.60}")
            merged.update(value or {})
        self.seen.add(field)
        sub = Cfg(merged, defaults, self.source, aliases, prefix=f"{self.prefix}{field}.")
        self.memo[key] = (sub, defaults, aliases, absent)
        return sub

    def has(self, field: str) -> bool:
        return any(self.raw.get(n) is not None for n in self._names(field))

    def _names(self, field: str) -> tuple[str, ...]:
        return (field, *self.aliases.get(field, ()))

    def lookup(self, field: str, default: Any = ...) -> tuple[str, Any]:
        """(the name the value was found under, the value): the file's, else the default."""
        if field in self.aliases:
            names = self._names(field)
            self.seen.update(names)
            for name in names:
                if self.raw.get(name) is not None:
                    return name, self.raw[name]
        else:  # most fields have no other name: one read (builders look up dozens a count)
            self.seen.add(field)
            value = self.raw.get(field)
            if value is not None:
                return field, value
        if field in self.defaults:
            return field, self.defaults[field]
        if default is ...:
            raise self.error(field, "is missing and has no default")
        return field, default

    def get(self, field: str, default: Any = ...) -> Any:
        """The field's value from the file, else the family default, else ``default``."""
        return self.lookup(field, default)[1]

    def int(self, field: str, *, low: int = 1, high: int = MAX_DIM, default: Any = ...) -> Sym:
        """An integer field as a :class:`Sym` named for the derivation, bounds checked."""
        key = (field, low, high, default)
        found = self._ints.get(key)
        if found is None:
            found = self._ints[key] = self._int(field, low, high, default)
        return found

    def _int(self, field: str, low: int, high: int, default: Any) -> Sym:
        name, value = self.lookup(field, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {brief(value)}")
        if is_depth(field) or is_depth(name):
            high = min(high, MAX_LAYERS)
        if not low <= value <= high:
            raise self.error(name, f"{brief(value)} is out of range (must be {low}..{high:,})")
        return Sym(value, SYMBOLS.get(field, field))

    def opt_int(self, field: str, *, low: int = 1, high: int = MAX_DIM) -> Sym | None:
        """An integer field that may be null (``head_dim: null`` means 'derive it')."""
        return None if self.get(field, None) is None else self.int(field, low=low, high=high)

    def bool(self, field: str, default: Any = ...) -> bool:
        name, value = self.lookup(field, default)
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {value!r}")
        return value

    def str(self, field: str, default: Any = ...) -> str:
        name, value = self.lookup(field, default)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {value!r}")
        return value

    def number(self, field: str, default: Any = ..., *, low: float, high: float) -> float:
        """A real-valued field (a ratio, a multiplier), finite and in [low, high]: every call
        names the range that keeps its arithmetic finite (``int(1 / ratio)``, ``int(h · r)``)."""
        name, value = self.lookup(field, default)
        return self.finite(name, value, low, high)

    def finite(self, name: str, value: Any, low: float, high: float) -> float:
        """``value`` read from field ``name`` (perhaps inside a nested object): a finite number in
        [low, high], else one line naming the field. NaN and ±inf fail the range check itself."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(name, f"expected a number, got {brief(value)}")
        if not low <= value <= high:  # False for NaN, whichever side
            raise self.error(name, f"{brief(value)} is out of range (must be in {_bound(low)}..{_bound(high)})")
        return value

    def divides(self, whole: str, part: str) -> None:
        """Raise unless field ``whole`` is a multiple of field ``part`` (heads into width)."""
        w, p = self.int(whole), self.int(part)
        if w % p:
            named = self.lookup(whole)[0], self.lookup(part)[0]
            raise self.error(named[0], f"{int(w)} is not divisible by {named[1]} ({int(p)})")


def _bound(x: float) -> str:
    """A range's end as written: MIN_RATIO as 1/1024, not 0.000976562."""
    return f"1/{round(1 / x)}" if 0 < x < 1 and (1 / x).is_integer() else f"{x:g}"


def per_cfg(build: Callable[..., Any]) -> Callable[..., Any]:
    """A builder called more than once per count with the same config and arguments (a
    layer kind that both the stacks and an MTP note need, an attention alike in dense and MoE
    layers) builds once: trees never change, so its callers share the result. Arguments must
    be hashable; the cache lives on the :class:`Cfg`, so it ends with the count."""

    @wraps(build)
    def once(c: Cfg, *args: Hashable) -> Any:
        key = (build, *args)
        if key not in c.memo:
            c.memo[key] = build(c, *args)
        return c.memo[key]

    return once
