"""Marian (Junczys-Dowmunt et al. 2018; the OPUS-MT checkpoints): BART's post-norm layers with
no LayerNorm on the embeddings and no final norm, and sinusoidal positions that transformers
registers as frozen ``nn.Embedding`` weights: parameters (requires_grad false) that the
checkpoints do not store, counted here as ``model.parameters()`` counts them.

``share_encoder_decoder_embeddings`` (default true) gives one ``shared`` table for both stacks
and the head; false gives each stack its own, the decoder's of ``decoder_vocab_size`` rows,
and ties the head to the decoder's."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Node, join
from . import Family, bart
from .blocks import Builder, base, block, embedding, lm_head, stack, with_head
from .config import Cfg

DEFAULTS = {
    **{k: v for k, v in bart.DEFAULTS.items() if k != "num_labels"},
    "vocab_size": 58101,
    "decoder_vocab_size": None,
    "pad_token_id": 58100,
    "share_encoder_decoder_embeddings": True,
}


def decoder_vocab(c: Cfg) -> int:
    """``decoder_vocab_size``, or the source vocabulary when absent (MarianConfig's rule)."""
    return c.opt_int("decoder_vocab_size") or c.int("vocab_size")


def check(c: Cfg) -> None:
    bart.check(c)
    pad, rows = c.get("pad_token_id", None), int(decoder_vocab(c))
    # The decoder's nn.Embedding(padding_idx=pad) refuses an index outside its own vocabulary.
    if isinstance(pad, int) and not isinstance(pad, bool) and not -rows <= pad < rows:
        raise c.error("pad_token_id", f"{pad} is outside the decoder vocabulary (decoder_vocab_size {rows})")
    if c.bool("share_encoder_decoder_embeddings") and int(decoder_vocab(c)) != int(c.int("vocab_size")):
        raise c.error("decoder_vocab_size", "must equal vocab_size when share_encoder_decoder_embeddings is true")


def marian_stack(c: Cfg, decoder: bool, shared: str | None) -> Block:
    h = c.int("d_model")
    rows = decoder_vocab(c) if decoder else c.int("vocab_size")
    tokens = bart.tokens(c, shared) if shared else embedding("embed_tokens", rows, h)
    return block(
        "decoder" if decoder else "encoder",
        tokens,
        embedding("embed_positions", c.int("max_position_embeddings"), h),
        stack("layers", c.int("decoder_layers" if decoder else "encoder_layers"), *bart.layer(c, decoder)),
    )


def encoder_decoder(prefix: str = "") -> Callable[[Cfg], tuple[Node, ...]]:
    def build(c: Cfg) -> tuple[Node, ...]:
        share = c.bool("share_encoder_decoder_embeddings")
        tied = share and c.bool("tie_word_embeddings")
        target = join(prefix, "shared.weight") if tied else None
        stacks = (marian_stack(c, False, target), marian_stack(c, True, target))
        return (embedding("shared", c.int("vocab_size"), c.int("d_model")), *stacks) if share else stacks

    return build


def decoder_only(c: Cfg) -> tuple[Node, ...]:
    return (marian_stack(c, True, None),)


def translation_head(c: Cfg, body: Block) -> list[Node]:
    """``lm_head`` over the shared vocabulary, or the decoder's when the stacks do not share."""
    embed = "shared.weight" if c.bool("share_encoder_decoder_embeddings") else "decoder.embed_tokens.weight"
    return list(lm_head(embed)(c, body))


def classes() -> dict[str, Builder]:
    return {
        "MarianModel": base(encoder_decoder()),
        "MarianMTModel": with_head(encoder_decoder("model"), "model", translation_head),
        "MarianForCausalLM": with_head(decoder_only, "model", lm_head("decoder.embed_tokens.weight")),
    }


def notes(c: Cfg, cls: str) -> list[str]:
    h, positions = int(c.int("d_model")), int(c.int("max_position_embeddings"))
    stacks = 1 if cls.endswith("ForCausalLM") else 2
    frozen = stacks * positions * h
    return [
        f"embed_positions: {frozen:,} frozen sinusoidal parameters (requires_grad false), "
        "counted as transformers counts them; the checkpoint does not store them"
    ]


FAMILY = Family(
    model_type="marian",
    defaults=DEFAULTS,
    aliases=bart.ALIASES,
    backbone="MarianModel",
    check=check,
    classes=classes(),
    notes=notes,
)
