"""Whisper (Radford et al. 2022): a speech encoder-decoder. The audio encoder is two ``nn.Conv1d``
over the log-mel frames (the second of stride 2), a position table of ``max_source_positions``
rows that transformers fills with sinusoids and freezes (still a parameter, so counted), then
pre-norm BART-like layers and a final ``layer_norm``. The decoder has its own token table and
learned positions (``max_target_positions``); ``proj_out`` maps back to the vocabulary, tied
to the decoder's token table. Every attention's key projection is bias-free.

Towers: the encoder is the audio encoder, the decoder and ``proj_out`` the language model.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Tensor
from ..records import replace
from . import Family, bart
from .blocks import Builder, base, block, conv, embedding, linear, lm_head, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 51865,
    "num_mel_bins": 80,
    "encoder_layers": 4,
    "encoder_attention_heads": 6,
    "decoder_layers": 4,
    "decoder_attention_heads": 6,
    "decoder_ffn_dim": 1536,
    "encoder_ffn_dim": 1536,
    "d_model": 384,
    "max_source_positions": 1500,
    "max_target_positions": 448,
    "pad_token_id": 50256,
    "use_weighted_layer_sum": False,
    "classifier_proj_size": 256,
    "tie_word_embeddings": True,
}

# WhisperConfig.attribute_map
ALIASES = {
    "encoder_attention_heads": ("num_attention_heads", "num_key_value_heads"),
    "d_model": ("hidden_size",),
    "encoder_layers": ("num_hidden_layers",),
}

AUDIO, TEXT = "audio_encoder", "language_model"
EMBED = "decoder.embed_tokens.weight"


def encoder(c: Cfg) -> Block:
    """WhisperEncoder: conv1 (mel bins → d, kernel 3), conv2 (d → d, kernel 3, stride 2), the
    frozen sinusoidal positions, the layers and a final LayerNorm."""
    h = c.int("d_model")
    return block(
        "encoder",
        conv("conv1", c.int("num_mel_bins"), h, 3, kind="embeddings"),
        conv("conv2", h, h, 3, kind="embeddings"),
        embedding("embed_positions", c.int("max_source_positions"), h),
        stack("layers", c.int("encoder_layers"), *bart.layer(c, False, False)),
        norm("layer_norm", h),
        tower=AUDIO,
    )


def decoder(c: Cfg) -> Block:
    """WhisperDecoder: token and learned position tables, layers with cross-attention, LayerNorm."""
    h = c.int("d_model")
    return block(
        "decoder",
        embedding("embed_tokens", c.int("vocab_size"), h),
        embedding("embed_positions", c.int("max_target_positions"), h),
        stack("layers", c.int("decoder_layers"), *bart.layer(c, True, False)),
        norm("layer_norm", h),
        tower=TEXT,
    )


def encoder_decoder(c: Cfg) -> tuple[Node, ...]:
    return encoder(c), decoder(c)


def decoder_only(c: Cfg) -> tuple[Node, ...]:
    """WhisperForCausalLM's ``model`` (WhisperDecoderWrapper): the decoder alone."""
    return (decoder(c),)


def encoder_only(c: Cfg) -> tuple[Node, ...]:
    return (encoder(c),)


def proj_out(c: Cfg, body: Block) -> list[Node]:
    """``proj_out``, bias-free, tied to the decoder's token table when the config says so."""
    (head,) = lm_head(EMBED, name="proj_out")(c, body)
    return [replace(head, tower=TEXT)]


def audio_classification_head(c: Cfg, body: Block) -> list[Node]:
    """``layer_weights`` (one per encoder layer plus the embeddings, with
    ``use_weighted_layer_sum``), ``projector`` to ``classifier_proj_size``, ``classifier``."""
    weights = None
    if c.bool("use_weighted_layer_sum"):
        weights = Tensor("layer_weights", (c.int("encoder_layers") + 1,))
    proj = c.int("classifier_proj_size")
    head = (
        linear("projector", c.int("d_model"), proj, kind="output_head"),
        linear("classifier", proj, num_labels(c), kind="output_head"),
    )
    return [n for n in (weights, *head) if n is not None]


def classes() -> dict[str, Builder]:
    return {
        "WhisperModel": base(encoder_decoder),
        "WhisperForConditionalGeneration": with_head(encoder_decoder, "model", proj_out),
        "WhisperForCausalLM": with_head(decoder_only, "model", proj_out),
        "WhisperForAudioClassification": with_head(encoder_only, "", audio_classification_head),
    }


def notes(c: Cfg, cls: str) -> list[str]:
    if cls.endswith("ForCausalLM"):
        return []
    rows, h = int(c.int("max_source_positions")), int(c.int("d_model"))
    return [
        f"encoder.embed_positions: {rows * h:,} sinusoidal parameters that transformers freezes "
        "(requires_grad false); still parameters, so counted"
    ]


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    """BART's: decoder self-attention plus cross-attention over the encoder's output, which is
    always ``max_source_positions`` frames (30 s of audio, padded); the audio classifier has
    no decoder and no cache."""
    from .cache import BUILDERS, NO_CACHE

    if cls.endswith("ForAudioClassification"):
        return [], [NO_CACHE + f" ({cls})"]
    from ..records import replace

    kinds, notes = BUILDERS["bart"](c, model_type, cls, mla)
    if any(k.attention == "cross" for k in kinds):
        frames = int(c.int("max_source_positions"))
        kinds = [replace(k, source=frames) if k.attention == "cross" else k for k in kinds]
        notes = [
            *notes,
            f"Whisper's encoder always yields max_source_positions = {frames:,} frames (30 s of audio, padded): "
            f"its cross-attention holds {frames:,} tokens whatever the context",
        ]
    return kinds, notes


FAMILY = Family(
    model_type="whisper",
    defaults=DEFAULTS,
    aliases=ALIASES,
    backbone="WhisperModel",
    check=bart.check,
    classes=classes(),
    notes=notes,
    cache_layout=cache_layout,
    max_tokens=lambda c: int(c.int("max_target_positions")),
)
