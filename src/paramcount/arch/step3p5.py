"""Step 3.5 / 3.7 Flash's language model (``Step3p7TextConfig``, model_type ``step3p5``): a
pre-norm decoder whose layers are full or sliding-window attention (``layer_types``) and dense or
routed (``mlp_layer_types``), as ``Step3p7TextModel`` builds them.

- Attention: bias-switchable q/k/v/o (``attention_bias``) of an explicit ``head_dim``, per-head
  q/k RMSNorms, and a bias-free output gate ``g_proj``: one logit per head when ``gating`` is
  true or ``"per-head"`` (the class default), else one per head and channel. Sliding layers may
  have more query heads (``num_sliding_attention_heads``, else the released config's
  ``attention_other_setting``, else the same): the config turns that into a ``per_layer_config``,
  which a saved file carries instead and which then wins. KV heads are the same in every layer.
- MLP: dense SwiGLU of ``intermediate_size``, or a sigmoid router over ``n_routed_experts``
  fused experts of ``moe_intermediate_size`` plus one always-on shared SwiGLU of
  ``share_expert_dim``; ``mlp_bias`` on the dense and shared ones. Without ``mlp_layer_types``
  the released ``moe_layers_enum`` lists the routed layers, else every layer from 3 routes.

The released config.json uses the remote-code names (``num_attention_groups``, ``moe_num_experts``,
``moe_top_k``, ``share_expert_dims``), which the config class takes over the fields when a file
has both; ``num_local_experts``, a field the class overwrites with ``n_routed_experts``, changes
nothing. Its per-layer lists carry ``num_nextn_predict_layers`` trailing entries for the
multi-token-prediction layers, which the class cuts off (and transformers does not build).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..ir import Block, Node, Sym
from . import Family, gpt_oss, llama, moe
from .blocks import attention, base, gated_mlp, linear, norm, typed_decoder
from .config import SYMBOLS, Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 128815,
    "hidden_size": 4096,
    "intermediate_size": 11264,
    "num_hidden_layers": 45,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "attention_bias": False,
    "mlp_bias": False,
    "moe_intermediate_size": 1280,
    "n_routed_experts": 288,
    "num_experts_per_tok": 8,
    "share_expert_dim": 1280,
    "sliding_window": None,
    "layer_types": None,
    "mlp_layer_types": None,
    "num_sliding_attention_heads": None,
    "gating": True,
    "num_nextn_predict_layers": 0,
}
# Step3p7TextConfig.attribute_map names that are no fields: set after the fields, so they win.
WINS = {
    "num_key_value_heads": "num_attention_groups",
    "n_routed_experts": "moe_num_experts",
    "num_experts_per_tok": "moe_top_k",
    "share_expert_dim": "share_expert_dims",
}
INTS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
INTS += ("num_key_value_heads", "head_dim", "moe_intermediate_size", "n_routed_experts", "share_expert_dim")
FULL, SLIDING = "full_attention", "sliding_attention"
LAYER_FIELDS = ("num_attention_heads",)  # what per_layer_config may change here
FIRST_ROUTED = 3  # without mlp_layer_types or moe_layers_enum, layers from 3 on route


def named(c: Cfg, field: str) -> str:
    """The name a field is read under: the attribute_map name that wins over it, if given."""
    alias = WINS.get(field)
    return alias if alias and c.raw.get(alias) is not None else field


def num(c: Cfg, field: str, low: int = 1) -> Sym:
    value = c.int(named(c, field), low=low)
    return Sym(int(value), SYMBOLS.get(field, field))  # the field's symbol, whichever name gave it


def trimmed(c: Cfg, field: str) -> Any:
    """A per-layer list, without the trailing multi-token-prediction entries a released
    config pads it with (``num_nextn_predict_layers`` of them, as the class cuts them)."""
    value, n = c.get(field), int(c.int("num_hidden_layers"))
    mtp = int(c.int("num_nextn_predict_layers", low=0))
    if mtp and isinstance(value, list) and len(value) == n + mtp:
        return value[:n]
    return value


def listed(c: Cfg, field: str, value: Any, allowed: tuple[str, ...]) -> list[str]:
    """A per-layer list as the config class validates it: one entry a layer, each allowed."""
    n = int(c.int("num_hidden_layers"))
    if not isinstance(value, list) or len(value) != n or any(t not in allowed for t in value):
        got = f"{len(value)} entries" if isinstance(value, list) else repr(value)[:60]
        raise c.error(field, f"expected a list of {n} entries, each one of {', '.join(allowed)}; got {got}")
    return value


def attention_types(c: Cfg) -> list[str]:
    """``layer_types``, all full attention by default; the model masks only these two types."""
    value = trimmed(c, "layer_types")
    if value is None:
        return [FULL] * int(c.int("num_hidden_layers"))
    return listed(c, "layer_types", value, (FULL, SLIDING))


def routed_layers(c: Cfg) -> set[int]:
    """``moe_layers_enum`` (a comma-separated string or a list of layer indices), else 3 on."""
    value = c.raw.get("moe_layers_enum")
    if value is None:
        return set(range(FIRST_ROUTED, int(c.int("num_hidden_layers"))))
    items = value.split(",") if isinstance(value, str) else value
    try:
        return {int(i) for i in items if str(i).strip()}
    except (TypeError, ValueError):
        raise c.error("moe_layers_enum", f"expected layer indices, got {value!r:.60}") from None


def mlp_types(c: Cfg) -> list[str]:
    value = trimmed(c, "mlp_layer_types")
    if value is None:
        routed = routed_layers(c)
        return ["sparse" if i in routed else "dense" for i in range(int(c.int("num_hidden_layers")))]
    return listed(c, "mlp_layer_types", value, ("sparse", "dense"))


def sliding_heads(c: Cfg) -> Sym:
    """``num_sliding_attention_heads``, else ``attention_other_setting``'s heads, else the same."""
    if c.get("num_sliding_attention_heads") is not None:
        return c.int("num_sliding_attention_heads")
    other = c.raw.get("attention_other_setting")
    if other and not isinstance(other, dict):
        raise c.error("attention_other_setting", f"expected an object, got {other!r:.60}")
    if not other or "num_attention_heads" not in other:
        return c.int("num_attention_heads")
    sub = Cfg(other, {}, c.source, prefix=f"{c.prefix}attention_other_setting.")
    return sub.int("num_attention_heads")


def overrides(c: Cfg) -> dict[int, Sym]:
    """Each layer's query heads where not ``num_attention_heads``: the file's
    ``per_layer_config``, else the sliding layers' count on every sliding layer."""
    table = c.raw.get("per_layer_config")
    if table is None:
        heads = sliding_heads(c)
        return {i: heads for i, t in enumerate(attention_types(c)) if t == SLIDING}
    if not isinstance(table, dict):
        raise c.error("per_layer_config", f"expected an object of layer index → fields, got {table!r:.60}")
    out: dict[int, Sym] = {}
    for key, fields in table.items():
        index = int(key) if isinstance(key, int) or (isinstance(key, str) and key.isdecimal() and len(key) <= 6) else -1
        if not 0 <= index < int(c.int("num_hidden_layers")) or not isinstance(fields, dict):
            raise c.error(f"per_layer_config.{key!s:.20}", "expected a layer index with an object of fields")
        other = sorted(set(fields) - set(LAYER_FIELDS))
        if other:
            raise c.error(f"per_layer_config.{key}", f"changes {', '.join(other)}, which paramcount does not model")
        if "num_attention_heads" in fields:
            sub = Cfg(fields, {}, c.source, prefix=f"{c.prefix}per_layer_config.{key}.")
            out[index] = sub.int("num_attention_heads")
    return out


def kinds(c: Cfg) -> list[tuple[int, bool]]:
    """(query heads, routes experts) of every layer: one stack per run of alike layers."""
    extra, heads = overrides(c), c.int("num_attention_heads")
    return [(int(extra.get(i, heads)), t == "sparse") for i, t in enumerate(mlp_types(c))]


def per_head_gate(c: Cfg) -> bool:
    """``gating`` true (the identity, as the model tests it) or ``"per-head"``: a logit per head."""
    gating = c.get("gating")
    return gating is True or gating == "per-head"


@per_cfg
def self_attn(c: Cfg, heads: int) -> Block:
    h, kv, d = c.int("hidden_size"), num(c, "num_key_value_heads"), c.int("head_dim")
    a = c.int("num_attention_heads") if heads == c.int("num_attention_heads") else Sym(heads, "a_swa")
    gate = linear("g_proj", h, a if per_head_gate(c) else a * d, bias=False)
    extra = (norm("q_norm", d, bias=False), norm("k_norm", d, bias=False), gate)
    return attention("self_attn", h, a, kv, d, bias=c.bool("attention_bias"), extra=extra)


@per_cfg
def mlp(c: Cfg, sparse: bool) -> Block:
    h, bias = c.int("hidden_size"), c.bool("mlp_bias")
    if not sparse:
        return gated_mlp("mlp", h, c.int("intermediate_size"), bias)
    n = num(c, "n_routed_experts")
    routed = moe.experts(n, h, c.int("moe_intermediate_size"), moe.top_k(c, n, named(c, "num_experts_per_tok")))
    shared = moe.shared_mlp(h, num(c, "share_expert_dim"), bias=bias)
    return Block("mlp", (moe.router("gate", h, n), routed, *shared))


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    heads, sparse = kind  # type: ignore[misc]
    return llama.rms_layer(c, self_attn(c, heads), mlp(c, sparse))


def backbone(c: Cfg) -> tuple[Node, ...]:
    return typed_decoder(c, kinds(c), layer)


def check(c: Cfg) -> None:
    gpt_oss.refuse_nulls(c, INTS)
    kv = num(c, "num_key_value_heads")
    for heads in sorted({heads for heads, _ in kinds(c)}):
        if heads % kv:
            raise c.error(named(c, "num_key_value_heads"), f"{int(kv)} does not divide {heads} query heads")
    if any(sparse for _, sparse in kinds(c)):
        moe.top_k(c, num(c, "n_routed_experts"), named(c, "num_experts_per_tok"))


def mtp_layers(c: Cfg) -> int:
    """The checkpoint's MTP layers: ``num_mtp_layers`` (set last, so it wins) or the field.
    Only ``num_nextn_predict_layers`` trims the padded lists (:func:`trimmed`)."""
    field = "num_mtp_layers" if c.raw.get("num_mtp_layers") is not None else "num_nextn_predict_layers"
    return int(c.int(field, low=0))


def notes(c: Cfg, cls: str) -> list[str]:
    out = moe.correction_note([(0, 1, any(sparse for _, sparse in kinds(c)))])
    k, n = mtp_layers(c), int(c.int("num_hidden_layers"))
    if k:
        where = f"layers.{n}" if k == 1 else f"layers.{n}–{n + k - 1}"
        out.append(
            f"the published checkpoint also holds {k} multi-token-prediction layer(s) ({where}) that "
            "transformers does not build (it skips them on loading); they are not counted"
        )
    return out


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """Every layer caches ``num_key_value_heads`` heads of ``head_dim``; sliding layers at most
    ``sliding_window`` − 1 tokens (``DynamicCache`` reads the resolved ``layer_types``)."""
    from .cache import self_kinds

    d = int(c.int("head_dim"))
    resolved = Cfg({**c.raw, "layer_types": attention_types(c)}, c.defaults, c.source, c.aliases, c.prefix)
    return self_kinds(resolved, "step3p5", (int(num(c, "num_key_value_heads")), d, d))


FAMILY = Family(
    model_type="step3p5",
    defaults=DEFAULTS,
    aliases={field: (alias,) for field, alias in WINS.items()},
    backbone="Step3p7TextModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    extra_fields=("moe_layers_enum", "attention_other_setting", "per_layer_config"),
    classes={"Step3p7TextModel": base(backbone)},
)

__all__ = ["FAMILY", "attention_types", "backbone", "cache_layout", "kinds", "mlp_types"]
