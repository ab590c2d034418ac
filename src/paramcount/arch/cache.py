"""What each attention layer keeps in the KV cache, per token: heads, key and value widths, window.

The layout follows transformers 5's own caches (``DynamicCache(config=...)``, which reads
``layer_types`` and ``sliding_window`` after each config class's ``__post_init__``), read
through the family machinery so that absent fields take the transformers defaults:

- MHA, GQA, MQA: ``n_kv`` heads of ``d_head`` for keys and values alike (Falcon's
  ``multi_query`` is one K/V head; its ``new_decoder_architecture`` (40B, 180B) broadcasts the
  K/V groups to every query head before caching, so transformers keeps ``a`` heads there).
- Sliding-window layers (Mistral, Phi-3, StarCoder2 ``sliding_window``; Gemma 2's
  alternation; Gemma 3's ``layer_types`` / ``sliding_window_pattern``; Qwen's
  ``use_sliding_window`` with ``max_window_layers``; any explicit ``layer_types`` list).
- MLA (DeepSeek-V3): transformers 5.23 caches the compressed latent, one "head" with the
  ``kv_lora_rank``-wide normed latent as the key and the ``qk_rope_head_dim``-wide rotary key
  as the value, which is also what MLA-aware runtimes (vLLM, SGLang) keep; ``mla="expanded"``
  gives instead the per-head keys (``qk_nope + qk_rope``) and values (``v_head_dim``) that
  older transformers versions and naive implementations cache.
- Encoder-decoder (T5, mT5, BART): decoder self-attention grows with the target length,
  cross-attention holds the encoder's keys and values, fixed by the source length.
- Encoder-only models (BERT family) keep no cache.

- Recurrent state (Mamba, gated DeltaNet and other linear attention, short convolutions): a
  ``"state"`` kind holds a fixed number of elements per layer and sequence (``state``), however
  long the context: transformers' ``LinearAttentionLayer`` conv and recurrent states.
- Sparse-attention indexers (DeepSeek-V3.2, GLM-5): one key of ``index_head_dim`` per token,
  ``stores="indexer"`` (``DynamicIndexedLayer.indexer_keys``).

A family states its own layout with ``Family.cache_layout`` (built from :func:`self_kinds`,
:func:`state_kind` and :func:`typed_groups`); the older families' are in :data:`BUILDERS`.
Layers are grouped by kind with counts; patterns are counted arithmetically, never unrolled.
A GGUF file gets llama.cpp's layout instead (:mod:`paramcount.gguf.kv`). A model read
without a transformers config (a ``print(model)`` text, a bare checkpoint) or of a family with
no layout here raises :class:`NoLayout`, which planners take as "weights only".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError
from . import falcon, llama, mistral, t5
from .config import MAX_DIM, Cfg

MLA_FORMS = ("latent", "expanded")

# Class defaults of ``sliding_window`` in the config classes that have the field; in any other
# family a file's ``sliding_window`` is kept as an extra attribute, which DynamicCache honours too.
WINDOW_DEFAULTS = {
    "mistral": 4096,
    "gemma2": 4096,
    "gemma3_text": 4096,
    "qwen2": 4096,
    "qwen2_moe": 4096,
    "qwen3": 4096,
    "qwen3_moe": 4096,
}
USE_SLIDING = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")  # ``use_sliding_window`` gates the window
MAX_WINDOW_LAYERS = 28  # Qwen2/Qwen3/Qwen2-MoE class default
LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "sliding"}


# DeepSeek-V4's compressed-attention kinds, with how many tokens each keeps per layer and sequence.
COMPRESSED = {
    "compressed": "⌊T/{m}⌋ entries",
    "buffer": "T mod {m} tokens",
    "overlap": "{m} tokens once T ≥ {m}",
}


class NoLayout(ParamcountError):
    """The source says too little for a KV-cache layout: no transformers config, a family or
    GGUF architecture without a layout here, or GGUF metadata that lacks a key."""


@dataclass(frozen=True)
class LayerKind:
    """Layers that cache alike: ``layers`` of them, each keeping per token and per sequence
    ``kv_heads · key_dim`` key elements and ``kv_heads · value_dim`` value elements.

    ``attention`` is ``"full"`` (grows with the context), ``"sliding"`` (capped by ``window``),
    ``"cross"`` (encoder-decoder cross-attention: fixed by the encoder length) or ``"state"``
    (a recurrent or convolution state: ``state`` elements per layer and sequence, constant in
    the context; its key and value fields are 0).
    ``stores`` is ``"kv"``, for MLA ``"mla-latent"`` / ``"mla-expanded"``, ``"indexer"`` for a
    sparse-attention indexer's keys (one head, ``value_dim`` 0), and for a state what it is
    (``"conv state"``, ``"SSM state"``, ``"recurrent state"``).
    ``dtype`` fixes the element type where transformers keeps it whatever the cache dtype
    (a recurrent state kept in fp32); None follows the cache dtype.
    ``where`` says which layer indices, in words.

    Compressed attention (DeepSeek-V4) adds three kinds, each with its ``rate`` m (tokens per
    compressed entry): ``"compressed"`` keeps one entry per m tokens (⌊T/m⌋), ``"buffer"`` the
    tokens of the window not yet complete (T mod m) and ``"overlap"`` the last complete
    window's carried half (m tokens once T ≥ m); ``stores`` names what each holds.
    """

    attention: str
    layers: int
    kv_heads: int
    key_dim: int
    value_dim: int
    window: int | None = None
    where: str = ""
    stores: str = "kv"
    state: int = 0
    dtype: str | None = None
    rate: int = 1
    source: int | None = None  # cross-attention over an encoder output of fixed length (Whisper's frames)

    @property
    def per_token_elements(self) -> int:
        """Key plus value elements one token adds across these layers, for one sequence (a
        compressed kind: one entry's per m tokens, so this is per m tokens; buffers and carried
        windows, bounded by m, add none)."""
        if self.attention in ("buffer", "overlap"):
            return 0
        return self.layers * self.kv_heads * (self.key_dim + self.value_dim)

    @property
    def label(self) -> str:
        if self.attention == "state":
            return f"{self.stores} (constant in context)"
        if self.attention in COMPRESSED:
            return f"{self.stores} ({COMPRESSED[self.attention].format(m=self.rate)})"
        name = {"full": "full attention", "sliding": "sliding window", "cross": "cross-attention"}[self.attention]
        if self.window is not None:
            name += f" (W = {self.window:,})"
        if self.stores == "indexer":
            name += ", indexer keys"
        elif self.stores == "k=v":
            name += ", keys = values"
        elif self.stores != "kv":
            name += f", MLA {self.stores.removeprefix('mla-')}"
        return name


@dataclass(frozen=True)
class Layout:
    """The attention layout of a model: its cached layer kinds and what was assumed."""

    model: str
    model_type: str
    kinds: tuple[LayerKind, ...]
    notes: tuple[str, ...] = ()
    mla: str | None = None  # the MLA form used, for MLA models
    runtime: str = "transformers"  # whose layout: "transformers", or "llama.cpp" for a GGUF file
    source: str = ""  # what cross-attention layers attend to, where not an encoder's output (images' states)

    @property
    def has_cache(self) -> bool:
        return bool(self.kinds)

    @property
    def per_token_elements(self) -> int:
        """Elements one token of context adds to one sequence, before window caps (cross-attention,
        which grows with the encoder length instead, excluded)."""
        return sum(k.per_token_elements for k in self.kinds if k.attention not in ("cross", "compressed"))

    def per_token_bits(self, bits: int) -> int:
        """Bits one token adds to one sequence, before window caps, rounded up: the per-token
        kinds' elements, and a compressed kind's entry shared by its m tokens."""
        whole = self.per_token_elements * bits
        parts = [(k.per_token_elements * bits, k.rate) for k in self.kinds if k.attention == "compressed"]
        if not parts:
            return whole
        from fractions import Fraction

        return whole + math.ceil(sum(Fraction(b, m) for b, m in parts))


# --- which layers slide -------------------------------------------------------------------

Group = tuple[str, int, str, int | None]  # (full | sliding, how many layers, which in words, window)


def window(c: Cfg, model_type: str) -> int | None:
    """``config.sliding_window`` after the config class's ``__post_init__``."""
    w = c.raw["sliding_window"] if "sliding_window" in c.raw else WINDOW_DEFAULTS.get(model_type)
    if model_type in USE_SLIDING and not c.bool("use_sliding_window", False):
        return None
    if w is not None and model_type == "gemma3_text" and c.raw.get("use_bidirectional_attention"):
        w = _positive(c, "sliding_window", w) // 2 + 1  # Gemma3TextConfig halves a bidirectional window
    return None if w is None else _positive(c, "sliding_window", w)


def _positive(c: Cfg, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIM:
        raise c.error(field, f"expected a positive integer up to {MAX_DIM:,}, got {value!r}")
    return value


def layer_groups(c: Cfg, model_type: str, layers: int) -> list[Group]:
    """The self-attention layer kinds as ``DynamicCache(config=...)`` builds them."""
    w = window(c, model_type)
    if c.raw.get("layer_types") is not None:
        return _explicit(c, c.raw["layer_types"], layers, w)
    if model_type in ("gemma2", "gemma3_text") and w is not None:
        pattern = 2 if model_type == "gemma2" else c.raw.get("sliding_window_pattern", 6)
        return _every(layers, _positive(c, "sliding_window_pattern", pattern), w)
    if model_type in ("qwen2", "qwen3") and w is not None:
        return _from(layers, _max_window_layers(c), w)
    if model_type == "qwen2_moe" and w is not None:
        return _even_below(layers, _max_window_layers(c), w)
    if w is None and c.raw.get("attention_chunk_size") is not None:
        w = _positive(c, "attention_chunk_size", c.raw["attention_chunk_size"])
    return [("sliding" if w is not None else "full", layers, _span(0, layers), w)]


def _max_window_layers(c: Cfg) -> int:
    return int(c.int("max_window_layers", low=0, default=MAX_WINDOW_LAYERS))


def _explicit(c: Cfg, types: Any, layers: int, w: int | None) -> list[Group]:
    """A file's ``layer_types`` list, grouped (it is in memory already: nothing is unrolled)."""
    if not isinstance(types, list) or len(types) != layers:
        got = f"{len(types)} entries" if isinstance(types, list) else repr(types)
        raise c.error("layer_types", f"expected a list of {layers} layer types, got {got}")
    unknown = sorted({repr(t) for t in types if t not in LAYER_TYPES})
    if unknown:
        raise c.error("layer_types", f"no KV-cache layout for layer type(s) {', '.join(unknown)}")
    out = []
    for name, kind in LAYER_TYPES.items():
        at = [i for i, t in enumerate(types) if t == name]
        if at:
            out.append((kind, len(at), _runs(at), _layer_window(c, name, w)))
    return out


def _layer_window(c: Cfg, layer_type: str, w: int | None) -> int | None:
    """The window of one layer type: none, ``sliding_window``, or ``attention_chunk_size``."""
    if layer_type == "full_attention":
        return None
    field = "attention_chunk_size" if layer_type == "chunked_attention" else "sliding_window"
    value = c.raw.get(field) if field == "attention_chunk_size" else w
    if value is None:
        raise c.error(field, f"layer_types names {layer_type} layers but {field} is null")
    return _positive(c, field, value)


def _every(layers: int, period: int, w: int) -> list[Group]:
    """Every ``period``-th layer (from ``period - 1``) full, the others sliding (Gemma 2, Gemma 3)."""
    full = layers // period
    full_at = _progression(period - 1, period, full)
    sliding_at = _progression(0, 2, layers - full) if period == 2 else f"all but {full_at}" if full else "all"
    return _present([("sliding", layers - full, sliding_at, w), ("full", full, full_at, None)])


def _from(layers: int, first: int, w: int) -> list[Group]:
    """Layers from ``first`` on slide (Qwen2, Qwen3: ``max_window_layers``)."""
    first = min(first, layers)
    return _present([("full", first, _span(0, first), None), ("sliding", layers - first, _span(first, layers), w)])


def _even_below(layers: int, limit: int, w: int) -> list[Group]:
    """Even layers below ``limit`` slide (Qwen2-MoE's own rule)."""
    sliding = (min(limit, layers) + 1) // 2
    groups = [("sliding", sliding, _progression(0, 2, sliding), w), ("full", layers - sliding, "the rest", None)]
    return _present(groups)


def _present(groups: list[Group]) -> list[Group]:
    return [g for g in groups if g[1]]


def _span(start: int, stop: int) -> str:
    return str(start) if stop - start == 1 else f"{start}–{stop - 1}"


def _progression(start: int, step: int, count: int) -> str:
    if count <= 4:
        return ", ".join(str(start + step * i) for i in range(count))
    return f"{start}, {start + step}, {start + 2 * step}, …, {start + step * (count - 1)}"


def _runs(indices: Sequence[int], shown: int = 6) -> str:
    """Indices as ranges: ``0–4, 6–10, 12``; after ``shown`` runs, an ellipsis."""
    runs, start = [], indices[0]
    for prev, cur in zip(indices, [*indices[1:], None], strict=True):
        if cur != prev + 1:
            runs.append(_span(start, prev + 1))
            start = cur
    return ", ".join(runs[:shown]) + (", …" if len(runs) > shown else "")


# --- families ------------------------------------------------------------------------------

Kinds = tuple[list[LayerKind], list[str]]
Builder = Callable[[Cfg, str, str, str], Kinds]  # (cfg, model_type, class name, mla form)
Heads = Callable[[Cfg], tuple[int, int]]  # (kv heads, head dim)

NO_CACHE = "an encoder-only model attends over its whole input in one pass and keeps no KV cache"
CROSS_NOTE = (
    "cross-attention caches the encoder's keys and values once per decoder layer; "
    "it is sized by the encoder (source) length, not the generated length"
)


def _llama_heads(c: Cfg) -> tuple[int, int]:
    return int(llama.kv_heads(c)), int(llama.head_dim(c))


def _mistral_heads(c: Cfg) -> tuple[int, int]:
    return int(mistral.kv_heads(c)), int(llama.head_dim(c))


def _mha_heads(c: Cfg) -> tuple[int, int]:
    a = int(c.int("num_attention_heads"))
    return a, int(c.int("hidden_size")) // a


def _falcon(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    """Falcon's new architecture (40B, 180B) broadcasts its K/V groups to every query head
    before caching them, so transformers caches ``a`` heads, not ``num_kv_heads``."""
    a, kv = int(c.int("num_attention_heads")), int(falcon.kv_heads(c))
    d = int(c.int("hidden_size")) // a
    if not c.bool("new_decoder_architecture") or kv == a:
        return _self_kinds(c, model_type, (kv, d, d))
    kinds, notes = _self_kinds(c, model_type, (a, d, d))
    said = (
        f"transformers' Falcon broadcasts its {kv} K/V heads to all {a} query heads before caching them "
        f"(counted so); a GQA-aware server (vLLM, TGI) keeps {kv}, {a // kv}× less"
    )
    return kinds, [*notes, said]


def _self_kinds(c: Cfg, model_type: str, dims: tuple[int, int, int], stores: str = "kv") -> Kinds:
    """A decoder stack's self-attention kinds, one per layer group; ``dims`` = (n_kv, d_k, d_v)."""
    groups = layer_groups(c, model_type, int(c.int("num_hidden_layers")))
    kinds = [LayerKind(kind, n, *dims, w, where, stores) for kind, n, where, w in groups]
    return kinds, window_notes(kinds)


self_kinds = _self_kinds  # for families' ``cache_layout``


def window_notes(kinds: Sequence[LayerKind]) -> list[str]:
    """The note every layout with sliding layers carries."""
    if not any(k.window for k in kinds):
        return []
    return ["a sliding-window layer keeps at most its last W−1 tokens in a DynamicCache (W in a StaticCache)"]


def state_kind(layers: int, elements: int, stores: str, where: str, dtype: str | None = None) -> LayerKind:
    """``layers`` layers each keeping ``elements`` state elements per sequence (Mamba's SSM
    state, a DeltaNet recurrent state, a convolution's last kernel−1 inputs)."""
    return LayerKind("state", layers, 0, 0, 0, where=where, stores=stores, state=elements, dtype=dtype)


def typed_groups(c: Cfg, field: str, types: Any, layers: int) -> dict[str, tuple[int, str]]:
    """A per-layer list of layer types (``layer_types``, a decoded hybrid pattern) as
    ``{type: (how many layers, which in words)}``, in first-seen order; the list is already
    in memory, so this walks it once without unrolling anything else."""
    if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
        got = f"{len(types)} entries" if isinstance(types, list) else repr(types)
        raise c.error(field, f"expected a list of {layers} layer type names, got {got}")
    return grouped(types)


def grouped(kinds: Sequence[Any]) -> dict[Any, tuple[int, str]]:
    """Any per-layer list of hashable kinds as ``{kind: (how many layers, which in words)}``,
    in first-seen order (a family whose layers differ in more than their type: Gemma 4's head
    sizes and KV sharing)."""
    at: dict[Any, list[int]] = {}
    for i, t in enumerate(kinds):
        at.setdefault(t, []).append(i)
    return {t: (len(idx), _runs(idx)) for t, idx in at.items()}


def _decoder(heads: Heads) -> Builder:
    """A decoder-only family whose attention caches ``heads(c)`` = (n_kv, d_head)."""

    def build(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
        kv, d = heads(c)
        return _self_kinds(c, model_type, (kv, d, d))

    return build


def _with_cross(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    """GPT-2 and BERT-family decoders: cross-attention when built as an encoder-decoder's decoder."""
    if model_type != "gpt2" and not c.bool("is_decoder"):
        return [], [NO_CACHE + " (is_decoder is false)"]
    kv, d = _mha_heads(c)
    kinds, notes = _self_kinds(c, model_type, (kv, d, d))
    if not c.bool("add_cross_attention"):
        return kinds, notes
    cross = LayerKind("cross", int(c.int("num_hidden_layers")), kv, d, d, where=kinds[0].where)
    return [*kinds, cross], [*notes, CROSS_NOTE + " (only when run with encoder states)"]


def _encoder_only(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    return [], [NO_CACHE]


def _deepseek(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    """MLA: the latent (r_kv as the key, d_rope as the value, one head) or per-head K and V."""
    r_kv, rope = int(c.int("kv_lora_rank")), int(c.int("qk_rope_head_dim"))
    if mla == "latent":
        kinds, notes = _self_kinds(c, model_type, (1, r_kv, rope), "mla-latent")
        said = f"MLA latent: kv_lora_rank + qk_rope_head_dim = {r_kv + rope:,} elements per token per layer"
        return kinds, [*notes, said + ", as transformers 5, vLLM and SGLang cache it"]
    a, nope, v = int(c.int("num_attention_heads")), int(c.int("qk_nope_head_dim")), int(c.int("v_head_dim"))
    kinds, notes = _self_kinds(c, model_type, (a, nope + rope, v), "mla-expanded")
    return kinds, [*notes, "MLA expanded: per-head keys and values; transformers 5 itself caches the latent"]


def _encoder_decoder(c: Cfg, layers: int, heads: int, d: int, cls: str) -> Kinds:
    where = _span(0, layers)
    self_attn = LayerKind("full", layers, heads, d, d, where=where)
    if cls.endswith("ForCausalLM"):  # the decoder alone (BartForCausalLM): no encoder to attend to
        return [self_attn], ["decoder only: no cross-attention cache without encoder states"]
    return [self_attn, LayerKind("cross", layers, heads, d, d, where=where)], [CROSS_NOTE]


def _t5(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    if cls.endswith(("EncoderModel", "ForTokenClassification")):  # the latter wraps a T5EncoderModel
        return [], [NO_CACHE + f" ({cls})"]
    return _encoder_decoder(c, int(t5.decoder_layers(c)), int(c.int("num_heads")), int(c.int("d_kv")), cls)


def _bart(c: Cfg, model_type: str, cls: str, mla: str) -> Kinds:
    h, a = int(c.int("d_model")), int(c.int("decoder_attention_heads"))
    return _encoder_decoder(c, int(c.int("decoder_layers")), a, h // a, cls)


BUILDERS: dict[str, Builder] = {
    **dict.fromkeys(("llama", "gemma", "gemma2", "gemma3_text", "phi", "phi3"), _decoder(_llama_heads)),
    **dict.fromkeys(
        ("mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "olmo", "starcoder2"),
        _decoder(_mistral_heads),
    ),
    **dict.fromkeys(("gpt_neox", "gptj", "bloom", "opt"), _decoder(_mha_heads)),
    "falcon": _falcon,
    "deepseek_v3": _deepseek,
    **dict.fromkeys(("gpt2", "bert", "roberta", "xlm-roberta", "camembert", "electra"), _with_cross),
    **dict.fromkeys(("distilbert", "albert", "mpnet"), _encoder_only),
    **dict.fromkeys(("t5", "mt5", "umt5"), _t5),
    **dict.fromkeys(("bart", "mbart", "m2m_100", "marian"), _bart),
}
