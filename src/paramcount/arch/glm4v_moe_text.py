"""GLM-4.5V's language model on its own (``Glm4vMoeTextConfig``): ``Glm4vMoeTextModel``, GLM-4.5's
decoder (arch/glm4_moe.py: biased q/k/v behind ``attention_bias``, true by default here, a bias-free
o_proj, the first ``first_k_dense_replace`` layers dense, then routed and shared experts behind a
sigmoid router whose ``e_score_correction_bias`` is a buffer) without per-head q/k norms: its
attention builds none, whatever ``use_qk_norm`` says. The multimodal rotary sections (``mrope_section``)
have no parameters."""

from __future__ import annotations

from ..ir import Block, Node
from . import Family, glm4_moe, llama, moe
from .blocks import attention, embedding, gated_mlp, norm
from .config import Cfg, per_cfg

# Glm4vMoeTextConfig's defaults; like Glm4MoeConfig it has no head_dim field, so a file's
# head_dim sizes the attention (GLM-4.5V: 128) and h // a otherwise.
DEFAULTS = {
    "vocab_size": 151424,
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "num_hidden_layers": 46,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "attention_bias": True,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 1408,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "n_routed_experts": 128,
    "first_k_dense_replace": 1,
}

# Glm4vMoeTextConfig.attribute_map.
ALIASES = {"n_routed_experts": ("num_local_experts",)}


@per_cfg  # alike in dense and MoE layers: built once per count
def self_attn(c: Cfg) -> Block:
    h, a, d = c.int("hidden_size"), c.int("num_attention_heads"), llama.head_dim(c)
    return attention("self_attn", h, a, llama.kv_heads(c), d, bias=c.bool("attention_bias"), out_bias=False)


@per_cfg
def layer(c: Cfg, sparse: bool) -> tuple[Node, ...]:
    ff = glm4_moe.sparse_mlp(c) if sparse else gated_mlp("mlp", c.int("hidden_size"), c.int("intermediate_size"))
    return llama.rms_layer(c, self_attn(c), ff)


def backbone(c: Cfg) -> tuple[Node, ...]:
    h = c.int("hidden_size")
    layers = moe.layer_stacks(glm4_moe.runs(c), c.int("num_hidden_layers"), lambda sparse: layer(c, sparse))
    return (embedding("embed_tokens", c.int("vocab_size"), h), *layers, norm("norm", h, bias=False))


def notes(c: Cfg, cls: str) -> list[str]:
    return moe.correction_note(glm4_moe.runs(c))


FAMILY = Family(
    model_type="glm4v_moe_text",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="Glm4vMoeTextModel",
    check=glm4_moe.check,
    notes=notes,
    cache_layout=glm4_moe.FAMILY.cache_layout,
    classes={"Glm4vMoeTextModel": lambda c: Block("", backbone(c), label="backbone")},
)

__all__ = ["DEFAULTS", "FAMILY", "backbone", "layer"]
