"""The KV-cache layout of a GGUF file, as llama.cpp (the runtime that reads GGUF) lays it out.

llama.cpp sizes each layer's cache from the file's metadata alone (``llama_kv_cache``,
src/llama-kv-cache.cpp): per cell, ``n_embd_k_gqa = key_length × head_count_kv(il)`` key
elements and ``n_embd_v_gqa = value_length × head_count_kv(il)`` value elements, where
``key_length`` and ``value_length`` default to ``embedding_length / head_count`` and
``head_count_kv`` (a number or one per layer) defaults to ``head_count``. Which layers slide is
llama.cpp's rule per architecture (``llama_model::load_hparams``), not transformers':

- ``gemma2``: every other layer (layers 0, 2, 4, …) slides, window ``attention.sliding_window``
  (4,096 when absent); ``gemma3``: five of every six (``il % 6 < 5``) when the file states a
  window, none otherwise.
- ``phi3``: llama.cpp disables Phi-3's sliding window (ggml-org/llama.cpp#13676): every layer
  keeps the whole context, where transformers' Phi-3 keeps a window.
- ``llama`` (Mistral 7B is converted as ``llama``), ``qwen2``, ``qwen3``, ``qwen2moe``,
  ``qwen3moe``, ``gemma``, ``starcoder2``, ``falcon``, ``gpt2``, ``gptneox``, ``bloom``: no
  sliding layers. Falcon keeps its ``head_count_kv`` heads (transformers' Falcon 40B/180B
  broadcasts them to every query head first).
- ``deepseek2`` with MLA (the file states ``attention.key_length_mla``, as conversions since
  ggml-org/llama.cpp#12801 do): one cached row of ``kv_lora_rank + rope`` elements per token and
  layer (``key_length`` with one KV head) and no value cache, the value being a view of it: the
  same latent transformers 5 and vLLM cache. An older deepseek2 file without MLA keys caches
  full per-head keys and values, as its metadata says.

The last ``nextn_predict_layers`` blocks of a file (multi-token-prediction layers, such as
GLM-4.7-Flash's in a deepseek2 file) keep no cache: ``llama_model::create_memory`` filters the
layers to ``il < n_layer()``, ``block_count − nextn_predict_layers``.

Other architectures are refused, naming the architecture. How many cells each layer holds at a
context (padding, the sliding-window cache's size) is :mod:`paramcount.memory.context.kv_cache`'s
``llama.cpp`` cache rule.
"""

from __future__ import annotations

from typing import Any

from ..arch.cache import LayerKind, Layout, NoLayout, _runs
from .meta import MAX_LAYERS, Meta, metadata

ARCHS = (
    "llama",
    "qwen2",
    "qwen3",
    "qwen2moe",
    "qwen3moe",
    "phi3",
    "gemma",
    "gemma2",
    "gemma3",
    "starcoder2",
    "falcon",
    "gpt2",
    "gptneox",
    "bloom",
    "deepseek2",
)
GEMMA2_WINDOW = 4096  # llama.cpp's default for a gemma2 file that states none
PATTERNS = {"gemma2": 2, "gemma3": 6}  # llama_hparams::set_swa_pattern(n): layer il slides if il % n < n − 1


def gguf_layout(model: Any, mla: str = "latent") -> Layout:
    """The cache layout llama.cpp builds for a GGUF model (see the module docstring)."""
    if model.model_type not in ARCHS:
        raise NoLayout(
            f"no KV-cache layout for GGUF architecture {model.model_type!r}; stated for: {', '.join(ARCHS)}",
            source=model.source,
        )
    meta = metadata(model)
    layers = meta.integer("block_count")
    if layers > MAX_LAYERS:
        raise NoLayout(f"{meta.arch}.block_count {layers:,} is over llama.cpp's {MAX_LAYERS}")
    window, notes = _window(meta)
    is_mla = _mla(meta)
    if is_mla and mla != "latent":
        raise NoLayout("llama.cpp caches the MLA latent of a GGUF file; --mla expanded is for transformers configs")
    mtp = meta.integer("nextn_predict_layers", 0, low=0)
    if mtp >= layers:
        raise NoLayout(
            f"{meta.arch}.nextn_predict_layers {mtp} leaves no layer of the model itself (a multi-token-prediction"
            " draft file); plan the model's own file"
        )
    if mtp:  # llama_model::create_memory: the cache holds il < n_layer() = block_count − nextn_predict_layers
        notes.append(f"the file's last {mtp} block(s) predict further tokens (nextn_predict_layers): no KV cache")
    kinds = _kinds(meta, layers - mtp, window, is_mla)
    notes.append(
        "GGUF: llama.cpp's cache layout (the runtime that reads the file), from its metadata; "
        "a transformers model of the same weights may slide other layers or cache other heads"
    )
    return Layout(model.name, model.model_type, tuple(kinds), tuple(notes), "latent" if is_mla else None, "llama.cpp")


def _window(meta: Meta) -> tuple[int | None, list[str]]:
    """llama.cpp's sliding window for this architecture: its width, or None when no layer slides."""
    if meta.arch == "gemma2":
        return meta.integer("attention.sliding_window", GEMMA2_WINDOW), []
    arch, stated = meta.arch, meta.integer("attention.sliding_window", 0, low=0)
    if arch == "gemma3":
        return stated or None, []
    if stated:
        said = "disables Phi-3's sliding window (ggml-org/llama.cpp#13676)" if arch == "phi3" else "ignores it"
        return None, [f"the file states a sliding window of {stated}; llama.cpp {said}: every layer keeps T tokens"]
    return None, []


def _mla(meta: Meta) -> bool:
    """llama.cpp's ``is_mla()``: a deepseek2 file with the MLA head sizes stated."""
    if meta.arch != "deepseek2":
        return False
    return meta.stated("attention.key_length_mla") and meta.stated("attention.value_length_mla")


def _kinds(meta: Meta, layers: int, window: int | None, is_mla: bool) -> list[LayerKind]:
    """The layers grouped by what each caches: (sliding?, KV heads, key and value widths)."""
    heads = meta.per_layer("attention.head_count")[:layers]  # of the file's blocks, the model's own
    kv = meta.per_layer("attention.head_count_kv", heads)[:layers]
    width = meta.integer("embedding_length") // max(heads[0], 1)
    d_k, d_v = meta.integer("attention.key_length", width), meta.integer("attention.value_length", width)
    period = PATTERNS.get(meta.arch) if window else None
    groups: dict[tuple[bool, int], list[int]] = {}
    for i in range(layers):
        if kv[i]:  # a layer without KV heads (a recurrent one) keeps no cache
            groups.setdefault((bool(window) and (period is None or i % period < period - 1), kv[i]), []).append(i)
    return [_kind(meta, at, sliding, n_kv, d_k, d_v, window, is_mla) for (sliding, n_kv), at in groups.items()]


def _kind(meta: Meta, at: list[int], sliding: bool, n_kv: int, d_k: int, d_v: int, w: Any, is_mla: bool) -> LayerKind:
    attention, where, window = ("sliding" if sliding else "full"), _runs(at), w if sliding else None
    if not is_mla:
        return LayerKind(attention, len(at), n_kv, d_k, d_v, window, where)
    rank = meta.integer("attention.kv_lora_rank")
    if n_kv != 1 or d_k <= rank:
        raise NoLayout(f"{meta.arch}: an MLA file caches one row of key_length > kv_lora_rank; got {n_kv} × {d_k}")
    return LayerKind(attention, len(at), 1, rank, d_k - rank, window, where, "mla-latent")
