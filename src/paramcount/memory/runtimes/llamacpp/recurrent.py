"""What llama.cpp keeps for the hybrid and state-space families: recurrent states and the KV
cache of their attention layers.

Read in llama-cpp-python 0.3.36's vendored llama.cpp (src/ and src/models/):

* ``llama_model::create_memory`` (llama-model.cpp): ``mamba`` and ``mamba2``
  (``llm_arch_is_recurrent``) get a ``llama_memory_recurrent``; the hybrids
  (``llm_arch_is_hybrid``) a ``llama_memory_hybrid``: a ``llama_kv_cache`` over the layers its
  ``filter_attn`` admits and a ``llama_memory_recurrent`` over those ``filter_recr`` admits
  (Falcon-H1: every layer in both; Nemotron-H: attention where the layer has neither a
  recurrent mixer nor a feed-forward; Qwen3-Next and Qwen3.5: only the ``n_layer()`` trunk
  layers, not the MTP block; the others: the non-recurrent layers). The attention cache is an
  ordinary ``llama_kv_cache`` of ``n_ctx_seq`` cells per stream (LFM2 with a stated sliding
  window: ``llama_memory_hybrid_iswa``, the same rules as ``llama_kv_cache_iswa``).
* ``llama_memory_recurrent::llama_memory_recurrent`` (llama-memory-recurrent.cpp): for each
  recurrent layer below ``n_layer()``, ``cache_r_l`` of ``n_embd_r()`` and ``cache_s_l`` of
  ``n_embd_s()`` F32 values (``type_r``/``type_s``: ``GGML_TYPE_F32`` in create_memory) per
  cell, ``mem_size = max(1, n_seq_max)`` cells × (1 + ``n_rs_seq``) rows (``n_rs_seq``, the
  rollback snapshots, is 0 in ``llama_context_default_params``); one buffer per device, each
  tensor padded to its alignment (``ggml_backend_alloc_ctx_tensors_from_buft``: 32 B for the
  CPU, 128 B for CUDA).
* ``llama_hparams::n_embd_r`` / ``n_embd_s`` (llama-hparams.cpp): LFM2's short convolution
  keeps ``n_embd · (l_cache − 1)`` and no S; Kimi's KDA ``3 · (d_conv − 1) · n_head · head_dim``
  and ``head_dim² · n_head``; the Mamba family (Mamba, Mamba-2, Jamba, Falcon-H1, Granite,
  Nemotron-H, and Qwen's gated DeltaNet, written in the same keys) ``(d_conv − 1) · (d_inner +
  2 · n_group · d_state)`` and ``d_state · d_inner``.
* Which layers are recurrent: each architecture's ``load_arch_hparams`` (src/models/*.cpp):
  Mamba and Mamba-2 all, Falcon-H1 all, Jamba, Granite, LFM2 and Kimi those with no KV heads,
  Nemotron-H those with neither KV heads nor a feed-forward, Qwen those the file's
  ``attention.recurrent_layers`` names, else all but every ``full_attention_interval``-th.

A GGUF file's metadata gives these directly (:func:`hparams`). From a config, the metadata is
the one llama.cpp's converter writes (``set_gguf_parameters`` of each class in conversion/*.py,
:func:`converted_meta`), and then the same rules apply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ....arch.cache import LayerKind, Layout, NoLayout, _runs, state_kind
from ....gguf.meta import MAX_LAYERS
from ...core.terms import Term

# llm_arch_is_recurrent and llm_arch_is_hybrid (llama-arch.cpp), the architectures modelled here
RECURRENT = ("mamba", "mamba2")
HYBRID = ("jamba", "falcon-h1", "granitehybrid", "nemotron_h", "lfm2", "qwen3next", "qwen35", "qwen35moe")
HYBRID += ("kimi-linear", "nemotron_h_moe")
_NEMOTRON = ("nemotron_h", "nemotron_h_moe")  # one load_arch_hparams (llama_model_nemotron_h_moe reuses it)
ARCHS = RECURRENT + HYBRID
_QWEN = ("qwen3next", "qwen35", "qwen35moe")
_BY_KV_HEADS = ("jamba", "granitehybrid", "lfm2", "kimi-linear")  # is_recr: n_head_kv(il) == 0
F32 = 4
ALIGNMENT = {"cpu": 32, "gpu": 128}  # TENSOR_ALIGNMENT (ggml-impl.h); ggml_backend_cuda_buffer_type_get_alignment
# the keys each load_arch_hparams (src/models/<arch>.cpp) requires, which llama.cpp refuses a file without
_SSM = ("ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank")
_GROUPED = (*_SSM, "ssm.group_count")
REQUIRED = {
    "mamba": _SSM, "jamba": _SSM, "lfm2": ("shortconv.l_cache",),
    "kimi-linear": ("ssm.conv_kernel", "kda.head_dim", "attention.kv_lora_rank"),
    **dict.fromkeys(("mamba2", "falcon-h1", "granitehybrid", "nemotron_h", "nemotron_h_moe"), _GROUPED),
    **dict.fromkeys(("qwen3next", "qwen35", "qwen35moe"), _GROUPED),
}  # fmt: skip


@dataclass(frozen=True)
class Hparams:
    """What ``create_memory`` reads: the recurrent layers, each attention layer's cache widths,
    and the per-cell state widths."""

    arch: str
    n_embd: int
    n_layer: int  # n_layer(): block_count less nextn_predict_layers
    recurrent: tuple[int, ...]  # layers holding cache_r_l / cache_s_l
    attention: tuple[tuple[int, int, int, int], ...]  # (layer, n_head_kv, n_embd_head_k, n_embd_head_v)
    n_embd_r: int
    n_embd_s: int
    window: int | None = None  # LFM2's sliding window, where the file states one: its attention slides
    rank: int = 0  # is_mla(): kv_lora_rank; the K row is the latent and rope key, there is no V
    ssm: tuple[int, int, int, int] = (0, 0, 0, 0)  # (d_inner, d_state, n_group, dt_rank) of a Mamba mixer


def hparams(meta: Any) -> Hparams:
    """llama.cpp's hparams for a GGUF architecture of :data:`ARCHS` from its metadata
    (a :class:`paramcount.gguf.meta.Meta`)."""
    arch = meta.arch
    n_all = meta.integer("block_count")
    if n_all > MAX_LAYERS:
        raise NoLayout(f"{arch}.block_count {n_all:,} is over llama.cpp's {MAX_LAYERS}")
    n = n_all - meta.integer("nextn_predict_layers", 0, low=0)
    if n < 1:
        raise NoLayout(f"{arch}.nextn_predict_layers leaves no trunk layer of {n_all}")
    for key in REQUIRED.get(arch, ()):  # load_arch_hparams' ml.get_key(..., required)
        if not meta.has(key):
            raise meta.missing(key)
    heads = meta.per_layer("attention.head_count", 0)
    kv = meta.per_layer("attention.head_count_kv", heads)
    ff = meta.per_layer("feed_forward_length", 0)
    recr = _is_recr(meta, n, n_all, kv, ff)
    attn = [_has_attention(arch, il, n, recr, ff) for il in range(n_all)]
    d_k, d_v = _head_sizes(meta, heads[0])
    attention = tuple((il, kv[il], d_k, d_v) for il in range(n_all) if attn[il] and kv[il])
    window = meta.integer("attention.sliding_window", 0, low=0) if arch == "lfm2" else 0
    recurrent = tuple(il for il in range(n) if recr[il])
    r, s = _state_widths(meta, heads[0])
    ssm = tuple(
        meta.integer(f"ssm.{k}", 0, low=0) for k in ("inner_size", "state_size", "group_count", "time_step_rank")
    )
    h = meta.integer("embedding_length")
    return Hparams(arch, h, n, recurrent, attention, r, s, window or None, _mla_rank(meta, attention), ssm)


def _mla_rank(meta: Any, attention: tuple[tuple[int, int, int, int], ...]) -> int:
    """``is_mla()`` (both MLA head sizes stated): the cached row is ``key_length`` wide, the
    latent (``kv_lora_rank``) and the rope key, for the one KV head of MLA written as MQA."""
    if not (meta.stated("attention.key_length_mla") and meta.stated("attention.value_length_mla")):
        return 0
    rank = meta.integer("attention.kv_lora_rank")
    if any(kv != 1 or d_k <= rank for _, kv, d_k, _ in attention):
        raise NoLayout(f"{meta.arch}: an MLA file caches one row of key_length > kv_lora_rank per layer")
    return rank


def _is_recr(meta: Any, n: int, n_all: int, kv: list[int], ff: list[int]) -> list[bool]:
    """``hparams.is_recr_impl`` as each ``load_arch_hparams`` sets it (see the module docstring)."""
    arch = meta.arch
    if arch in RECURRENT or arch == "falcon-h1":
        return [True] * n_all
    if arch in _BY_KV_HEADS:
        return [il < n and kv[il] == 0 for il in range(n_all)]
    if arch in _NEMOTRON:
        return [il < n and kv[il] == 0 and ff[il] == 0 for il in range(n_all)]
    stated = meta.flags("attention.recurrent_layers")  # Qwen: get_key_or_arr(..., n_layer_all)
    if stated is not None:
        return stated
    every = meta.integer("full_attention_interval", 4)
    return [il < n and (il + 1) % every != 0 for il in range(n_all)]


def _has_attention(arch: str, il: int, n: int, recr: list[bool], ff: list[int]) -> bool:
    """``filter_attn`` of ``create_memory`` (none for the purely recurrent architectures)."""
    if arch in RECURRENT:
        return False
    if arch == "falcon-h1":
        return True
    if arch in _NEMOTRON:
        return not recr[il] and ff[il] == 0
    if arch in _QWEN:
        return il < n and not recr[il]
    return not recr[il]


def _head_sizes(meta: Any, n_head: int) -> tuple[int, int]:
    """``n_embd_head_k`` / ``n_embd_head_v``: ``key_length`` / ``value_length``, by default
    ``n_embd / n_head`` (0 without heads: ``llama_model::load_hparams``)."""
    if n_head == 0:
        return 0, 0
    width = meta.integer("embedding_length") // n_head
    return meta.integer("attention.key_length", width), meta.integer("attention.value_length", width)


def _state_widths(meta: Any, n_head: int) -> tuple[int, int]:
    """``llama_hparams::n_embd_r()`` and ``n_embd_s()``."""
    l_cache = meta.integer("shortconv.l_cache", 0, low=0)
    if l_cache:  # LFM2
        return meta.integer("embedding_length") * (l_cache - 1), 0
    kernel = meta.integer("ssm.conv_kernel", 0, low=0)
    kda = meta.integer("kda.head_dim", 0, low=0)
    if kda:  # Kimi's KDA: q, k and v convolutions, a head_dim² state per head
        return 3 * (kernel - 1 if kernel else 3) * n_head * kda, kda * kda * n_head
    inner, state = meta.integer("ssm.inner_size", 0, low=0), meta.integer("ssm.state_size", 0, low=0)
    groups = meta.integer("ssm.group_count", 0, low=0)
    return max(kernel - 1, 0) * (inner + 2 * groups * state), state * inner


# ---- the layout and the state's bytes ------------------------------------------------------------

R_STORES, S_STORES = "R state (cache_r_l: convolution)", "S state (cache_s_l: recurrent)"


def layout(name: str, model_type: str, h: Hparams) -> Layout:
    """The cache layout: attention kinds (layers grouped by what they cache) and, for the
    recurrent layers, the R and S states."""
    at: dict[tuple[int, int, int], list[int]] = {}
    for il, kv, d_k, d_v in h.attention:
        at.setdefault((kv, d_k, d_v), []).append(il)
    kinds = [_attention_kind(h, key, layers) for key, layers in at.items()]
    if h.recurrent:
        where = _runs(list(h.recurrent))
        kinds += [state_kind(len(h.recurrent), h.n_embd_r, R_STORES, where, "f32")]
        kinds += [state_kind(len(h.recurrent), h.n_embd_s, S_STORES, where, "f32")]
    said = "a KV cache for the attention layers and recurrent states" if h.attention else "recurrent states only"
    notes = (f"llama.cpp keeps {said} for {h.arch} (llama_model::create_memory)",)
    return Layout(name, model_type, tuple(kinds), notes, "latent" if h.rank else None, "llama.cpp")


def _attention_kind(h: Hparams, key: tuple[int, int, int], layers: list[int]) -> LayerKind:
    (kv, d_k, d_v), where = key, _runs(layers)
    attention, window = ("sliding", h.window) if h.window else ("full", None)
    if h.rank:
        return LayerKind(attention, len(layers), 1, h.rank, d_k - h.rank, window, where, "mla-latent")
    return LayerKind(attention, len(layers), kv, d_k, d_v, window, where)


def state_bytes(width: int, cells: int, device: str) -> int:
    """One ``cache_r_l`` or ``cache_s_l`` tensor: F32 × width × cells, padded to the buffer's alignment."""
    n = width * F32 * cells
    a = ALIGNMENT[device]
    return -(-n // a) * a


# ---- a config, as llama.cpp's converter writes it --------------------------------------------------

# transformers model_type -> the converter class's set_gguf_parameters, transcribed (the keys
# llama.cpp's memory reads): conversion/mamba.py, jamba.py, falcon_h1.py, granite.py, nemotron.py,
# lfm2.py, qwen.py, kimi_linear.py.
Meta = dict[str, Any]


def converted_meta(model: Any) -> tuple[str, Meta]:
    """The llama.cpp architecture and the ``{arch}.*`` metadata the converter writes for ``model``
    (a config of one of :data:`paramcount.gguf.hybrid.ARCHS`' families)."""
    from ....gguf.hybrid import ARCHS as BY_TYPE
    from ...context.kv_layout import cfg_of

    c = cfg_of(model)
    arch = "nemotron_h_moe" if _nemotron_moe(model) else BY_TYPE[model.model_type]
    meta = {"embedding_length": int(c.int("hidden_size")), **_CONVERTERS[model.model_type](c, model)}
    meta.setdefault("block_count", int(c.int("num_hidden_layers")))
    return arch, meta


def _nemotron_moe(model: Any) -> bool:
    """NemotronHModel.__init__: ``num_experts_per_tok`` in the config makes it nemotron_h_moe."""
    return model.model_type == "nemotron_h" and "num_experts_per_tok" in dict(model.config or {})


def _mamba(c: Any, model: Any) -> Meta:
    """MambaModel: head_count 0; conv_kernel, intermediate_size, state_size."""
    from ....arch import mamba

    kernel, state = int(c.int("conv_kernel")), int(c.int("state_size"))
    return {"attention.head_count": 0, "ssm.conv_kernel": kernel, "ssm.inner_size": int(mamba.inner(c)),
            "ssm.state_size": state, "ssm.time_step_rank": int(mamba.rank(c))}  # fmt: skip


def _mamba2(c: Any, model: Any) -> Meta:
    """Mamba2Model: head_count 0; d_inner, n_groups, state_size, conv_kernel."""
    from ....arch import mamba2

    ssm = _ssm(c, int(mamba2.inner(c)), "n_groups", "state_size", "conv_kernel", "num_heads")
    return {"attention.head_count": 0, **ssm}


def _ssm(c: Any, inner: int, groups: str, state: str, kernel: str, heads: str) -> Meta:
    """Mamba2Model's keys; time_step_rank is the SSM head count (d_inner / head_dim)."""
    return {"ssm.conv_kernel": int(c.int(kernel)), "ssm.inner_size": inner, "ssm.state_size": int(c.int(state)),
            "ssm.group_count": int(c.int(groups)), "ssm.time_step_rank": int(c.int(heads))}  # fmt: skip


def _per_layer_kv(kinds: list[str], attention: str, kv: int) -> list[int]:
    """``head_count_kv`` per layer: the KV heads where the layer attends, 0 elsewhere."""
    return [kv if t == attention else 0 for t in kinds]


def _jamba(c: Any, model: Any) -> Meta:
    """JambaModel: KV heads at attn_layer_offset + k · attn_layer_period; Mamba's keys."""
    from ....arch import jamba
    from ....arch.ssm import ATTENTION

    kinds = [t for t, _ in jamba.layer_kinds(c)]
    kernel, state = int(c.int("mamba_d_conv")), int(c.int("mamba_d_state"))
    return {"attention.head_count": int(c.int("num_attention_heads")),
            "attention.head_count_kv": _per_layer_kv(kinds, ATTENTION, int(c.int("num_key_value_heads"))),
            "ssm.conv_kernel": kernel, "ssm.inner_size": int(jamba.inner(c)), "ssm.state_size": state,
            "ssm.time_step_rank": int(jamba.rank(c))}  # fmt: skip


def _falcon_h1(c: Any, model: Any) -> Meta:
    """FalconH1Model: attention and Mamba-2 in every layer; key_length = head_dim."""
    from ....arch import falcon_h1

    d = int(c.int("head_dim"))
    ssm = _ssm(c, int(falcon_h1.inner(c)), "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_n_heads")
    return {"attention.head_count": int(c.int("num_attention_heads")),
            "attention.head_count_kv": int(c.int("num_key_value_heads")),
            "attention.key_length": d, "attention.value_length": d, **ssm}  # fmt: skip


def _granite(c: Any, model: Any) -> Meta:
    """GraniteHybridModel: KV heads on the ``attention`` layers; d_inner = mamba_expand × h."""
    from ....arch import granitemoehybrid as g
    from ....arch.ssm import ATTENTION

    kv = _per_layer_kv(g.kinds(c), ATTENTION, int(c.int("num_key_value_heads")))
    stated = {"attention.key_length": int(c.int("head_dim"))} if c.raw.get("head_dim") else {}
    ssm = _ssm(c, int(g.inner(c)), "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_n_heads")
    return {"attention.head_count": int(c.int("num_attention_heads")), "attention.head_count_kv": kv,
            **stated, **ssm}  # fmt: skip


def _nemotron_h(c: Any, model: Any) -> Meta:
    """NemotronHModel: KV heads on the ``*`` layers, feed_forward_length on the ``-`` layers (the
    MoE variant: moe_intermediate_size on the ``E`` layers, and its MTP step appended as one
    block with both, nextn_predict_layers); d_inner = mamba_num_heads × mamba_head_dim."""
    from ....arch import nemotron_h as nh
    from ....arch.ssm import ATTENTION

    kinds, d, kv = nh.kinds(c), int(c.int("head_dim")), int(c.int("num_key_value_heads"))
    moe = _nemotron_moe(model)
    mlp, ff = (nh.MOE, int(c.int("moe_intermediate_size"))) if moe else (nh.MLP, int(c.int("intermediate_size")))
    heads, widths = _per_layer_kv(kinds, ATTENTION, kv), [ff if t == mlp else 0 for t in kinds]
    mtp = min(int(c.int("num_nextn_predict_layers", low=0, default=0)), 1) if moe else 0
    groups, kernel = nh.legacy(c, "n_groups"), nh.legacy(c, "conv_kernel")
    ssm = _ssm(c, int(nh.inner(c)), groups, "ssm_state_size", kernel, "mamba_num_heads")
    return {"block_count": len(kinds) + mtp, "attention.head_count": int(c.int("num_attention_heads")),
            "attention.head_count_kv": heads + [kv] * mtp, "attention.key_length": d,
            "attention.value_length": d, "feed_forward_length": widths + [ff] * mtp, **ssm,
            **({"nextn_predict_layers": mtp} if mtp else {})}  # fmt: skip


def _lfm2(c: Any, model: Any) -> Meta:
    """LFM2Model: KV heads on the attention layers, 0 on the ``conv`` ones; conv_L_cache."""
    from ....arch import lfm2

    kv = [0 if t == lfm2.CONV else int(c.int("num_key_value_heads")) for t in lfm2.kinds(c)]
    return {"attention.head_count": int(c.int("num_attention_heads")), "attention.head_count_kv": kv,
            "shortconv.l_cache": int(c.int("conv_L_cache"))}  # fmt: skip


def _qwen(c: Any, model: Any) -> Meta:
    """Qwen3NextModel (and Qwen3.5's): the linear_* keys as Mamba's, the MTP block appended
    (_QwenMtpMixin), recurrent_layers from layer_types, full_attention_interval."""
    from ....arch import linear_attention as la
    from ....gguf.hybrid import mtp_layers

    n, mtp = int(c.int("num_hidden_layers")), mtp_layers(model.model_type, dict(model.config))
    d = int(c.int("head_dim"))
    out = {"block_count": n + mtp, "attention.head_count": int(c.int("num_attention_heads")),
           "attention.head_count_kv": int(c.int("num_key_value_heads")),
           "attention.key_length": d, "attention.value_length": d,
           "ssm.conv_kernel": int(c.int("linear_conv_kernel_dim")), "ssm.state_size": int(c.int("linear_key_head_dim")),
           "ssm.group_count": int(c.int("linear_num_key_heads")),
        "ssm.time_step_rank": int(c.int("linear_num_value_heads")),
           "ssm.inner_size": int(c.int("linear_value_head_dim")) * int(c.int("linear_num_value_heads")),
           "full_attention_interval": int(c.int("full_attention_interval", default=4))}  # fmt: skip
    if mtp:
        out["nextn_predict_layers"] = mtp
    if c.get("layer_types", None) is not None:
        out["attention.recurrent_layers"] = [t == la.LINEAR for t in la.interval_types(c)] + [False] * mtp
    return out


def _kimi(c: Any, model: Any) -> Meta:
    """KimiLinearModel: MLA as MQA (one KV head on the full-attention layers), key_length
    kv_lora_rank + qk_rope_head_dim; KDA's short_conv_kernel_size and head_dim."""
    from ....arch import kimi_linear as k
    from ....arch import linear_attention as la

    own, rank, rope = k.linear_config(c), int(c.int("kv_lora_rank")), int(c.int("qk_rope_head_dim"))
    meta = {"attention.head_count": int(c.int("num_attention_heads")),
            "attention.head_count_kv": [1 if t == la.FULL else 0 for t in k.layer_types(c)],
            "attention.kv_lora_rank": rank, "attention.key_length": rank + rope, **_value_length(c),
            "attention.key_length_mla": int(c.int("qk_nope_head_dim")) + rope,
            "attention.value_length_mla": int(c.int("v_head_dim"))}  # fmt: skip
    if own.get("short_conv_kernel_size") is not None:
        meta["ssm.conv_kernel"] = int(own["short_conv_kernel_size"])
    if own.get("head_dim") is not None:
        meta["kda.head_dim"] = int(own["head_dim"])
    return meta


def _value_length(c: Any) -> Meta:
    """TextModel.set_gguf_parameters writes ``head_dim`` as key and value length (Kimi then
    overrides the key length; the value length is unused with MLA's K-only cache)."""
    return {"attention.value_length": int(c.int("head_dim"))} if c.get("head_dim", None) is not None else {}


_CONVERTERS: Mapping[str, Callable[[Any, Any], Meta]] = {
    "mamba": _mamba, "mamba2": _mamba2, "jamba": _jamba, "falcon_h1": _falcon_h1, "granitemoehybrid": _granite,
    "nemotron_h": _nemotron_h, "lfm2": _lfm2, "qwen3_next": _qwen, "qwen3_5_text": _qwen,
    "qwen3_5_moe_text": _qwen, "kimi_linear": _kimi,
}  # fmt: skip


# ---- the planner's entry points -----------------------------------------------------------------


def recurrent_hparams(model: Any) -> Hparams | None:
    """llama.cpp's hparams for a hybrid or state-space model (a GGUF file of :data:`ARCHS`, or a
    config of their families), else None; a config too bare for a layout is left to the
    caller, which reports it."""
    from ....gguf.hybrid import ARCHS as BY_TYPE
    from ....gguf.meta import Meta, is_gguf, metadata

    if is_gguf(model):
        return hparams(metadata(model)) if model.model_type in ARCHS else None
    if model.model_type not in BY_TYPE:
        return None
    try:
        arch, meta = converted_meta(model)
    except NoLayout:
        return None
    return hparams(Meta(arch, meta))


_STATE_SRC = (
    "llama.cpp src/llama-model.cpp llama_model::create_memory (llama_memory_recurrent / llama_memory_hybrid, "
    "F32 states, max(1, n_seq_max) cells); src/llama-memory-recurrent.cpp "
    "llama_memory_recurrent::llama_memory_recurrent (cache_r_l, cache_s_l); src/llama-hparams.cpp "
    "llama_hparams::n_embd_r, n_embd_s; ggml/src/ggml-alloc.c ggml_backend_alloc_ctx_tensors_from_buft "
    "(each tensor padded to the buffer's alignment)"
)


def state_term(h: Hparams, cells: Any, o: Any) -> Term:
    """The RS buffer: per recurrent layer, cache_r_l and cache_s_l of max(1, n_seq_max) F32 cells."""
    n_cells, a, layers = max(1, cells.n_seq_max), ALIGNMENT[o.device], len(h.recurrent)
    parts = []
    for key, label, width in (("r", R_STORES, h.n_embd_r), ("s", S_STORES, h.n_embd_s)):
        size = layers * state_bytes(width, n_cells, o.device)
        formula = (
            f"L · pad(n_embd_{key} · 4 B · cells, {a}) = {layers} · pad({width:,} · 4 · {n_cells}, {a}) = {size:,} B"
        )
        parts.append(
            Term(f"state.{key}", label, size, formula, f"layers {_runs(list(h.recurrent))}", False, _STATE_SRC)
        )
    total = sum(p.bytes for p in parts)
    label = f"recurrent state (RS buffer, F32, {n_cells} cell{'s' * (n_cells > 1)})"
    said = (
        f"cells = max(1, n_seq_max) = {n_cells} (--parallel), one per sequence, whatever the context; "
        f"F32 (create_memory's type_r/type_s); no rollback snapshots (n_rs_seq 0); "
        f"tensors padded to {a} B ({o.device} buffer alignment)"
    )
    formula = f"{parts[0].bytes:,} + {parts[1].bytes:,} = {total:,} B"
    return Term("state", label, total, formula, said, False, _STATE_SRC, tuple(parts))


# ---- the compute buffer's Mamba moment -----------------------------------------------------------

MAMBA1 = ("mamba", "jamba")  # build_mamba_layer (src/models/mamba-base.cpp)
MAMBA2 = ("mamba2", "falcon-h1", "granitehybrid", *_NEMOTRON)  # build_mamba2_layer


@dataclass(frozen=True)
class Mixer:
    """What a Mamba mixer holds at its peak, in F32 values, for ``t`` tokens of ``n`` sequences."""

    arch: str
    below: int  # n_embd-wide tensors under the mixer's (inp_embd, the layer input, its norm, ...)
    d_inner: int
    d_state: int
    xbc: int  # the convolution's channels: Mamba-2's d_inner + 2·n_group·d_state, Mamba's d_inner
    d_in_proj: int  # the in-projection's width
    x_db: int  # Mamba's dt_rank + 2·d_state (0 for Mamba-2)
    conv_state: int  # n_embd_r: (d_conv - 1) · xbc a sequence

    def values(self, t: int, n: int) -> int:
        states = n * self.d_state * self.d_inner
        if self.arch not in MAMBA2:  # at the scan: xz, conv, dt, x_db, then y and the new states
            return t * (self.below + self.d_in_proj + 3 * self.d_inner + self.x_db) + states
        concat, last, _ = self._scan(t, n)
        return t * (self.below + self.d_in_proj + self.xbc) + concat + last

    def _scan(self, t: int, n: int) -> tuple[int, int, str]:
        """The convolution's input (conv states and the new columns, freed by ssm_conv) and what
        comes last: the scan's output (y, then the new states) takes the input's freed block where
        it fits, and z is copied above it (ggml_cont); where it does not fit it goes above, and
        z into the hole."""
        concat = t * self.xbc + n * self.conv_state
        y = t * self.d_inner + n * self.d_state * self.d_inner
        if y > concat:
            return concat, y, "y + states (above the concat's block)"
        return concat, t * self.d_inner, "z (y + states in the concat's block)"

    def formula(self, t: int, n: int) -> str:
        if self.arch not in MAMBA2:
            return (
                "(below + xz + conv + dt + y + x_db) · n_tokens + states d_state · d_inner · n_seqs"
                f" = ({self.below:,} + {self.d_in_proj:,} + {3 * self.d_inner:,} + {self.x_db:,})"
                f" · {t:,} + {self.d_state:,} · {self.d_inner:,} · {n}"
            )
        concat, last, said = self._scan(t, n)
        return (
            f"(below + d_in_proj + xBC) · n_tokens + concat (xBC · n_tokens + n_embd_r · n_seqs) + {said}"
            f" = ({self.below:,} + {self.d_in_proj:,} + {self.xbc:,}) · {t:,} + {concat:,} + {last:,}"
        )


def mixer(h: Hparams | None) -> Mixer | None:
    """The tensors a Mamba layer's graph holds at its peak, where ggml-alloc has freed what is
    consumed (src/models/mamba-base.cpp; an estimate, held to llama.cpp's logged compute buffers in
    tests/fixtures/llamacpp_hybrid.json). Under them, three n_embd-wide tensors: ``inp_embd``
    (``build_inp_embd``: allocated in every graph, never freed), the layer's input (kept for the
    residual) and the normed input (freed by the in-projection, below what came after); in
    Falcon-H1 also the attention's output, computed first and added after the mixer, and the
    attention's own normed input.

    * Mamba-2 (``build_mamba2_layer``): the in-projection ``zxBCdt`` (d_in_proj = 2·d_inner +
      2·n_group·d_state + n_head), the convolution's input (the sequences' conv states
      concatenated with the new columns) and output ``xBC``, the scan's output (y, then the new
      states, d_state·d_inner a sequence) and the contiguous z (d_inner);
    * Mamba (``build_mamba_layer``), at the scan: ``xz`` (2·d_inner), the convolution's output, dt
      and y (d_inner each), ``x_db`` (dt_rank + 2·d_state), and the new states.

    None for the other mixers (gated DeltaNet, KDA, short convolutions), whose graphs are not
    modelled here."""
    if h is None or not h.recurrent or h.arch not in MAMBA1 + MAMBA2:
        return None
    d_inner, d_state, groups, rank = h.ssm
    # Falcon-H1 runs attention beside the mixer (src/models/falcon-h1.cpp): its n_embd-wide output
    # waits for the mixer's, and the layer's input is normed twice (build_norm for each branch)
    below = (5 if h.arch == "falcon-h1" else 3) * h.n_embd
    if h.arch in MAMBA2:
        xbc = d_inner + 2 * groups * d_state
        return Mixer(h.arch, below, d_inner, d_state, xbc, d_inner + xbc + rank, 0, h.n_embd_r)
    return Mixer(h.arch, below, d_inner, d_state, d_inner, 2 * d_inner, rank + 2 * d_state, h.n_embd_r)
