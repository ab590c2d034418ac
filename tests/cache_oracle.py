"""The cache oracle: what a real transformers cache holds after a CPU forward on a tiny model.

``real_cache_bytes`` sums every tensor a cache keeps: keys and values, a quantised layer's
states and scales, a sparse-attention indexer's keys, and a linear-attention or Mamba layer's
conv and recurrent states, and MiniMax's lightning-attention states (``MiniMaxCache.linear_cache``),
and DeepSeek-V4's compressor states; a tensor held twice (V4's values are its keys) counts once.
``expect_cache`` asserts paramcount's ``kv_cache`` equals it. Family oracle tests call it on a
tiny config of their family; paramcount itself never imports this.
"""

from __future__ import annotations

from typing import Any

import pytest

import paramcount
from paramcount.memory.context.kv_cache import kv_cache

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

V = 64  # vocabulary of every tiny model


def build(model_type: str, fields: dict[str, Any], cls: str, dtype: Any = None) -> Any:
    config = transformers.AutoConfig.for_model(
        model_type, **{k: v for k, v in fields.items() if v is not None and k != "model_type"}
    )
    torch.manual_seed(0)
    model = getattr(transformers, cls)(config).eval()
    return model.to(dtype) if dtype is not None else model


def layer_tensors(layer: Any) -> list[Any]:
    """The tensors a cache layer holds: keys, values, a quantised layer's states and scales,
    indexer keys, and conv and recurrent states."""
    found = [t for t in (getattr(layer, "keys", None), getattr(layer, "values", None)) if isinstance(t, torch.Tensor)]
    for q in (getattr(layer, "_quantized_keys", None), getattr(layer, "_quantized_values", None)):
        found += [t for t in (q or ()) if isinstance(t, torch.Tensor)]
    found += [t for t in (getattr(layer, "indexer_keys", None),) if isinstance(t, torch.Tensor)]
    # conv and recurrent states; DeepSeek-V4's compressors' entries, unfinished windows and
    # carried half-windows (DeepseekV4HCACache / DeepseekV4CSACache)
    named = ("conv_states", "recurrent_states", "compressed_kv", "buffer_kv", "buffer_gate")
    named += ("overlap_kv", "overlap_gate")
    for states in (getattr(layer, n, None) for n in named):
        if isinstance(states, dict):
            found += [t for t in states.values() if isinstance(t, torch.Tensor)]
    unique = {id(t): t for t in found}  # V4's compressed layers keep values as the keys: one tensor
    return list(unique.values())


def cache_bytes(cache: Any) -> int:
    """Bytes of every tensor in a transformers cache (both halves of an EncoderDecoderCache)."""
    if cache is None:
        return 0
    halves = (
        [cache.self_attention_cache, cache.cross_attention_cache]
        if hasattr(cache, "cross_attention_cache")
        else [cache]
    )
    found = [t for c in halves for layer in c.layers for t in layer_tensors(layer)]
    found += [t for t in getattr(cache, "linear_cache", ()) if isinstance(t, torch.Tensor)]  # MiniMaxCache
    return sum(t.numel() * t.element_size() for t in found)


def forward(model: Any, tokens: int, batch: int = 2, source: int | None = None, cache: Any = None) -> Any:
    ids = torch.randint(4, V, (batch, tokens))
    args: dict[str, Any] = {"input_ids": ids, "use_cache": True}
    if source is not None:
        encoder_input = torch.randint(4, V, (batch, source))
        if model.main_input_name == "input_features":  # Whisper: 2·source mel frames become source positions
            encoder_input = torch.randn(batch, model.config.num_mel_bins, 2 * source, dtype=model.dtype)
        args = {model.main_input_name: encoder_input, "decoder_input_ids": ids, "use_cache": True}
    if cache is not None:
        args["past_key_values"] = cache
    with torch.no_grad():
        out = model(**args)
    # Mamba's outputs carry the cache as cache_params
    return out.past_key_values if hasattr(out, "past_key_values") else out.cache_params


def ours(model_type: str, fields: dict[str, Any], cls: str) -> paramcount.Model:
    return paramcount.load({"model_type": model_type, **fields}, model_class=cls)


DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def expect_cache(
    model_type: str, fields: dict[str, Any], cls: str, tokens: int = 9, batch: int = 2, dtype: str = "fp32"
) -> int:
    """paramcount's cache bytes equal the real cache's after a ``batch`` × ``tokens`` prefill in
    ``dtype`` (the tiny config's vocabulary must be ``V``); returns the bytes."""
    model = build(model_type, {"vocab_size": V, **fields}, cls, getattr(torch, DTYPES[dtype]))
    real = cache_bytes(forward(model, tokens=tokens, batch=batch))
    mine = kv_cache(ours(model_type, {"vocab_size": V, **fields}, cls), tokens, batch=batch, dtype=dtype)
    assert real > 0
    assert mine.bytes == real, f"ours {mine.bytes:,} B ({[r.label for r in mine.layers]}), transformers {real:,} B"
    return real


def expect_seq2seq_cache(
    model_type: str, fields: dict[str, Any], cls: str, tokens: int = 7, source: int = 5, dtype: str = "fp32"
) -> int:
    """An encoder-decoder's self- and cross-attention caches after decoding ``tokens`` over a
    ``source``-token input equal paramcount's, row by row; returns the bytes."""
    fields = {"vocab_size": V, **fields}
    cache = forward(build(model_type, fields, cls, getattr(torch, DTYPES[dtype])), tokens=tokens, source=source)
    got = kv_cache(ours(model_type, fields, cls), tokens, batch=2, dtype=dtype, encoder_length=source)
    rows = {r.kind.attention: r.bytes for r in got.layers}
    real = {"full": cache_bytes(cache.self_attention_cache), "cross": cache_bytes(cache.cross_attention_cache)}
    assert rows == real, f"ours {rows}, transformers {real}"
    assert got.bytes == cache_bytes(cache)
    return got.bytes
