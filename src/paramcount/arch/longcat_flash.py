"""LongCat-Flash (Meituan 2025): each of ``num_layers`` decoder layers holds two MLA sublayers,
each followed by a dense SwiGLU MLP (``self_attn.0/1``, ``mlps.0/1``, paired RMSNorms), and one
shortcut-connected MoE (``mlp``) fed from the first sublayer and added after the second.

The MoE routes each token to ``moe_topk`` of ``n_routed_experts + zero_expert_num`` experts;
a zero-computation expert returns its input and holds no parameters, so a token runs between
max(0, k − Z) and min(k, E) real experts. The router (``router.classifier``, biased behind
``router_bias``) scores all E + Z; its e_score_correction_bias is a buffer. transformers 5.23
allocates ``experts.gate_up_proj`` for all E + Z experts (``down_proj`` for E only): the extra
rows are counted, as the model holds them, and said in a note.

``num_hidden_layers`` is 2 × ``num_layers`` (a settable property: a file's num_hidden_layers
sets num_layers to half of it), the count of MLA sublayers each caching a latent.
"""

from __future__ import annotations

from ..ir import Block, Node, Sym, Tensor
from . import Family, mla
from .blocks import block, decoder_classes, embedding, gated_mlp, linear, norm, stack
from .config import Cfg

DEFAULTS = {
    "vocab_size": 131072,
    "hidden_size": 6144,
    "num_layers": 28,
    "num_attention_heads": 64,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_head_dim": None,
    "num_experts_per_tok": 12,
    "n_routed_experts": 512,
    "zero_expert_num": 256,
    "attention_bias": False,
    "tie_word_embeddings": False,
}

# LongcatFlashConfig.attribute_map, keyed by the mapped names, which win when a file has both.
ALIASES = {
    "num_experts_per_tok": ("moe_topk",),
    "intermediate_size": ("ffn_hidden_size",),
    "moe_intermediate_size": ("expert_ffn_hidden_size",),
    "n_routed_experts": ("num_local_experts",),
}


def num_layers(c: Cfg) -> Sym:
    """Decoder layers: half of a file's ``num_hidden_layers`` (its setter), else ``num_layers``."""
    if c.raw.get("num_hidden_layers") is not None:
        return c.int("num_hidden_layers", low=2) // 2
    return c.int("num_layers")


def counts(c: Cfg) -> tuple[int, int, int]:
    """(real experts E, zero experts Z, picks k ≤ E + Z)."""
    e, z = int(c.int("n_routed_experts", low=0)), int(c.int("zero_expert_num", low=0))
    if e + z == 0:
        raise c.error("n_routed_experts", "no experts: n_routed_experts + zero_expert_num is 0")
    return e, z, int(c.int("num_experts_per_tok", high=e + z))


def experts(c: Cfg) -> Block | None:
    """gate_up_proj for all E + Z experts and down_proj for E, as transformers allocates them;
    active: the k picks all on real experts (see :func:`notes`). No checkpoint view: the
    checkpoint's per-expert tensors cover the E real experts only, fewer parameters than this
    (said in a note), and a checkpoint view holds the same parameters under other names."""
    e, z, k = counts(c)
    if not e:
        return None  # transformers registers both as None
    h, i = c.int("hidden_size"), c.int("moe_intermediate_size")
    real = min(k, e)
    return Block(
        "experts",
        (
            Block("", (Tensor("gate_up_proj", (e + z, 2 * i, h)),), active=(real, e + z)),
            Block("", (Tensor("down_proj", (e, h, i)),), active=(real, e)),
        ),
        kind="experts",
    )


def moe(c: Cfg) -> Block:
    e, z, _ = counts(c)
    h = c.int("hidden_size")
    classifier = linear("classifier", h, e + z, bias=c.bool("router_bias", False))
    return block("mlp", experts(c), block("router", classifier, kind="router"))


def pair(name: str, one: Block) -> Block:
    """A two-entry ModuleList of ``one`` inside a layer (``self_attn.0``, ``self_attn.1``)."""
    return Block(name, one.children, repeat=2, kind=one.kind, label="sublayer")


def layer(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    attn = mla.self_attn(c, name="", nullable=False, q_head=c.opt_int("qk_head_dim"))
    return (
        moe(c),
        pair("self_attn", attn),
        pair("mlps", gated_mlp("", h, c.int("intermediate_size"))),
        pair("input_layernorm", norm("", h, bias=False)),
        pair("post_attention_layernorm", norm("", h, bias=False)),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    return (
        embedding("embed_tokens", c.int("vocab_size"), h),
        stack("layers", num_layers(c), *layer(c)),
        norm("norm", h, bias=False),
    )


def notes(c: Cfg, cls: str) -> list[str]:
    e, z, k = counts(c)
    h, i, n = int(c.int("hidden_size")), int(c.int("moe_intermediate_size")), int(num_layers(c))
    fewest, most = max(0, k - z), min(k, e)
    span = (most - fewest) * 3 * i * h * n  # the real experts a token may or may not run, over all layers
    out = [
        f"active per token assumes all {k} routed picks land on real experts, the most a token can run; "
        f"{z} of the {e + z} experts are zero-computation (identity) experts, so a token runs {fewest}–{most} "
        f"real experts per layer as the learned router picks them: {span:,} parameters fewer at the least "
        "(LongCat-Flash-Chat's card, without the embedding: 18.6B–31.3B activated, 27B on average)",
        "each MoE router also stores e_score_correction_bias, a buffer, not a parameter: not counted",
    ]
    if e and z:
        extra = n * z * 2 * i * h
        out.append(
            f"transformers allocates experts.gate_up_proj for all {e + z} experts, zero-computation ones "
            f"included: {extra:,} parameters ({z} × 2 × {i} × {h} per layer) that the checkpoint does not hold "
            "(it stores the real experts only, one tensor per expert and projection: "
            "mlp.experts.0.gate_proj.weight …); counted here, as the transformers model holds them"
        )
    return out


def check(c: Cfg) -> None:
    counts(c)
    mla.q_lora_rank(c, nullable=False)


def cache_layout(c: Cfg, model_type: str, cls: str, form: str) -> tuple[list, list[str]]:
    """Each of the 2 × num_layers MLA sublayers caches its latent (DynamicCache sizes itself by
    num_hidden_layers, which is 2 × num_layers)."""
    raw = {**c.raw, "num_hidden_layers": 2 * int(num_layers(c))}
    view = Cfg(raw, c.defaults, c.source, c.aliases, prefix=c.prefix)
    kinds, said = mla.cache_layout()(view, model_type, cls, form)
    return kinds, [*said, "two MLA sublayers per decoder layer, each with its own cache entry"]


FAMILY = Family(
    model_type="longcat_flash",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="LongcatFlashModel",
    check=check,
    notes=notes,
    cache_layout=cache_layout,
    flag_fields={"num_hidden_layers": "num_layers"},  # --layers counts decoder layers, as the printout does
    classes=decoder_classes("LongcatFlash", backbone, heads=("ForCausalLM",)),
)

__all__ = ["FAMILY", "backbone", "num_layers"]
