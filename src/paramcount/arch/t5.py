"""T5 (Raffel et al. 2019): encoder-decoder with one ``shared`` token embedding, bias-free
projections, weight-only RMS norms, and a relative-position bias held by block 0 of each stack
only; v1.1 / Flan-T5 swap the ReLU feed-forward for a gated GELU one and untie the output head.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir import Block, Node, Sym, Tensor, Tie, join
from . import Family
from .blocks import Builder, base, block, embedding, linear, norm, num_labels, stack, with_head
from .config import Cfg, per_cfg

DEFAULTS = {
    "vocab_size": 32128,
    "d_model": 512,
    "d_kv": 64,
    "d_ff": 2048,
    "num_layers": 6,
    "num_decoder_layers": None,
    "num_heads": 8,
    "relative_attention_num_buckets": 32,
    "feed_forward_proj": "relu",
    "is_decoder": False,
    # PreTrainedConfig's default; the T5 config then forces it to True whatever the file says.
    "tie_word_embeddings": True,
}

# transformers' T5Config.attribute_map (mT5 has the same).
ALIASES = {
    "d_model": ("hidden_size",),
    "num_heads": ("num_attention_heads",),
    "num_layers": ("num_hidden_layers",),
    "d_kv": ("head_dim",),
}


def is_gated(c: Cfg) -> bool:
    """``gated-gelu`` (v1.1, Flan, mT5) has two input projections; ``relu`` has one."""
    return c.str("feed_forward_proj").split("-")[0] == "gated"


def check(c: Cfg) -> None:
    parts = c.str("feed_forward_proj").split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise c.error("feed_forward_proj", "must be 'ACT' or 'gated-ACT' (e.g. 'relu', 'gated-gelu')")
    c.int("num_layers")
    decoder_layers(c)


def decoder_layers(c: Cfg) -> Sym:
    """``num_decoder_layers``, which defaults to the encoder's depth (symmetry).

    transformers copies ``num_layers`` before it applies the attribute_map names, so a file
    that gives the depth only as ``num_hidden_layers`` gets the class default in the decoder."""
    explicit = c.opt_int("num_decoder_layers")
    return explicit or Cfg(c.raw, c.defaults, c.source).int("num_layers")


def attention(c: Cfg, name: str, relative_bias: bool) -> Block:
    """T5Attention: q, k, v, o without biases over ``num_heads·d_kv`` (not necessarily
    ``d_model``: t5-11b has d_model 1024 and 128 heads of 128)."""
    h, heads = c.int("d_model"), c.int("num_heads")
    inner = heads * c.int("d_kv")
    # An nn.Embedding of one learned scalar per (distance bucket, head): part of attention.
    buckets = Tensor("weight", (c.int("relative_attention_num_buckets"), heads))
    return block(
        name,
        linear("q", h, inner, bias=False),
        linear("k", h, inner, bias=False),
        linear("v", h, inner, bias=False),
        linear("o", inner, h, bias=False),
        block("relative_attention_bias", buckets) if relative_bias else None,
        kind="attention",
    )


def feed_forward(c: Cfg) -> Block:
    h, i = c.int("d_model"), c.int("d_ff")
    if is_gated(c):
        projections = (linear("wi_0", h, i, False), linear("wi_1", h, i, False), linear("wo", i, h, False))
    else:
        projections = (linear("wi", h, i, False), linear("wo", i, h, False))
    return block("DenseReluDense", *projections, kind="feed_forward")


@per_cfg  # the class and its backbone tree hold the same blocks: built once per count
def t5_blocks(c: Cfg, decoder: bool) -> tuple[Block, Block]:
    """T5Block's ``layer`` list for block 0 and for the blocks after it: self-attention,
    cross-attention (decoder), feed-forward, each sub-layer with its own weight-only norm.
    Only block 0's self-attention has the relative-position bias; the rest is built once."""
    ln = norm("layer_norm", c.int("d_model"), bias=False)
    cross = [(attention(c, "EncDecAttention", False), ln)] if decoder else []
    after = [block(str(i), *s) for i, s in enumerate([*cross, (feed_forward(c), ln)], start=1)]

    def layer(relative_bias: bool) -> Block:
        return block("layer", block("0", attention(c, "SelfAttention", relative_bias), ln), *after)

    return layer(True), layer(False)


def t5_stack(c: Cfg, name: str, layers: Sym, decoder: bool, shared: str, bias_everywhere: bool = False) -> Block:
    """A T5Stack. Only block 0 has the relative-position bias, so the layers are two runs:
    block 0, then blocks 1…n-1 (one run when ``bias_everywhere``: UMT5 gives every block's
    self-attention its own). Its embed_tokens is the model's ``shared`` embedding."""
    emb = (c.int("vocab_size"), c.int("d_model"))
    first, rest = t5_blocks(c, decoder)
    runs = (
        (stack("block", layers, first),)
        if bias_everywhere
        else (stack("block", 1, first), stack("block", layers - 1, rest, start=1) if layers > 1 else None)
    )
    return block(
        name,
        block("embed_tokens", Tie("weight", emb, target=shared), kind="embeddings"),
        *runs,
        norm("final_layer_norm", c.int("d_model"), bias=False),
    )


def shared(c: Cfg) -> Block:
    return embedding("shared", c.int("vocab_size"), c.int("d_model"))


def encoder_decoder(prefix: str = "", bias_everywhere: bool = False) -> Callable[[Cfg], tuple[Node, ...]]:
    """T5Model's modules; tie targets carry ``prefix``, the attribute the model sits under."""

    def build(c: Cfg) -> tuple[Node, ...]:
        target = join(prefix, "shared.weight")
        return (
            shared(c),
            t5_stack(c, "encoder", c.int("num_layers"), False, target, bias_everywhere),
            t5_stack(c, "decoder", decoder_layers(c), True, target, bias_everywhere),
        )

    return build


def encoder_only(prefix: str = "", bias_everywhere: bool = False) -> Callable[[Cfg], tuple[Node, ...]]:
    """T5EncoderModel's modules. It hands the config to its stack unchanged, so an
    ``is_decoder: true`` config gives its encoder blocks cross-attention."""

    def build(c: Cfg) -> tuple[Node, ...]:
        target = join(prefix, "shared.weight")
        encoder = t5_stack(c, "encoder", c.int("num_layers"), c.bool("is_decoder"), target, bias_everywhere)
        return (shared(c), encoder)

    return build


def classification_head(c: Cfg, body: Block) -> list[Node]:
    h = c.int("d_model")
    return [
        block("classification_head", linear("dense", h, h), linear("out_proj", h, num_labels(c)), kind="output_head")
    ]


def output_head(c: Cfg, body: Block) -> list[Node]:
    """``lm_head``. transformers 5 forces ``tie_word_embeddings`` to true for T5/mT5 (the
    file's false only switches off output scaling), so a model built from a config has a
    tied head. Checkpoints whose config says false (v1.1, Flan-T5, mT5) store their own
    ``lm_head.weight``, which from_pretrained keeps untied; we count the checkpoint."""
    shape = (c.int("vocab_size"), c.int("d_model"))
    tied = c.bool("tie_word_embeddings")
    weight = Tie("weight", shape, target="shared.weight") if tied else Tensor("weight", shape)
    return [block("lm_head", weight, kind="output_head")]


def qa_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("qa_outputs", c.int("d_model"), num_labels(c), kind="output_head")]


def token_head(c: Cfg, body: Block) -> list[Node]:
    return [linear("classifier", c.int("d_model"), num_labels(c), kind="output_head")]


def classes(prefix: str, bias_everywhere: bool = False) -> dict[str, Builder]:
    """The T5 class set under a name prefix (``T5``, ``MT5``): their modules are the same.
    Most classes hold the backbone's modules as their own (attribute ``""``); the
    classification classes hold a whole backbone model under ``transformer``."""
    model = encoder_decoder("", bias_everywhere)
    return {
        f"{prefix}Model": base(model),
        f"{prefix}ForConditionalGeneration": with_head(model, "", output_head),
        f"{prefix}EncoderModel": base(encoder_only("", bias_everywhere)),
        f"{prefix}ForSequenceClassification": with_head(
            encoder_decoder("transformer", bias_everywhere), "transformer", classification_head
        ),
        f"{prefix}ForTokenClassification": with_head(
            encoder_only("transformer", bias_everywhere), "transformer", token_head
        ),
        f"{prefix}ForQuestionAnswering": with_head(model, "", qa_head),
    }


def untied_head_notes(c: Cfg, cls: str) -> list[str]:
    """Say where the count departs from a model transformers builds from the config alone."""
    if cls.endswith("ForConditionalGeneration") and not c.bool("tie_word_embeddings"):
        return [
            "tie_word_embeddings is false: lm_head.weight counted as its own tensor, as the checkpoint "
            "stores it (transformers 5 builds it tied to shared.weight from a config, untied when loading weights)"
        ]
    return []


def family(model_type: str, prefix: str, defaults: Mapping[str, Any], bias_everywhere: bool = False) -> Family:
    return Family(
        model_type=model_type,
        defaults=defaults,
        aliases=ALIASES,
        backbone=f"{prefix}Model",
        check=check,
        classes=classes(prefix, bias_everywhere),
        notes=untied_head_notes,
    )


FAMILY = family("t5", "T5", DEFAULTS)
