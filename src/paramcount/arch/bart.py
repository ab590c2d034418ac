"""BART (Lewis et al. 2019): post-norm encoder-decoder with learned positions offset by 2
rows, a LayerNorm on the embeddings of each stack, biased projections everywhere, and one
``shared`` token embedding tied to both stacks and the output head (``final_logits_bias``
is a buffer, not a parameter)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir import Block, Node, Sym, Tie, join
from . import Family
from .blocks import Builder, base, block, embedding, linear, lm_head, norm, num_labels, stack, with_head
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 50265,
    "max_position_embeddings": 1024,
    "encoder_layers": 12,
    "encoder_ffn_dim": 4096,
    "encoder_attention_heads": 16,
    "decoder_layers": 12,
    "decoder_ffn_dim": 4096,
    "decoder_attention_heads": 16,
    "d_model": 1024,
    "pad_token_id": 1,
    "tie_word_embeddings": True,
    # BartConfig.__post_init__ sets 3 labels when the file gives neither num_labels nor id2label.
    "num_labels": 3,
}

# transformers' BartConfig.attribute_map.
ALIASES = {
    "encoder_attention_heads": ("num_attention_heads",),
    "d_model": ("hidden_size",),
    "encoder_layers": ("num_hidden_layers",),
}

POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding keeps two rows before position 0


@dataclass(frozen=True)
class Variant:
    """What a BART-like family changes in the stacks: class prefix; learned positions (BART,
    mBART) or sinusoidal ones held in a buffer (M2M-100: no parameter); the LayerNorm on the
    embeddings; a final ``layer_norm`` after the layers of each stack (the pre-norm mBART and
    M2M-100). Pre- against post-norm moves no parameter."""

    prefix: str = "Bart"
    learned_positions: bool = True
    embedding_norm: bool = True
    final_norm: bool = False


BART = Variant()


def check(c: Cfg) -> None:
    c.divides("d_model", "encoder_attention_heads")
    c.divides("d_model", "decoder_attention_heads")
    pad, vocab = c.get("pad_token_id", None), c.int("vocab_size")
    # nn.Embedding(padding_idx=pad) refuses an index outside the vocabulary.
    if isinstance(pad, int) and not isinstance(pad, bool) and not -vocab <= pad < vocab:
        raise c.error("pad_token_id", f"{pad} is outside the vocabulary (vocab_size {int(vocab)})")


def attention(name: str, h: Sym, key_bias: bool = True) -> Block:
    """BartAttention: k, v, q and out projections, all h→h with biases (Whisper's key has none)."""
    return block(
        name,
        linear("k_proj", h, h, key_bias),
        linear("v_proj", h, h),
        linear("q_proj", h, h),
        linear("out_proj", h, h),
        kind="attention",
    )


@per_cfg  # the class and its backbone tree hold the same layers: built once per count
def layer(c: Cfg, decoder: bool, key_bias: bool = True) -> tuple[Node, ...]:
    h = c.int("d_model")
    ffn = c.int("decoder_ffn_dim" if decoder else "encoder_ffn_dim")
    return (
        attention("self_attn", h, key_bias),
        norm("self_attn_layer_norm", h),
        attention("encoder_attn", h, key_bias) if decoder else None,
        norm("encoder_attn_layer_norm", h) if decoder else None,
        linear("fc1", h, ffn, kind="feed_forward"),
        linear("fc2", ffn, h, kind="feed_forward"),
        norm("final_layer_norm", h),
    )


def tokens(c: Cfg, shared: str | None) -> Node:
    """A stack's ``embed_tokens``: the model's shared embedding when tied, else its own."""
    shape = (c.int("vocab_size"), c.int("d_model"))
    if shared is None:
        return embedding("embed_tokens", *shape)
    return block("embed_tokens", Tie("weight", shape, target=shared), kind="embeddings")


def bart_stack(c: Cfg, decoder: bool, shared: str | None, v: Variant = BART) -> Block:
    """BartEncoder / BartDecoder: token and position embeddings, their LayerNorm, layers."""
    h = c.int("d_model")
    layers = c.int("decoder_layers" if decoder else "encoder_layers")
    positions = c.int("max_position_embeddings") + POSITION_OFFSET
    return block(
        "decoder" if decoder else "encoder",
        tokens(c, shared),
        embedding("embed_positions", positions, h) if v.learned_positions else None,
        stack("layers", layers, *layer(c, decoder)),
        norm("layernorm_embedding", h) if v.embedding_norm else None,
        norm("layer_norm", h) if v.final_norm else None,
    )


def encoder_decoder(prefix: str = "", v: Variant = BART) -> Callable[[Cfg], tuple[Node, ...]]:
    """BartModel's modules. The stacks share ``shared`` only when tie_word_embeddings is on
    (transformers drops every tie otherwise); tie targets carry the model's attribute."""

    def build(c: Cfg) -> tuple[Node, ...]:
        target = join(prefix, "shared.weight") if c.bool("tie_word_embeddings") else None
        return (
            embedding("shared", c.int("vocab_size"), c.int("d_model")),
            bart_stack(c, False, target, v),
            bart_stack(c, True, target, v),
        )

    return build


def decoder_only(v: Variant = BART) -> Callable[[Cfg], tuple[Node, ...]]:
    """BartForCausalLM's ``model`` (BartDecoderWrapper): just the decoder, with its own
    token embedding and cross-attention modules (unused without an encoder)."""

    def build(c: Cfg) -> tuple[Node, ...]:
        return (bart_stack(c, True, None, v),)

    return build


def classification_head(c: Cfg, body: Block) -> list[Node]:
    h = c.int("d_model")
    return [
        block("classification_head", linear("dense", h, h), linear("out_proj", h, num_labels(c)), kind="output_head")
    ]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    """BartForQuestionAnswering sets num_labels to 2 itself, whatever the config says."""
    return [linear("qa_outputs", c.int("d_model"), 2, kind="output_head")]


def classes(v: Variant = BART) -> dict[str, Builder]:
    """BART's class set (mBART has the same five)."""
    model, p = encoder_decoder("model", v), v.prefix
    return {
        f"{p}Model": base(encoder_decoder("", v)),
        f"{p}ForConditionalGeneration": with_head(model, "model", lm_head("shared.weight")),
        f"{p}ForSequenceClassification": with_head(model, "model", classification_head),
        f"{p}ForQuestionAnswering": with_head(model, "model", qa_head),
        f"{p}ForCausalLM": with_head(decoder_only(v), "model", lm_head("decoder.embed_tokens.weight")),
    }


FAMILY = Family(
    model_type="bart",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="BartModel",
    check=check,
    classes=classes(),
)
