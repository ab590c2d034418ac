"""Kimi Linear (Moonshot AI 2025): Kimi delta attention (KDA: gated DeltaNet with a per-channel
forget gate) in most layers and DeepSeek's multi-head latent attention in the rest (by
``layer_types``, else the checkpoint's ``linear_attn_config`` lists, else every 4th layer
from layer 4); DeepSeek-V3's feed-forward: dense first layers, then routed experts with a
sigmoid router (its score-correction bias a buffer) and shared experts.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ..ir import Block, Node, Sym, Tensor
from . import Family
from . import linear_attention as la
from . import mla as mla_pieces
from .blocks import base, block, find, fused_experts, gated_mlp, router, typed_decoder, with_head
from .config import Cfg, per_cfg
from .llama import rms_layer

DEFAULTS = {
    "vocab_size": 163840,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "moe_intermediate_size": 1024,
    "num_hidden_layers": 27,
    "num_attention_heads": 32,
    "n_shared_experts": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "num_experts_per_tok": 8,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "num_local_experts": 256,
    "mlp_layer_types": None,
    "layer_types": None,
    "linear_head_dim": 128,
    "linear_num_heads": 32,
    "linear_conv_kernel_dim": 4,
}

# KimiLinearConfig.attribute_map: the names on the right are the attributes transformers keeps,
# so a file's field under that name is set last and wins over the one on the left.
WINNERS = {
    "num_local_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_token",
    "n_shared_experts": "num_shared_experts",
}

# linear_attn_config keys (the checkpoint's own) that override the top-level fields.
LINEAR_KEYS = {
    "linear_head_dim": "head_dim",
    "linear_num_heads": "num_heads",
    "linear_conv_kernel_dim": "short_conv_kernel_size",
}


def num(c: Cfg, field: str, low: int = 1) -> Sym:
    """A field read as transformers does: its attribute_map name if the file has it."""
    winner = WINNERS[field]
    return c.int(winner if c.raw.get(winner) is not None else field, low=low)


def linear_config(c: Cfg) -> dict[str, Any]:
    value = c.get("linear_attn_config", {})
    if not isinstance(value, dict):
        raise c.error("linear_attn_config", f"expected an object, got {value!r}")
    return value


def linear_dim(c: Cfg, field: str) -> Sym:
    """``linear_head_dim`` and kin; the checkpoint's ``linear_attn_config`` entry wins."""
    key, own = LINEAR_KEYS[field], linear_config(c)
    if key not in own:
        return c.int(field)
    value = own[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise c.error(f"linear_attn_config.{key}", f"expected a positive integer, got {value!r}")
    return Sym(value, field)


def layer_types(c: Cfg) -> list[str]:
    """``layer_types``; else ``linear_attn_config``'s 1-based ``full_attn_layers`` and
    ``kda_layers``; else full attention at layers 4, 8, 12 … (as ``__post_init__``)."""
    own = linear_config(c)
    if c.get("layer_types", None) is None and "full_attn_layers" in own and "kda_layers" in own:
        n = int(la.layers(c))
        out: list[str | None] = [None] * n
        for key, kind in (("full_attn_layers", la.FULL), ("kda_layers", la.LINEAR)):
            for i in _indices(c, own[key], key, n):
                out[i - 1] = kind
        if None in out:
            raise c.error(
                "linear_attn_config", f"layer {out.index(None) + 1} is in neither full_attn_layers nor kda_layers"
            )
        return [str(t) for t in out]
    return la.layer_types(c, lambda i: la.FULL if i and i % 4 == 0 else la.LINEAR)


def _indices(c: Cfg, value: Any, key: str, n: int) -> list[int]:
    if not isinstance(value, list):
        raise c.error(f"linear_attn_config.{key}", f"expected a list of layer numbers 1..{n}, got {value!r:.80}")
    bad = [i for i in value if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n]
    if bad:
        raise c.error(f"linear_attn_config.{key}", f"{bad[0]!r:.40} is not a layer number 1..{n} (num_hidden_layers)")
    return value


def mlp_types(c: Cfg) -> list[str]:
    """``mlp_layer_types``, else dense below ``first_k_dense_replace`` (default 1), MoE after."""
    n = int(la.layers(c))
    given = c.get("mlp_layer_types", None)
    if given is None:
        first = int(c.int("first_k_dense_replace", low=0, default=1))
        return ["dense" if i < first else "sparse" for i in range(n)]
    if not isinstance(given, list) or len(given) != n:
        got = f"{len(given)} entries" if isinstance(given, list) else f"{given!r:.80}"
        raise c.error("mlp_layer_types", f"expected a list of {n} entries (num_hidden_layers), got {got}")
    unknown = sorted({f"{t!r:.40}" for t in given if t not in ("dense", "sparse")})
    if unknown:
        raise c.error("mlp_layer_types", f'unknown entries {", ".join(unknown[:3])}; expected "dense" or "sparse"')
    return given


def mla_attention(c: Cfg) -> Block:
    """DeepSeek's MLA, read with Kimi's default of no query bottleneck (q_lora_rank null)."""
    if "q_lora_rank" not in c.raw:
        view = Cfg({**c.raw, "q_lora_rank": None}, c.defaults, c.source, c.aliases)
        view.seen = c.seen
        c = view
    return mla_pieces.self_attn(c)


def kda(c: Cfg) -> Block:
    heads, d = linear_dim(c, "linear_num_heads"), linear_dim(c, "linear_head_dim")
    return la.kda(c, heads, d, linear_dim(c, "linear_conv_kernel_dim"))


@per_cfg
def moe(c: Cfg) -> Block:
    """Routed experts, the sigmoid router's weight and the shared experts as one MLP of width I_e·E_s."""
    h, e, i_e = c.int("hidden_size"), num(c, "num_local_experts"), c.int("moe_intermediate_size")
    k, shared = num(c, "num_experts_per_tok"), num(c, "n_shared_experts", low=0)
    return block(
        "mlp",
        fused_experts(e, h, i_e, k),
        router("gate", h, e),
        gated_mlp("shared_experts", h, i_e * shared, kind="experts"),
    )


def layer(c: Cfg, kind: Hashable) -> tuple[Node, ...]:
    mixer, ff = kind  # type: ignore[misc]
    attn = mla_attention(c) if mixer == la.FULL else kda(c)
    return rms_layer(
        c, attn, moe(c) if ff == "sparse" else gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    kinds = list(zip(layer_types(c), mlp_types(c), strict=True))
    return typed_decoder(c, kinds, layer)


def untied_head(c: Cfg, body: Block) -> Sequence[Node]:
    """KimiLinearForCausalLM declares no tied weights: its lm_head is its own whatever
    ``tie_word_embeddings`` says."""
    return [block("lm_head", Tensor("weight", find(body, "embed_tokens.weight").shape), kind="output_head")]


def check(c: Cfg) -> None:
    e, k = num(c, "num_local_experts"), num(c, "num_experts_per_tok")
    if "sparse" in mlp_types(c) and k > e:
        raise c.error(WINNERS["num_experts_per_tok"], f"{int(k)} is more than the {int(e)} experts")


def notes(c: Cfg, cls: str) -> list[str]:
    out = []
    if c.bool("tie_word_embeddings") and cls.endswith("ForCausalLM"):
        out.append(
            "tie_word_embeddings is true, but KimiLinearForCausalLM never ties lm_head to the embedding: counted apart"
        )
    freq = c.raw.get("moe_layer_freq", 1)
    if freq not in (1, None):
        out.append(
            f"moe_layer_freq = {freq!r} is ignored by transformers "
            "(mlp_layer_types / first_k_dense_replace decide), as counted here"
        )
    if "sparse" in mlp_types(c):
        out.append("each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted")
    return out


def cache_layout(c: Cfg, model_type: str, cls: str, mla_form: str) -> tuple[list, list[str]]:
    """MLA layers cache the latent (or per-head K and V, ``mla="expanded"``); KDA layers keep a
    conv window over Q, K and V in the cache dtype and an fp32 recurrent state per head."""
    from .cache import LayerKind, state_kind

    r_kv, rope = int(c.int("kv_lora_rank")), int(c.int("qk_rope_head_dim"))
    a, nope, v = int(c.int("num_attention_heads")), int(c.int("qk_nope_head_dim")), int(c.int("v_head_dim"))
    heads, d = int(linear_dim(c, "linear_num_heads")), int(linear_dim(c, "linear_head_dim"))
    kernel = int(linear_dim(c, "linear_conv_kernel_dim"))

    def full(n: int, where: str) -> list:
        if mla_form == "latent":
            return [LayerKind("full", n, 1, r_kv, rope, where=where, stores="mla-latent")]
        return [LayerKind("full", n, a, nope + rope, v, where=where, stores="mla-expanded")]

    def states(n: int, where: str) -> list:
        return [
            state_kind(n, 3 * heads * d * kernel, "conv state", where),
            state_kind(n, heads * d * d, "recurrent state", where, dtype="fp32"),
        ]

    said = f"MLA latent: kv_lora_rank + qk_rope_head_dim = {r_kv + rope:,} elements per token per layer"
    said += ", as transformers 5 caches it"
    if mla_form != "latent":
        said = "MLA expanded: per-head keys and values; transformers 5 itself caches the latent"
    return la.hybrid_cache(c, layer_types(c), full, states), [said, la.RECURRENT_NOTE]


FAMILY = Family(
    model_type="kimi_linear",
    defaults=DEFAULTS,
    backbone="KimiLinearModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    classes={
        "KimiLinearModel": base(backbone),
        "KimiLinearForCausalLM": with_head(backbone, "model", untied_head),
    },
)
