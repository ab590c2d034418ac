"""DeBERTa-v2 and -v3 (He et al. 2020, 2021): BERT's post-norm layers with disentangled attention.
With ``relative_attention`` the encoder holds ``rel_embeddings``, ``2 · position_buckets`` rows
(else ``2 · max_relative_positions``, which ≤ 0 makes ``max_position_embeddings``), normed when
``norm_rel_ebd`` names ``layer_norm``; each layer adds ``pos_key_proj`` (``c2p`` in
``pos_att_type``) and ``pos_query_proj`` (``p2c``) unless ``share_att_key`` reuses its own key
and query. v3 checkpoints drop the absolute position table (``position_biased_input: false``)
and segment embeddings (``type_vocab_size: 0``). v2 x-large checkpoints add a convolution after
the first layer (``conv_kernel_size``, ``conv_groups``).

Several of these fields are not DebertaV2Config fields: the model reads them with ``getattr``
and a default (``share_att_key`` false, ``position_buckets`` -1, ``norm_rel_ebd`` "none",
``conv_kernel_size`` 0, ``embedding_size`` the hidden size, ``attention_head_size`` h/a), so
they are read here with the same defaults, not listed in DEFAULTS.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Node, Sym, Tensor, Tie, join
from . import Family
from .blocks import Builder, base, block, conv, embedding, find, linear, norm, num_labels, stack, with_head
from .config import Cfg

DEFAULTS = {
    "vocab_size": 128100,
    "hidden_size": 1536,
    "num_hidden_layers": 24,
    "num_attention_heads": 24,
    "intermediate_size": 6144,
    "max_position_embeddings": 512,
    "type_vocab_size": 0,
    "relative_attention": False,
    "max_relative_positions": -1,
    "pad_token_id": 0,
    "position_biased_input": True,
    "pos_att_type": None,
    "legacy": True,
    "tie_word_embeddings": True,
}

WORD = "embeddings.word_embeddings.weight"


def embedding_size(c: Cfg) -> Sym:
    """``embedding_size``, the hidden size when the file has none."""
    return c.int("embedding_size") if c.has("embedding_size") else c.int("hidden_size")


def attention_width(c: Cfg) -> Sym:
    """Q/K/V width: heads × ``attention_head_size``, or without one h/a each, which is h."""
    if c.has("attention_head_size"):
        return c.int("num_attention_heads") * c.int("attention_head_size")
    return c.int("hidden_size")


def whole(c: Cfg, field: str, default: int) -> int:
    """A getattr-read integer that may be ≤ 0 (meaning 'off')."""
    name, value = c.lookup(field, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise c.error(name, f"expected an integer, got {value!r}")
    return value


def pos_att_type(c: Cfg) -> list[Any]:
    """DebertaV2Config splits a string on '|' (lowercased); a list is kept as it is."""
    value = c.get("pos_att_type")
    if value is None:
        return []
    if isinstance(value, str):
        return [x.strip() for x in value.lower().split("|")]
    if not isinstance(value, list):
        raise c.error("pos_att_type", f"expected a string like 'p2c|c2p' or a list, got {value!r}")
    return value


def rel_rows(c: Cfg) -> int:
    """Rows of ``rel_embeddings``: twice the buckets, else twice the relative span."""
    buckets = whole(c, "position_buckets", -1)
    span = whole(c, "max_relative_positions", -1)
    span = span if span >= 1 else int(c.int("max_position_embeddings"))
    return 2 * (buckets if buckets > 0 else span)


def embeddings(c: Cfg) -> Block:
    """Word (and, when set, position and segment) tables at ``embedding_size``, projected to the
    hidden size without bias when the two differ, then a LayerNorm."""
    e, h = embedding_size(c), c.int("hidden_size")
    types = c.int("type_vocab_size", low=0)
    return block(
        "embeddings",
        embedding("word_embeddings", c.int("vocab_size"), e),
        embedding("position_embeddings", c.int("max_position_embeddings"), e)
        if c.bool("position_biased_input")
        else None,
        embedding("token_type_embeddings", types, e) if int(types) > 0 else None,
        linear("embed_proj", e, h, bias=False, kind="embeddings") if int(e) != int(h) else None,
        norm("LayerNorm", h),
        kind="embeddings",
    )


def attention(c: Cfg) -> Block:
    """DisentangledSelfAttention (biased Q/K/V over ``heads · attention_head_size``, and the
    position projections) and its output dense + LayerNorm."""
    h = c.int("hidden_size")
    width = attention_width(c)
    types = pos_att_type(c)
    own_pos = c.bool("relative_attention") and not c.bool("share_att_key", default=False)
    self_ = block(
        "self",
        linear("query_proj", h, width),
        linear("key_proj", h, width),
        linear("value_proj", h, width),
        linear("pos_key_proj", h, width) if own_pos and "c2p" in types else None,
        linear("pos_query_proj", h, width) if own_pos and "p2c" in types else None,
    )
    return block("attention", self_, block("output", linear("dense", h, h), norm("LayerNorm", h)), kind="attention")


def layer(c: Cfg) -> tuple[Node, ...]:
    h, i = c.int("hidden_size"), c.int("intermediate_size")
    return (
        attention(c),
        block("intermediate", linear("dense", h, i), kind="feed_forward"),
        block("output", linear("dense", i, h, kind="feed_forward"), norm("LayerNorm", h)),
    )


def encoder(c: Cfg) -> Block:
    h = c.int("hidden_size")
    relative = c.bool("relative_attention")
    normed = "layer_norm" in [x.strip() for x in c.str("norm_rel_ebd", default="none").lower().split("|")]
    kernel = whole(c, "conv_kernel_size", 0)
    conv_layer = None
    if kernel > 0:
        groups = whole(c, "conv_groups", 1)
        conv_layer = block("conv", conv("conv", h, h, kernel, groups), norm("LayerNorm", h))
    return block(
        "encoder",
        stack("layer", c.int("num_hidden_layers"), *layer(c)),
        embedding("rel_embeddings", rel_rows(c), h) if relative else None,
        norm("LayerNorm", h) if normed else None,
        conv_layer,
    )


def backbone(c: Cfg) -> tuple[Node, ...]:
    return embeddings(c), encoder(c)


def mlm_head(c: Cfg, body: Block) -> list[Node]:
    """``legacy`` (the default): ``cls.predictions`` — transform (hidden → embedding_size,
    LayerNorm), ``decoder`` to the vocabulary (its weight the word table and its bias
    ``cls.predictions.bias`` when tied) and that bias. Otherwise ``lm_predictions.lm_head``:
    dense, LayerNorm and a bias; the logits reuse the word table, so nothing is tied."""
    h, vocab = c.int("hidden_size"), c.int("vocab_size")
    if not c.bool("legacy"):
        head = block("lm_head", linear("dense", h, h), norm("LayerNorm", h), Tensor("bias", (vocab,)))
        return [block("lm_predictions", head, kind="output_head")]
    emb = find(body, WORD)
    e = emb.shape[1]
    tied = c.bool("tie_word_embeddings")
    decoder = block(
        "decoder",
        Tie("weight", emb.shape, join(body.name, WORD)) if tied else Tensor("weight", emb.shape),
        Tie("bias", (vocab,), "cls.predictions.bias") if tied else Tensor("bias", (vocab,)),
    )
    transform = block("transform", linear("dense", h, e), norm("LayerNorm", e))
    return [block("cls", block("predictions", Tensor("bias", (vocab,)), transform, decoder), kind="output_head")]


def pooled_head(outputs: int | None = None):
    """ContextPooler (``pooler_hidden_size`` square, the hidden size unless set) then the
    ``classifier`` from the hidden size to ``num_labels`` (or ``outputs``)."""

    def head(c: Cfg, body: Block) -> list[Node]:
        h = c.int("hidden_size")
        p = c.int("pooler_hidden_size") if c.has("pooler_hidden_size") else h
        out = num_labels(c) if outputs is None else outputs
        pooler = block("pooler", linear("dense", p, p), kind="pooler")
        return [pooler, linear("classifier", h, out, kind="output_head")]

    return head


def token_head(name: str):
    def head(c: Cfg, body: Block) -> list[Node]:
        return [linear(name, c.int("hidden_size"), num_labels(c), kind="output_head")]

    return head


def classes() -> dict[str, Builder]:
    return {
        "DebertaV2Model": base(backbone),
        "DebertaV2ForMaskedLM": with_head(backbone, "deberta", mlm_head),
        "DebertaV2ForSequenceClassification": with_head(backbone, "deberta", pooled_head()),
        "DebertaV2ForMultipleChoice": with_head(backbone, "deberta", pooled_head(1)),
        "DebertaV2ForTokenClassification": with_head(backbone, "deberta", token_head("classifier")),
        "DebertaV2ForQuestionAnswering": with_head(backbone, "deberta", token_head("qa_outputs")),
    }


def check(c: Cfg) -> None:
    c.divides("hidden_size", "num_attention_heads")
    pad, vocab = c.get("pad_token_id", None), c.int("vocab_size")
    # nn.Embedding(padding_idx=pad) refuses an index outside the vocabulary.
    if isinstance(pad, int) and not isinstance(pad, bool) and not -vocab <= pad < vocab:
        raise c.error("pad_token_id", f"{pad} is outside the vocabulary (vocab_size {int(vocab)})")
    pos_att_type(c)
    if whole(c, "conv_kernel_size", 0) > 0:
        groups = whole(c, "conv_groups", 1)
        if groups < 1 or int(c.int("hidden_size")) % groups:
            raise c.error("conv_groups", f"{groups} does not divide hidden_size ({int(c.int('hidden_size'))})")


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
    from .cache import NO_CACHE

    return [], [NO_CACHE]


FAMILY = Family(
    model_type="deberta-v2",
    defaults=DEFAULTS,
    backbone="DebertaV2Model",
    check=check,
    classes=classes(),
    cache_layout=cache_layout,
    extra_fields=(
        "share_att_key",
        "position_buckets",
        "norm_rel_ebd",
        "conv_kernel_size",
        "conv_groups",
        "conv_act",
        "embedding_size",
        "attention_head_size",
        "pooler_hidden_size",
    ),
)
