"""OPT (Zhang et al. 2022): learned positions with two extra rows (ids are offset by 2), a
token embedding narrower than the model when ``word_embed_proj_dim`` differs (opt-350m, with
``project_in``/``project_out``), a final LayerNorm only for pre-norm models, tied head."""

from __future__ import annotations

from ..ir import Block, Node, Sym
from . import Family
from .blocks import attention, base, block, embedding, linear, lm_head, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 50272,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "ffn_dim": 3072,
    "max_position_embeddings": 2048,
    "do_layer_norm_before": True,
    "_remove_final_layer_norm": False,
    "word_embed_proj_dim": None,
    "num_attention_heads": 12,
    "enable_bias": True,
    "layer_norm_elementwise_affine": True,
    "tie_word_embeddings": True,
}

POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding keeps two rows before position 0


def embed_dim(c: Cfg) -> Sym:
    """``word_embed_proj_dim``, which OPTConfig sets to hidden_size when absent."""
    return c.opt_int("word_embed_proj_dim") or c.int("hidden_size")


def layer_norm(c: Cfg, name: str) -> Block | None:
    """A LayerNorm, without any parameter when layer_norm_elementwise_affine is off."""
    return norm(name, c.int("hidden_size")) if c.bool("layer_norm_elementwise_affine") else None


def layer(c: Cfg) -> tuple[Node | None, ...]:
    h, a, f, bias = c.int("hidden_size"), c.int("num_attention_heads"), c.int("ffn_dim"), c.bool("enable_bias")
    return (
        attention("self_attn", h, a, a, h // a, bias, names=("q_proj", "k_proj", "v_proj", "out_proj")),
        layer_norm(c, "self_attn_layer_norm"),
        linear("fc1", h, f, bias, kind="feed_forward"),
        linear("fc2", f, h, bias, kind="feed_forward"),
        layer_norm(c, "final_layer_norm"),
    )


def decoder(c: Cfg) -> Block:
    h, e = c.int("hidden_size"), embed_dim(c)
    projected = int(e) != int(h)
    # The final norm exists only for pre-norm models (opt-350m is post-norm and has none).
    final = c.bool("do_layer_norm_before") and not c.bool("_remove_final_layer_norm")
    return block(
        "decoder",
        embedding("embed_tokens", c.int("vocab_size"), e),
        embedding("embed_positions", c.int("max_position_embeddings") + POSITION_OFFSET, h),
        linear("project_out", h, e, bias=False, kind="embeddings") if projected else None,
        linear("project_in", e, h, bias=False, kind="embeddings") if projected else None,
        layer_norm(c, "final_layer_norm") if final else None,
        stack("layers", c.int("num_hidden_layers"), *layer(c)),
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    return (decoder(c),)


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")


def score_head(c: Cfg, body: Block) -> list[Node]:
    """The heads read the decoder output after ``project_out``: word_embed_proj_dim wide."""
    return [linear("score", embed_dim(c), num_labels(c), bias=False, kind="output_head")]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", embed_dim(c), 2, kind="output_head")]


FAMILY = Family(
    model_type="opt",
    defaults=DEFAULTS,
    backbone="OPTModel",
    check=check,
    classes={
        "OPTModel": base(backbone),
        "OPTForCausalLM": with_head(backbone, "model", lm_head("decoder.embed_tokens.weight")),
        "OPTForSequenceClassification": with_head(backbone, "model", score_head),
        "OPTForQuestionAnswering": with_head(backbone, "model", qa_head),
    },
)
