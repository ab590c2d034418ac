"""Inference memory as llama.cpp allocates it: the model, KV, compute and output buffers.

Each term is one of the buffers llama.cpp logs when it loads a model and creates a context
(``llama_model_load``: "model buffer size"; ``llama_kv_cache``: "KV buffer size";
``llama_context``: "output buffer size" and "compute buffer size"). Sources are the files of
ggml-org/llama.cpp as vendored by llama-cpp-python 0.3.36; each term cites its function.

* ``weights``: the model buffer, the file's tensors (or a planned quantisation) to the byte.
* ``kv_cache``: ``llama_context::llama_context`` pads the context ``n_ctx`` up to a multiple of
  256 cells; each of ``--parallel P`` sequences gets a stream of ``n_ctx_seq = pad(n_ctx / P,
  256)`` cells, or with ``--kv-unified`` all share one stream of ``n_ctx`` cells.
  ``llama_kv_cache_iswa`` gives a sliding-window layer ``pad(min(n_ctx_seq, W·(P if unified
  else 1) + n_ubatch), 256)`` cells, or ``n_ctx_seq`` with ``--swa-full``. Each layer's K and
  V tensors are ``ggml_row_size(type, n_embd_k_gqa) × cells × streams`` (``llama_kv_cache``
  constructor): an f16 cell row is 2 B an element, q8_0 34 B per 32, q4_0 18 B per 32.
* ``compute``: the scheduler's buffer for the worst-case graph (``llama_context::sched_reserve``
  reserves a prompt of ``n_tokens = min(n_ctx, n_ubatch)`` tokens, all of them outputs, over the
  whole cache). ggml's allocator (``ggml-alloc.c``) frees each tensor after its last use and
  runs norms, adds, RoPE and softmax in place, so the buffer is the largest set of tensors
  alive at once: an estimate, taken as the largest of three moments (see :func:`compute`).
* ``output``: ``llama_context::output_reserve(n_seq_max)``: ``n_vocab × n_outputs`` fp32 logits,
  ``n_outputs = max(n_seq_max, 1)`` at context creation (it grows later only if a batch asks
  for more outputs), plus ``n_embd`` floats per output when embeddings are requested.
* ``overhead``: on a GPU, the CUDA context (``--overhead``, default 0.5 GiB); none on a CPU,
  where llama.cpp's buffers are plain host allocations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ....arch.cache import LayerKind, Layout
from ....dtypes import DTYPES
from ....errors import ParamcountError
from ....gguf.meta import is_gguf, metadata
from ....ir import join
from ....model import Model
from ....records import replace
from ...context.kv_layout import attention_heads
from ...core import overhead as _overhead
from ...core.limits import Limit
from ...core.terms import Term
from .recurrent import Mixer, mixer, recurrent_hparams, state_term
from .replay import ARCHS, Dense, buffer, rotations

PAD = 256  # llama.cpp pads n_ctx, n_ctx_seq and the SWA cache to 256 cells
UBATCH = 512  # llama_context_default_params: n_ubatch
BATCH = 2048  # llama_context_default_params: n_batch (llama-cli, llama-server)
FLASH = ("auto", "on", "off")
DEVICES = ("gpu", "cpu")
# --cpu-features: what decides ggml-cpu's extra buffer types (ggml_backend_cpu_get_extra_buffer_types)
CPU_FEATURES = ("avx2", "avx512", "amx", "neon", "none")


def cpu_class(features: Iterable[str]) -> str:
    """The --cpu-features a CPU with these instruction sets gets (paramcount.hardware's names, as
    /proc/cpuinfo's flags give them): ggml-cpu's extra buffers go to AMX first, then the AVX-512
    repack, then AVX2's (``ggml_backend_cpu_get_extra_buffer_types``); AMX needs a build with it
    (GGML_NATIVE on such a CPU makes one)."""
    have = set(features)
    for flag, cls in (("amx_int8", "amx"), ("avx512", "avx512"), ("avx2", "avx2"), ("neon", "neon")):
        if flag in have:
            return cls
    return "none"


_CPU_SAID = {
    "avx2": "an x86 CPU with AVX2, without AVX-512",
    "avx512": "an x86 CPU with AVX-512, without AMX",
    "amx": "an x86 CPU with AMX (Sapphire Rapids and later) and a build with AMX",
    "neon": "an ARM CPU with NEON and dotprod",
    "none": "a CPU with none of AVX2, NEON or AMX",
}
_EXTRA_SAID = {
    "avx2": "Q4_0, Q4_K, IQ4_NL and MXFP4 matrices in a CPU_REPACK copy",
    "avx512": "Q4_0, Q4_K, IQ4_NL, MXFP4 and Q2_K matrices in a CPU_REPACK copy",
    "amx": "Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS and F16 2-D matrices in an AMX copy, and the rest of the"
    " AVX-512 repack types in a CPU_REPACK copy",
    "neon": "Q4_0, Q4_K, Q5_K, Q6_K, IQ4_NL, MXFP4, Q8_0 and Q1_0 matrices in a CPU_REPACK copy",
    "none": "no weight in an extra buffer",
}
# -ctk / -ctv: common/arg.cpp kv_cache_types
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
_CACHE_ALIASES = {"fp32": "f32", "fp16": "f16", "float16": "f16", "half": "f16", "float32": "f32", "bfloat16": "bf16"}
SRC = "llama.cpp"


@dataclass(frozen=True)
class Options:
    """The llama.cpp context parameters a plan depends on (``llama_context_params`` names in
    brackets): ``ubatch`` [n_ubatch], ``batch`` [n_batch], ``flash_attn`` [flash_attn_type],
    ``swa_full``, ``kv_unified``, ``type_k`` / ``type_v`` [-ctk / -ctv], ``device`` (gpu or cpu)
    ``embeddings`` and ``text_only`` (no mmproj); the number of sequences [n_seq_max, ``--parallel``]
    is the plan's batch."""

    ubatch: int = UBATCH
    batch: int = BATCH
    flash_attn: str = "auto"
    swa_full: bool = False
    kv_unified: bool = False
    type_k: str = "f16"
    type_v: str = "f16"
    device: str = "gpu"
    embeddings: bool = False
    cpu: str = "avx2"  # --cpu-features: which of ggml-cpu's extra buffer types the CPU gets
    text_only: bool = False  # --no-mmproj: an image+text model's mmproj file not loaded (llama-server -m alone)

    @property
    def flash(self) -> bool:
        """What ``auto`` resolves to: on. ``llama_context::resolve_fused_ops`` keeps flash
        attention when the layer's device runs ``GGML_OP_FLASH_ATTN_EXT`` (the CPU and CUDA
        backends do); a quantised V cache needs it on (``llama_init_from_model``)."""
        return self.flash_attn != "off"


def cache_type(name: Any, field: str) -> str:
    key = name.strip().lower() if isinstance(name, str) else None
    key = _CACHE_ALIASES.get(key, key)
    if key not in CACHE_TYPES:
        raise ParamcountError(f"llama.cpp cache types are {', '.join(CACHE_TYPES)}, not {name!r}", field=field)
    return key


def options(**given: Any) -> Options:
    """Checked :class:`Options` from keyword arguments (None: the default)."""
    o = Options(**{k: v for k, v in given.items() if v is not None})
    if o.flash_attn not in FLASH:
        raise ParamcountError(f"flash attention is on, off or auto, not {o.flash_attn!r}", field="--flash-attn")
    if o.device not in DEVICES:
        raise ParamcountError(f"device is gpu or cpu, not {o.device!r}", field="--device")
    if o.cpu not in CPU_FEATURES:
        raise ParamcountError(f"CPU features are {', '.join(CPU_FEATURES)}, not {o.cpu!r}", field="--cpu-features")
    for value, field in ((o.ubatch, "--ubatch"), (o.batch, "--n-batch")):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 20:
            raise ParamcountError(f"expected a whole number 1..1,048,576, got {value!r}", field=field)
    o = replace(o, type_k=cache_type(o.type_k, "--cache-type-k"), type_v=cache_type(o.type_v, "--cache-type-v"))
    if DTYPES[o.type_v.upper()].elements > 1 and o.flash_attn == "off":
        raise ParamcountError(
            "a quantised V cache needs flash attention (llama.cpp refuses it with -fa off)", field="--cache-type-v"
        )
    return o


# ---- cells ------------------------------------------------------------------------------------


def pad(n: int, to: int = PAD) -> int:
    return -(-n // to) * to


@dataclass(frozen=True)
class Cells:
    """What llama_context makes of ``-c`` and ``-np``: n_ctx, cells per stream, streams, n_ubatch."""

    n_ctx: int
    n_ctx_seq: int
    streams: int
    n_seq_max: int
    n_ubatch: int
    n_tokens: int  # the reserved prompt: min(n_ctx, n_ubatch)

    @staticmethod
    def of(context: int, parallel: int, o: Options) -> Cells:
        """``-c context·parallel -np parallel`` (llama_context::llama_context)."""
        requested = context * parallel
        n_batch = min(requested, o.batch)  # causal models: min(n_ctx, n_batch), before padding
        n_ubatch = min(n_batch, o.ubatch)
        n_ctx = pad(requested)
        if o.kv_unified:
            return Cells(n_ctx, n_ctx, 1, parallel, n_ubatch, min(n_ctx, n_ubatch))
        seq = pad(n_ctx // parallel)
        return Cells(seq * parallel, seq, parallel, parallel, n_ubatch, min(seq * parallel, n_ubatch))

    def layer(self, kind: LayerKind, o: Options) -> int:
        """Cells one stream of a layer of ``kind`` holds (llama_kv_cache_iswa's size_swa)."""
        if kind.window is None or o.swa_full:
            return self.n_ctx_seq
        span = kind.window * (self.n_seq_max if o.kv_unified else 1)
        return pad(min(self.n_ctx_seq, span + self.n_ubatch))


# ---- KV cache ---------------------------------------------------------------------------------


def row_bytes(qtype: str, elements: int, field: str = "--cache-type-k") -> int:
    """``ggml_row_size``: bytes of one row of ``elements`` values of a cache type."""
    b = DTYPES[qtype.upper()]
    if elements % b.elements:
        raise ParamcountError(
            f"a {qtype} cache row must hold whole blocks of {b.elements}; {elements} values do not", field=field
        )
    return elements // b.elements * b.bytes


def _kind_widths(kind: LayerKind) -> tuple[int, int]:
    """(n_embd_k_gqa, n_embd_v_gqa): MLA's latent is all key (``has_v = !is_mla``)."""
    if kind.stores == "mla-latent":
        return kind.key_dim + kind.value_dim, 0
    return kind.kv_heads * kind.key_dim, kind.kv_heads * kind.value_dim


def kv_term(layout: Layout, cells: Cells, o: Options) -> Term:
    """The KV buffers: one part per layer kind."""
    parts = []
    for kind in layout.kinds:
        if kind.attention not in ("full", "sliding"):
            raise ParamcountError(f"llama.cpp plans here cache attention layers only, not {kind.label}")
        n = cells.layer(kind, o)
        k_w, v_w = _kind_widths(kind)
        k, v = row_bytes(o.type_k, k_w), row_bytes(o.type_v, v_w, "--cache-type-v") if v_w else 0
        size = kind.layers * (k + v) * n * cells.streams
        formula = (
            f"L · (row_k + row_v) · cells · streams = {kind.layers} · ({k:,} + {v:,}) B · {n:,} · {cells.streams}"
            f" = {size:,} B"
        )
        said = f"{n:,} cells per stream ({_cells_rule(kind, o)}); K {o.type_k} {k_w} wide, V {o.type_v} {v_w} wide"
        parts.append(Term(f"kv_cache.{kind.attention}", kind.label, size, formula, said, False, _KV_SRC))
    total = sum(p.bytes for p in parts)
    streams = f"{cells.streams} stream{'s' * (cells.streams > 1)}"
    label = f"KV cache ({o.type_k}/{o.type_v}, {cells.n_ctx_seq:,} cells × {streams})"
    assumption = (
        f"n_ctx {cells.n_ctx:,} (-c, padded to 256), n_ctx_seq {cells.n_ctx_seq:,}, n_seq_max {cells.n_seq_max}"
        f" (--parallel), kv_unified {str(o.kv_unified).lower()}, swa_full {str(o.swa_full).lower()},"
        f" -ctk {o.type_k} -ctv {o.type_v}"
    )
    formula = " + ".join(f"{p.bytes:,}" for p in parts) + f" = {total:,} B" if len(parts) > 1 else parts[0].formula
    return Term("kv_cache", label, total, formula, assumption, False, _KV_SRC, tuple(parts) if len(parts) > 1 else ())


_KV_SRC = (
    "llama.cpp src/llama-context.cpp llama_context::llama_context (n_ctx, n_ctx_seq padding); "
    "src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache (K/V tensors); "
    "src/llama-kv-cache-iswa.cpp llama_kv_cache_iswa (size_swa)"
)


def _cells_rule(kind: LayerKind, o: Options) -> str:
    if kind.window is None:
        return "n_ctx_seq"
    if o.swa_full:
        return "--swa-full: n_ctx_seq"
    return "pad(min(n_ctx_seq, W" + (" · n_seq_max" if o.kv_unified else "") + " + n_ubatch), 256)"


# ---- compute and output -----------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What the graph's largest tensors depend on (widths per token, in elements)."""

    hidden: int  # n_embd
    heads: int  # query heads
    q: int  # n_head · n_embd_head_k
    k: int  # n_embd_k_gqa of the widest layer
    v: int  # n_embd_v_gqa
    out: int  # n_head · n_embd_head_v: the attention output before attn_output
    ffn: int  # what the widest feed-forward holds at once (working_set.graph_ffn_width)
    vocab: int  # n_vocab: rows of the output head
    # n_embd-wide tensors or holes under the logits besides inp_embd and the hidden state (shape_of)
    tail: int = 0
    # where the last layer's output lands on a CPU (:func:`landing`): "llama", "lfm2", "granite" or ""
    lands: str = ""
    product: int = 0  # llama: a dense gated feed-forward's product (n_ff); granite: routed experts per token
    positions: bool = True  # the graph takes inp_pos (RoPE); Granite 4.0-H's NoPE attention does not

    @property
    def attention(self) -> int:
        """The residual, the attention norm, Q, K, V, KQV and its contiguous copy: what one
        layer's attention has allocated when the scores are (ggml-alloc places the scores
        above them; measured: tests/fixtures/llamacpp_buffers.json)."""
        return 2 * self.hidden + self.q + self.k + self.v + 2 * self.out

    @property
    def below_logits(self) -> int:
        """The n_embd-wide tensors under the logits: the ``inp_embd`` input (``build_inp_embd``
        allocates it in every graph, ``ggml_set_input``, never freed), the hidden state (normed
        in place) and :attr:`tail`."""
        return (2 + self.tail) * self.hidden


F32 = 4


def compute(shape: Shape, layout: Layout, cells: Cells, o: Options, mixer: Mixer | None = None) -> Term:
    """The compute buffer: the largest of three moments of the reserved graph (four with a
    Mamba mixer, ``mixer``: :func:`paramcount.memory.runtimes.llamacpp.recurrent.mixer`).

    * attention: the KQ masks (one per cache kind, ``n_kv × n_tokens``, f16 with flash
      attention, else f32: ``build_attn_inp_kq_mask``), the layer's tensors
      (:attr:`Shape.attention`) and, without flash attention, the scores of every head over the
      whole cache (``build_attn_mha``: ``ggml_mul_mat(k, q)`` in f32, softmax in place);
    * feed-forward: the masks again (the next layers still need them), ``inp_embd``, the
      residual, the normed input and what ``build_ffn`` / ``build_moe_ffn`` hold at once (gate,
      up, their product; k copies for k routed experts);
    * output: the n_embd-wide tensors under the logits (:attr:`Shape.below_logits`) and the f32
      logits of every reserved token (the masks are freed after the last layer).

    Token ids and positions (4 B a token each) are added to every moment. The moments were read
    off ggml-alloc's own record of its peaks (tools/llamacpp_peak.py).
    """
    t = cells.n_tokens
    n_kv = {k.window is None: cells.layer(k, o) for k in layout.kinds if k.attention in ("full", "sliding")}
    widest = max(n_kv.values(), default=0)
    mask = 2 if o.flash else F32
    masks = sum(n * t * mask for n in n_kv.values())
    scores = 0 if o.flash else widest * t * shape.heads * F32
    moments = {
        "attention": masks + shape.attention * t * F32 + scores,
        "feed-forward": masks + (3 * shape.hidden + shape.ffn) * t * F32,
        "output": (shape.below_logits + shape.vocab) * t * F32,
    }
    land = landing(shape, cells, o, widest) if o.device == "cpu" else None
    if land is not None:  # the last layer's output lands above the graph inputs' block (see landing)
        moments["output"] = (2 * shape.hidden + shape.vocab) * t * F32 + land.under - 2 * t * 4
    if not n_kv:  # no attention layer: no masks, no attention moment
        del moments["attention"]
    if not shape.ffn:  # no feed-forward (Mamba): no moment of its own
        del moments["feed-forward"]
    if mixer is not None:
        moments["recurrent mixer"] = masks + mixer.values(t, cells.n_seq_max) * F32
    peak = max(moments, key=moments.get)
    inputs = 2 * t * 4
    total = inputs + moments[peak]
    parts = tuple(
        Term(f"compute.{k.replace('-', '_')}", k + (" (the peak)" if k == peak else ""), v,
             _moment_formula(k, shape, t, n_kv, o, mixer, cells, land) + f" = {v:,} B", "", True)
        for k, v in moments.items()
    )  # fmt: skip
    fa = f"flash attention {'on' if o.flash else 'off'}" + (" (auto resolves to on)" if o.flash_attn == "auto" else "")
    assumption = (
        f"reserved prompt n_tokens = min(n_ctx, n_ubatch) = {t:,} (--ubatch), all of them outputs; {fa}"
        " (--flash-attn); the buffer is the largest moment (its parts do not add up)"
    )
    formula = f"token ids and positions 2 · {t:,} · 4 B + {peak} {moments[peak]:,} B = {total:,} B"
    label = f"compute buffer ({t:,}-token micro-batch)"
    src = _COMPUTE_SRC + (_MIXER_SRC if mixer is not None else "")
    return Term("compute", label, total, formula, assumption, True, src, parts)


def replayed(dense: Dense, cells: Cells, o: Options) -> Term:
    """The compute buffer of a dense decoder on a CPU, replayed (:mod:`.replay`): the graph
    llama.cpp builds for the reserved micro-batches, placed as ggml-alloc places it."""
    streams = cells.streams
    tokens = -(-cells.n_tokens // streams) * streams  # graph_reserve: a multiple of n_seqs
    d = replace(dense, n_kv=cells.n_ctx_seq, tokens=tokens, streams=streams, flash=o.flash, outputs=cells.n_tokens)
    total = buffer(d)
    fa = f"flash attention {'on' if o.flash else 'off'}" + (" (auto resolves to on)" if o.flash_attn == "auto" else "")
    layers = "every layer" if dense.recurrent else "the first, the repeating and the last layers"
    formula = (
        f"ggml-alloc's buffer for the {tokens:,}-token graph ({streams} stream(s), n_kv {d.n_kv:,}, {fa}) and the "
        f"{streams}-token one, replayed over {layers} = {total:,} B"
    )
    assumption = (
        f"reserved prompt n_tokens = min(n_ctx, n_ubatch) = {cells.n_tokens:,} (--ubatch), all of them outputs; "
        f"{fa} (--flash-attn); the graph of llama.cpp 0.5.0's {dense.arch} builder, one CPU buffer (32 B aligned)"
    )
    label = f"compute buffer ({cells.n_tokens:,}-token micro-batch)"
    return Term("compute", label, total, formula, assumption, False, _REPLAY_SRC)


_REPLAY_SRC = (
    "llama.cpp src/llama-context.cpp llama_context::sched_reserve / graph_reserve; src/models/llama.cpp, "
    "qwen2.cpp, qwen3.cpp, lfm2.cpp, granite-hybrid.cpp, mamba-base.cpp build_mamba2_layer and "
    "src/llama-graph.cpp build_inp_embd, build_qkv, build_attn, build_attn_mha, build_rs, build_ffn, "
    "build_moe_ffn (the graph, paramcount.memory.runtimes.llamacpp.replay); "
    "ggml/src/ggml-alloc.c ggml_gallocr_alloc_graph_impl, ggml_dyn_tallocr_alloc (the placement, .gallocr); "
    "held to tests/fixtures/llamacpp_replay_trace.json, llamacpp_replay.json, llamacpp_landing.json, "
    "llamacpp_granite.json"
)


def dense_of(model: Model, layout: Layout, shape: Shape | None, recurrent: Any, o: Options) -> Dense | None:
    """The replay's model where it covers the graph: llama, qwen2 and qwen3 files (Mistral's
    convert to llama), LFM2 (its short convolutions, one sequence per stream) and Granite 4.0-H
    (Mamba-2 layers, routed and shared experts or a dense feed-forward: :func:`_granite`), one
    full-attention cache kind, a dense gated feed-forward in every layer, on a CPU (embeddings on
    add nothing: their pooling type is none, ``build_pooling`` returns, and ``result_norm`` is an
    output already); a quantised cache's Hadamard rotations emitted (:func:`.replay.rotations`)
    (None: the closed form)."""
    from ...tree.widths import feed_forwards

    arch = _arch(model)
    if shape is None or arch not in ARCHS or o.device != "cpu" or not _replayable(arch, recurrent, o):
        return None
    if o.embeddings and is_gguf(model) and metadata(model).integer("pooling_type", 0, low=0):
        return None  # mean, CLS or last-token pooling adds its ops (build_pooling): not emitted
    kinds = [k for k in layout.kinds if k.attention != "state"]
    if len(kinds) != 1 or kinds[0].attention != "full" or kinds[0].stores != "kv":
        return None
    ffns = feed_forwards(model)
    granite = _granite(model) if arch == "granitehybrid" else None
    if not ffns or not (granite or all(f.gated and f.times == 1 for f in ffns)):
        return None
    kind = kinds[0]
    quantised = (DTYPES[t.upper()].elements > 1 for t in (o.type_k, o.type_v))
    k_rot, v_rot = rotations(kind.key_dim, kind.value_dim, *quantised)
    layers, rec, d_conv = kind.layers, (), 0
    if recurrent is not None:  # LFM2, Granite: every layer, the recurrent ones named
        layers, rec, d_conv = recurrent.n_layer, tuple(recurrent.recurrent), recurrent.n_embd_r // recurrent.n_embd
    dense = Dense(arch, shape.hidden, shape.heads, kind.kv_heads, kind.key_dim, kind.value_dim,
                  max(f.inner for f in ffns), shape.vocab, layers, 0, 0, k_rot=k_rot, v_rot=v_rot, recurrent=rec,
                  d_conv=d_conv)  # fmt: skip
    if granite is None:
        return dense
    d_inner, d_state, groups, _ = recurrent.ssm
    xbc = d_inner + 2 * groups * d_state  # n_embd_r = (d_conv - 1) · xbc: the state's columns
    (ffn, moe, scales), columns = granite, (recurrent.n_embd_r // xbc if rec else 0)
    return replace(dense, ffn=ffn, d_conv=columns, ssm=recurrent.ssm, moe=moe, rope=not _nope(model), scales=scales)


def _granite(model: Model) -> tuple[int, tuple[int, int, int, int], tuple[bool, bool, bool]] | None:
    """Granite 4.0-H's feed-forward and muP multipliers as llama.cpp reads them
    (``llama_model_granite_hybrid::load_arch_hparams``): n_ff, (n_expert, n_expert_used, n_ff,
    n_ff_shexp) (routed experts where n_expert > 0, else a dense feed-forward) and whether
    ``f_embedding_scale``, ``f_residual_scale`` and ``f_logit_scale`` are set (non-zero: each adds
    a ``ggml_scale``); a config's as convert_hf_to_gguf.py's GraniteMoeModel / GraniteModel write
    them (``num_local_experts``, ``num_experts_per_tok``, ``intermediate_size``,
    ``shared_intermediate_size``; ``embedding_multiplier``, ``residual_multiplier``,
    ``logits_scaling``, written where truthy; a GGUF file's are not read: see below). None: a
    file or config that states no n_ff."""
    if is_gguf(model):
        from ...tree.widths import feed_forwards

        meta = metadata(model)
        keys = ("feed_forward_length", "expert_count", "expert_used_count")
        ff, n_exp, used = (meta.integer(k, 0, low=0) for k in keys)
        # n_ff_shexp: the ffn_down_shexp tensor's width (create_tensor holds it to the key); the
        # multipliers are not among the keys the reader keeps: each ggml_scale takes its single
        # parent's block in place (ggml_gallocr_allocate_node), so no tensor moves without them
        shexp = next((f.inner for f in feed_forwards(model) if f.times == 1), 0) if n_exp else 0
        scales = (False, False, False)
    else:
        c = dict(model.config or {})
        keys = ("intermediate_size", "num_local_experts", "num_experts_per_tok", "shared_intermediate_size")
        ff, n_exp, used, shexp = (c.get(k) or 0 for k in keys)
        scales = tuple(bool(c.get(k)) for k in ("embedding_multiplier", "residual_multiplier", "logits_scaling"))
    if not all(isinstance(v, int) and v >= 0 for v in (ff, n_exp, used, shexp)) or not ff or (n_exp and not used):
        return None
    return ff, (n_exp, used, ff, shexp) if n_exp else (0, 0, 0, 0), scales  # type: ignore[return-value]


def _replayable(arch: str, recurrent: Any, o: Options) -> bool:
    """A dense graph, LFM2's whose attention does not slide or Granite 4.0-H's, one stream per
    sequence (a unified cache reserves one sequence over several cells: not recorded)."""
    if recurrent is None or not recurrent.recurrent:
        return arch != "lfm2"
    if arch == "granitehybrid":  # Mamba-2 layers (build_mamba2_layer), one sequence per stream
        d_inner, _, groups, heads = recurrent.ssm
        # build_mamba2_layer's GGML_ASSERTs: d_inner a multiple of the SSM heads and of the groups
        return not o.kv_unified and all(recurrent.ssm) and d_inner % heads == 0 and d_inner % groups == 0
    return arch == "lfm2" and recurrent.window is None and not o.kv_unified


_COMPUTE_SRC = (
    "llama.cpp src/llama-context.cpp llama_context::sched_reserve / graph_reserve (worst-case graph of "
    "min(n_ctx, n_ubatch) tokens); src/llama-graph.cpp build_attn_mha, build_attn_inp_kq_mask; "
    "ggml/src/ggml-alloc.c (tensors freed after last use, in-place ops); this project's model of the peak, "
    "held to llama.cpp's logged sizes in tests/fixtures/llamacpp_buffers.json"
)


_MIXER_SRC = (
    "; src/models/mamba-base.cpp build_mamba_layer, build_mamba2_layer (the mixer's moment), held to "
    "tests/fixtures/llamacpp_hybrid.json"
)


@dataclass(frozen=True)
class Landing:
    """What lies under the last layer's output on a CPU, besides ``inp_embd``: ``under`` bytes
    (the freed token ids' slot, the graph inputs' block and ``blocks`` n_embd-wide blocks)."""

    under: int
    formula: str


def graph_inputs(shape: Shape, cells: Cells, o: Options, n_kv: int) -> tuple[int, int]:
    """(bytes, out_ids' bytes) of the graph inputs ggml-alloc places right above ``inp_embd``
    (``ggml_gallocr_alloc_graph_impl`` allocates the graph's input leafs first, in the order the
    graph made them), each padded to the CPU buffer's 32 B (``ggml_dyn_tallocr_alloc``):
    ``rs_s_copy`` (int32 per sequence, hybrid graphs: ``build_rs_inp``), ``inp_pos`` (int32 per
    token, where the attention is rotary), ``attn_inp_k_idxs`` (int64 per token),
    ``attn_inp_v_idxs`` (int64 per token, or per token and V element where V is stored
    transposed, without flash attention: ``llama_kv_cache::build_input_v_idxs``), the KQ mask
    (``n_kv × n_tokens``, f16 with flash attention, else f32: ``build_attn_inp_kq_mask``) and
    ``out_ids`` (int32 per output: ``build_inp_out_ids``)."""
    t = cells.n_tokens
    rs = pad(4 * cells.n_seq_max, 32) if shape.lands in ("lfm2", "granite") else 0
    pos = pad(4 * t, 32) if shape.positions else 0
    v_idxs = pad(8 * t * (1 if o.flash else shape.v), 32)
    mask = pad(n_kv * t * (2 if o.flash else F32), 32)
    out_ids = pad(4 * t, 32)
    return rs + pos + pad(8 * t, 32) + v_idxs + mask + out_ids, out_ids


def landing(shape: Shape, cells: Cells, o: Options, n_kv: int) -> Landing | None:
    """Where ggml-alloc puts the last layer's output on one CPU, for the three graphs whose
    placement was read off its log (None: the output moment's :attr:`Shape.below_logits`).

    The logits are larger than any freed block, so ``ggml_dyn_tallocr_alloc`` puts them at the
    start of the last free block, right above the highest tensor still in use: the last
    hidden state (normed in place). Under it lie the freed token ids' slot, ``inp_embd`` and,
    where the hidden state could not go lower, the graph inputs' block (:func:`graph_inputs`,
    all freed by then) and the blocks above it, as ggml-alloc placed them at the time
    (best fit among the free blocks but the last). Read with GGML_ALLOCATOR_DEBUG (tools/
    llamacpp_peak.py) on llama.cpp 0.5.0 and held to tests/fixtures/llamacpp_unseen35.json,
    llamacpp_hybrid.json and llamacpp_landing.json:

    * ``lfm2`` whose last layer attends (src/models/lfm2.cpp: ``ggml_get_rows(prev_cur,
      inp_out_ids)`` after the attention): the picked rows of the layer's input are allocated
      when the flash attention has freed the KQ mask; if the inputs' block (out_ids, still in
      use, aside) holds one n_embd block they land in it, right above ``inp_embd``; else above
      the layer's input and the attention output, two blocks over the inputs' block;
    * ``granite`` (Granite 4.0-H's last layer attends, a shared expert after the routed ones):
      the routed experts' output is allocated while the layer's normed input (which the shared
      expert still reads) and the routed products are in use; the normed input takes the
      inputs' freed block where it fits, and the output lands one block over the inputs' block
      (the residual's), else two;
    * ``llama`` (dense, gated feed-forward) without flash attention: the last layer's
      ``ffn_inp`` (the picked rows of the attention output plus the residual) lies two blocks
      over the inputs' block; where the inputs' block is under one n_embd block and the freed
      span under ``ffn_inp`` takes the feed-forward product (``ffn_swiglu``), the product goes
      there and the output above ``ffn_inp``: three blocks over the inputs' block; with the
      product too wide the output lands right above ``inp_embd``. Not read: an inputs' block of
      one n_embd block or more with a narrow product (n_ff 2,048 at n_embd 896 and 1,024 cells:
      two blocks over the inputs' block, left to :attr:`Shape.below_logits`, −10.7%).

    Granite with the inputs' block wider than the normed input, the routed products and their sum
    (``2 + k`` blocks) keeps them inside it, and the peak is no longer read here either (8,192
    cells of the issue-35 config: −4.6%).
    """
    if not shape.lands:
        return None
    t = cells.n_tokens
    block = shape.hidden * t * F32
    inputs, out_ids = graph_inputs(shape, cells, o, n_kv)
    if shape.lands == "lfm2":
        blocks = None if inputs - out_ids >= block else 2
    elif shape.lands == "granite":  # the normed input, the routed products and their sum: above or inside
        inside = inputs >= (2 + shape.product) * block
        blocks = None if inside else 1 if inputs >= block else 2
    else:  # read without flash attention only (with it, n_ff 2,048 at n_embd 896 lands right above inp_embd)
        fits = not o.flash and inputs < block and inputs + 2 * block >= shape.product * t * F32
        blocks = 3 if fits else None
    if blocks is None:
        return None
    tokens = pad(4 * t, 32)
    under = tokens + inputs + blocks * block
    formula = f"the graph inputs {inputs:,} B + {blocks} · n_embd · n_tokens · 4 B"
    return Landing(under, formula)


def _moment_formula(
    moment: str, s: Shape, t: int, n_kv: Mapping[bool, int], o: Options, mixer: Mixer | None, cells: Cells,
    land: Landing | None = None,
) -> str:  # fmt: skip
    if moment == "output" and land is not None:
        return (
            f"token ids {pad(4 * t, 32):,} B + inp_embd + {land.formula} + the last hidden state + logits n_vocab ·"
            f" n_tokens · 4 B, less the token ids and positions counted apart = (2 · {s.hidden:,} + {s.vocab:,})"
            f" · {t:,} · 4 B + {land.under:,} B − {2 * t * 4:,} B"
        )
    if moment == "recurrent mixer" and mixer is not None:
        masks = " + ".join(f"{n:,} · {t:,} · {2 if o.flash else 4} B" for n in n_kv.values()) or "0"
        return f"masks {masks} + ({mixer.formula(t, cells.n_seq_max)}) · 4 B"
    if moment == "output":
        n = 2 + s.tail
        return f"({n} · n_embd + n_vocab) · n_tokens · 4 B = ({n} · {s.hidden:,} + {s.vocab:,}) · {t:,} · 4 B"
    mask = 2 if o.flash else 4
    masks = " + ".join(f"{n:,} · {t:,} · {mask} B" for n in n_kv.values()) or "0"
    if moment == "feed-forward":
        return f"masks {masks} + (3 · n_embd + ffn) · n_tokens · 4 B = (3 · {s.hidden:,} + {s.ffn:,}) · {t:,} · 4 B"
    layer = f"(2·n_embd + q + k + v + 2·out) · n_tokens · 4 B = {s.attention:,} · {t:,} · 4 B"
    if o.flash:
        return f"masks {masks} + {layer}"
    widest = max(n_kv.values(), default=0)
    return f"masks {masks} + {layer} + scores n_kv · n_tokens · n_head · 4 B = {widest:,} · {t:,} · {s.heads} · 4 B"


def output(shape: Shape, cells: Cells, o: Options) -> Term:
    """llama_context::output_reserve at context creation (see the module docstring)."""
    n_out = cells.n_seq_max
    logits = shape.vocab * n_out * F32
    embd = shape.hidden * n_out * F32 if o.embeddings else 0
    formula = f"n_vocab · n_outputs · 4 B = {shape.vocab:,} · {n_out} · 4 B" + (
        f" + n_embd · n_outputs · 4 B = {embd:,} B" if embd else ""
    )
    said = (
        f"n_outputs = n_seq_max = {n_out} at context creation (it grows when a batch asks for more logits); "
        "n_vocab = the output head's rows, to which the converter pads the token list"
        + ("; embeddings on (--embeddings)" if o.embeddings else "")
    )
    src = "llama.cpp src/llama-context.cpp llama_context::output_reserve"
    return Term(
        "output", "output buffer (logits)", logits + embd, formula + f" = {logits + embd:,} B", said, False, src
    )


# ---- shapes -----------------------------------------------------------------------------------


def shape_of(model: Model, layout: Layout, widths: Any, recurrent: Any = None) -> Shape:
    """The graph's widths: heads and head sizes from the GGUF metadata or the config, K and V
    from the cache layout, the feed-forward and vocabulary from the weight shapes
    (:mod:`paramcount.memory.runtimes.transformers.working_set`); ``recurrent``: the hybrid's
    :class:`paramcount.memory.runtimes.llamacpp.recurrent.Hparams`, which says what the last
    layer is."""
    h = widths.hidden
    heads = attention_heads(model) or max(1, h // max(_head_dim(layout), 1))
    d_k, d_v = _head_dims(model, layout, h, heads)
    k, v = max((_kind_widths(kind) for kind in layout.kinds if kind.attention in ("full", "sliding")), default=(0, 0))
    tail = _tail(model, widths, _last_recurrent(recurrent))
    lands, product = _lands(model, layout, recurrent)
    positions = not (recurrent is not None and recurrent.arch == "granitehybrid" and _nope(model))
    return Shape(h, heads, heads * d_k, k, v, heads * d_v, widths.graph_ffn, widths.logits, tail, lands, product,
                 positions)  # fmt: skip


def _lands(model: Model, layout: Layout, h: Any) -> tuple[str, int]:
    """Which of :func:`landing`'s graphs this is, with a dense llama's feed-forward product width
    (n_ff) or Granite's routed experts per token: one attention cache kind (one mask), and for
    the hybrids a last layer that attends."""
    from ...tree.widths import feed_forwards

    arch = _arch(model)
    if sum(k.attention in ("full", "sliding") for k in layout.kinds) != 1:
        return "", 0
    ffns = feed_forwards(model)
    routed = max((f.times for f in ffns), default=1)
    if arch in ("lfm2", "granitehybrid"):
        attends = h is not None and bool(h.recurrent) and (h.n_layer - 1) not in h.recurrent
        return ("lfm2" if arch == "lfm2" else "granite") if attends else "", routed
    if arch == "llama" and not (h is not None and h.recurrent) and ffns and all(f.gated for f in ffns) and routed == 1:
        return "llama", max(f.inner for f in ffns)
    return "", 0


def _nope(model: Model) -> bool:
    """Granite 4.0-H without rotary positions: llama.cpp's graph then takes no ``inp_pos``
    (src/models/granite-hybrid.cpp: ``if (hparams.has_rope(0)) inp_pos = build_inp_pos()``, rope
    on unless the file says ``rope.scaling.finetuned`` false, which the converter writes for a
    config's ``position_embedding_type`` "nope")."""
    if is_gguf(model):
        from ....gguf.meta import metadata

        return metadata(model).get("rope.scaling.finetuned", True) is False
    return str(dict(model.config or {}).get("position_embedding_type", "")).lower() == "nope"


def _last_recurrent(h: Any) -> bool:
    """Whether the last trunk layer's input lies under the logits: in a recurrent or hybrid
    graph, unless that layer is one of LFM2's attention blocks (``n_layer() - 1`` not in
    :attr:`Hparams.recurrent`)."""
    if h is None or not h.recurrent:
        return False
    return h.arch != "lfm2" or (h.n_layer - 1) in h.recurrent


def _tail(model: Model, widths: Any, last_recurrent: bool) -> int:
    """What else lies under the logits, one n_embd-wide tensor each (ggml-alloc places the logits
    above the highest block in use; measured with ggml-alloc's GGML_ALLOCATOR_DEBUG on
    tests/fixtures/llamacpp_buffers.json's and llamacpp_hybrid.json's files):

    * where the last layer runs a recurrent mixer, its input: its output is allocated while the
      input waits for the residual add, and no freed block under it fits (where the last layer
      attends, as in attention-only graphs and LFM2's and Granite 4.0-H's hybrids, the attention's
      freed tensors leave one, and the output lands there: LFM2 at 4,096 cells, 37,750,784 B
      logged, tests/fixtures/llamacpp_unseen.json);
    * with a shared expert after the routed ones, the layer's normed input, which the shared
      expert still reads when the routed experts' sum is allocated;
    * in graphs that pick the output rows after the final norm (:data:`ROWS_AFTER_NORM`), the
      picked copy beside the normed state."""
    return last_recurrent + widths.shared + (_arch(model) in ROWS_AFTER_NORM)


# src/models/*.cpp: graphs that pick the output rows after the final norm
# (``if (!cparams.embeddings_nextn_masked && inp_out_ids)``, the default), a copy beside the
# normed hidden state; the others pick them inside the last layer, before its residual add.
ROWS_AFTER_NORM = frozenset({
    "bailingmoe3", "cohere2moe", "gemma4", "gpt-oss", "hy_v3", "mimo2", "nemotron_h", "qwen35", "qwen35moe",
    "qwen3next", "step35",
})  # fmt: skip


def _head_dim(layout: Layout) -> int:
    return max((k.key_dim for k in layout.kinds if k.stores == "kv"), default=0)


def _head_dims(model: Model, layout: Layout, h: int, heads: int) -> tuple[int, int]:
    if is_gguf(model):
        return _gguf_head_dims(model, layout, h, heads)
    d_k = dict(model.config or {}).get("head_dim") or _head_dim(layout) or h // heads
    return int(d_k), int(d_k)


def _gguf_head_dims(model: Model, layout: Layout, h: int, heads: int) -> tuple[int, int]:
    from ....gguf.meta import metadata

    meta = metadata(model)
    d_k = meta.integer("attention.key_length", 0, low=0) or _head_dim(layout) or h // heads
    d_v = meta.integer("attention.value_length", 0, low=0) or d_k
    if any(k.stores == "mla-latent" for k in layout.kinds):
        d_k = meta.integer("attention.key_length_mla", 0, low=0) or d_k
        d_v = meta.integer("attention.value_length_mla", 0, low=0) or d_v
    return d_k, d_v


# ---- the planner ------------------------------------------------------------------------------

CPU_OVERHEAD = _overhead.Overhead(0, Fraction(0))
GPU_DEFAULT = _overhead.Overhead(_overhead.GIB // 2, Fraction(0))


class LlamaCppPlanner:
    """The weights and the model's shapes computed once; plans any context and number of
    sequences (``batch`` is llama.cpp's ``--parallel``: n_seq_max, one stream each)."""

    runtime = "llama.cpp"

    def __init__(
        self,
        model: Model,
        scheme: str | None = None,
        kv_dtype: str | None = None,
        overhead: Any = None,
        *,
        keep: Any = None,
        pure: bool = False,
        **given: Any,
    ):
        from ...tree.widths import shape_widths
        from ...weights.base import scheme as find
        from ...weights.dtype import default_scheme
        from ...weights.schemes import configured, weights

        self.model = model
        if kv_dtype is not None:
            given.setdefault("type_k", kv_dtype)
            given.setdefault("type_v", kv_dtype)
        self.options = options(**given)
        found = find(scheme or default_scheme(model))
        self.scheme = found.name
        if found.method == "gguf":  # a folder's file is its config's (weights.configured)
            model = configured(model)
        self.layout, self.partial, self.recurrent = _layout(model)  # before the weights: the file's metadata, checked
        every = weights(model, self.scheme, keep=keep, pure=pure)
        if self.options.text_only:
            every = text_only(model, every)
        w = loaded(model, every)
        self.keep = ",".join(w.keep) or "none"
        self.unquantised = w.unquantised()
        arch, gguf = _arch(model), is_gguf(model)
        amx, packed, _ = extra_rows(w, arch, gguf, self.options.cpu)
        moved = amx + packed if self.options.device == "cpu" else []
        self.weights, self.host = mapped(model, every, w, gguf, moved), ()
        if self.options.device == "gpu":  # the input layer stays in host memory, beside the GPU
            self.weights, host = offload(model, w, arch, gguf)
            self.host = (host,) if host is not None else ()
        self.loaded, self.every, self.arch, self.gguf = w, every, arch, gguf  # what a placement re-places
        self.repack = repack(w, arch, gguf, self.options.cpu) if self.options.device == "cpu" else ()
        self.stored_as = w.options if self.scheme == "stored" else None
        default = CPU_OVERHEAD if self.options.device == "cpu" else GPU_DEFAULT
        self.overhead = _overhead.parse(overhead) if overhead is not None else default
        self.shape = None if self.partial else shape_of(model, self.layout, shape_widths(model), self.recurrent)
        self.dense = None if self.partial else dense_of(model, self.layout, self.shape, self.recurrent, self.options)
        self.limit = Limit.of(model)

    def plan(self, context: int, batch: int = 1, why: str = "--context") -> Any:
        from ...core.plan import Plan, positive

        context, batch = positive(context, "--context"), positive(batch, "--parallel")
        o = self.options
        warned = self.limit.check(context, "llama.cpp")
        if self.partial:
            terms = (self.weights, *self.repack, *self._overhead(self.weights.bytes), *self.host)
            terms = self._arranged(terms, None, None, None, None, None, None)
            note = f"weights only, no KV, compute or output buffers: {self.partial}"
            settings = self._settings(None, context, why, batch, terms)
            return Plan(self.model, "inference", terms, settings, (note,), self, self.partial)
        cells = Cells.of(context, batch, o)
        attention = replace(self.layout, kinds=tuple(k for k in self.layout.kinds if k.attention != "state"))
        kv = kv_term(attention, cells, o) if attention.kinds else None
        state = state_term(self.recurrent, cells, o) if self.recurrent and self.recurrent.recurrent else None
        if self.dense is not None:  # replayed where it covers the graph, else the closed form (an estimate)
            comp = replayed(self.dense, cells, o)
        else:
            comp = compute(self.shape, attention, cells, o, mixer(self.recurrent))
        out = output(self.shape, cells, o)
        base = (self.weights, *(t for t in (kv, state) if t is not None), comp, out, *self.repack)
        terms = (*base, *self._overhead(sum(t.bytes for t in base)), *self.host)
        terms = self._arranged(terms, cells, attention, kv, state, comp, out)
        mixed = _mixer_note(self.recurrent) if self.dense is None else ()  # replayed: nothing left out
        notes = (*warned, *self.layout.notes, *_notes(o), *mixed)
        settings = self._settings(cells, context, why, batch, terms)
        notes += _placed_note(settings)
        return Plan(self.model, "inference", terms, settings, notes, planner=self)

    def _arranged(self, terms: tuple[Term, ...], *whole: Any) -> tuple[Term, ...]:
        """The terms as the placement arranges them: here every layer on one GPU, as they are
        (offload.PlacedPlanner splits them by device for -ngl, -ot, -ts)."""
        return terms

    def total(self, context: int, batch: int = 1) -> int:
        return self.plan(context, batch).total

    def _overhead(self, others: int) -> tuple[Term, ...]:
        if not self.overhead.fixed and not self.overhead.percent:
            return ()
        where = "the CPU" if self.options.device == "cpu" else "a GPU"
        if self.overhead.percent:
            return (self.overhead.term(others, f"llama.cpp's buffers, on {where}"),)
        n = self.overhead.fixed
        said = (
            f"on {where}: the CUDA context and library workspaces; llama.cpp sizes its own buffers exactly, "
            "so no allocator margin is added (--overhead; --device cpu: none)"
        )
        src = "CUDA context: pytorch/pytorch#86509 (287 MB with lazy loading, 667 MB without)"
        return (Term("overhead", f"overhead ({self.overhead.text})", n, f"{n:,} B", said, True, src),)

    def _settings(self, cells: Cells | None, context: int, why: str, batch: int, terms: Any = ()) -> dict[str, Any]:
        o = self.options
        kv = cells is not None and any(k.attention != "state" for k in self.layout.kinds)
        stored = {"stored_as": self.stored_as} if self.stored_as else {}
        fa = ("on" if o.flash else "off") + (" (auto)" if o.flash_attn == "auto" else "")
        return {
            "runtime": "llama.cpp",
            "scheme": self.scheme,
            **stored,
            "keep": self.keep,
            "compute_dtype": "f32",
            "kv_dtype": None if not kv else (o.type_k if o.type_k == o.type_v else f"{o.type_k}/{o.type_v}"),
            "kv_cache": None if not kv else "llama.cpp",
            **({"state_dtype": "f32"} if cells is not None and self.recurrent and self.recurrent.recurrent else {}),
            "context": context,
            "context_from": why,
            "batch": batch,
            "parallel": batch,
            "n_ctx": None if cells is None else cells.n_ctx,
            "n_ctx_seq": None if cells is None else cells.n_ctx_seq,
            "ubatch": None if cells is None else cells.n_ubatch,
            "flash_attn": fa,
            "swa_full": o.swa_full,
            "kv_unified": o.kv_unified,
            "device": o.device,
            "overhead": self.overhead.text,
            **self._placement_settings(terms),
        }

    def _placement_settings(self, terms: Any) -> dict[str, Any]:
        return {}  # one GPU, every layer: nothing placed (offload.PlacedPlanner says where)


# ggml-cpu repack.cpp ggml_repack_get_optimal_repack_type: the types each CPU repacks, and the
# multiple of rows (ne[1]) a weight needs, for MUL_MAT / MUL_MAT_ID. x86: AVX2 (and so AVX-512 and
# AMX CPUs) Q4_0, Q4_K, IQ4_NL, MXFP4 by 8, AVX-512 also Q2_K; ARM NEON with dotprod (i8mm
# repacks the same types) Q4_0, IQ4_NL, MXFP4, Q8_0, Q1_0 by 4 and Q4_K, Q5_K, Q6_K by 8.
_X86 = {"Q4_0": 8, "Q4_K": 8, "IQ4_NL": 8, "MXFP4": 8}
REPACK_TYPES = {
    "avx2": _X86,
    "avx512": {**_X86, "Q2_K": 8},
    "amx": {**_X86, "Q2_K": 8},
    "neon": {"Q4_0": 4, "Q4_K": 8, "Q5_K": 8, "Q6_K": 8, "IQ4_NL": 4, "MXFP4": 4, "Q8_0": 4, "Q1_0": 4},
    "none": {},
}
# ggml-cpu amx/amx.cpp extra_buffer_type::supports_op: MUL_MAT of a 2-D weight (not MUL_MAT_ID) with
# rows (ne[1]) a multiple of 2·TILE_N = 32 and a row length (ne[0]) a multiple of: TILE_K (32) for
# Q4_0, Q4_1, Q8_0; QK_K (256) for Q4_K, Q5_K, Q6_K, IQ4_XS; 16 for F16
AMX_TYPES = {"Q4_0": 32, "Q4_1": 32, "Q8_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "IQ4_XS": 256, "F16": 16}
# amx/mmq.cpp get_row_size: the packed VNNI layout's bytes per block beyond the block itself
# (do_compensate: Q8_0's int32 per block; Q4_K and Q5_K 4 B, IQ4_XS 2 B); the others pack in place
AMX_EXTRA = {"Q8_0": 4, "Q4_K": 4, "Q5_K": 4, "IQ4_XS": 2}
AMX_ROWS = 32
TENSOR_ALIGNMENT = 32  # ggml-impl.h: the CPU, CPU_REPACK and AMX buffer types' alignment
# llama-arch.cpp LLM_TENSOR_INFOS: tensors read with GGML_OP_GET_ROWS (GGUF names), which the
# repack buffer type never takes (repack.cpp extra_buffer_type::supports_op: MUL_MAT of a 2-D
# weight, MUL_MAT_ID of a 3-D one); a config's token embedding is found by its kind instead.
_GET_ROWS = re.compile(
    r"^(token_embd|per_layer_token_embd|position_embd|token_types)\.|\.nextn\.embed_tokens\.|\.embed_tokens\.weight$"
)
# src/models/*.cpp load_arch_tensors: architectures that do not load token_embd again as the
# output head when a file has no output.weight (their output is required, or they have none).
# Every other architecture does (create_tensor(LLM_TENSOR_TOKEN_EMBD, TENSOR_DUPLICATED)), and
# llama_model_loader::create_tensor places that copy as LLM_TENSOR_OUTPUT (GGML_OP_MUL_MAT): on a
# CPU, a second, repacked tensor beside the GET_ROWS one.
NO_OUTPUT_COPY = frozenset({
    "apertus", "arwkv7", "baichuan", "bailingmoe", "bailingmoe2", "bert", "bitnet", "clip", "codeshell", "dbrx",
    "deepseek4", "dots1", "eagle3", "eurobert", "glm5-next", "gpt-oss", "gptneox", "hy_v4", "internlm2", "jais",
    "jina-bert-v2", "jina-bert-v3", "kimi-k3", "kimi-linear", "llada-moe", "maple", "mellum", "mimo2", "minimax-m2",
    "minimax-m3", "modern-bert", "muse-glimmer", "nemotron", "neo-bert", "nomic-bert", "nomic-bert-moe", "olmo2",
    "olmoe", "orion", "phi2", "phimoe", "plamo", "qwen", "qwen2moe", "rwkv6", "rwkv6qwen2", "rwkv7", "stablelm",
    "step35", "talkie", "wavtokenizer-dec", "xverse",
})  # fmt: skip


def _n_dims(shape: tuple[int, ...]) -> int:
    """``ggml_n_dims``: dimensions up to the last one longer than 1 (ne[] is the shape reversed)."""
    return max((i + 1 for i, d in enumerate(reversed(shape)) if d > 1), default=1)


def _reads_rows(r: Any) -> bool:
    """A token (or position) embedding: llama.cpp reads it with GET_ROWS, never from CPU_REPACK."""
    return r.kind == "embeddings" or bool(_GET_ROWS.search(r.name))


def _matmul(r: Any) -> int:
    """How llama.cpp multiplies a weight: 2 (MUL_MAT of a 2-D weight), 3 (MUL_MAT_ID of stacked
    experts), 0 (neither: read by GET_ROWS, or not a matrix)."""
    dims = _n_dims(r.shape)
    if _reads_rows(r) or not (dims == 2 or (dims == 3 and r.kind == "experts")):
        return 0
    return dims


def _repackable(r: Any, cpu: str = "avx2") -> bool:
    """A weight the repack buffer takes on ``cpu``: a type it repacks, rows in its groups,
    multiplied as a matrix (2-D, MUL_MAT) or as stacked experts (3-D, MUL_MAT_ID)."""
    rows = REPACK_TYPES[cpu].get(r.format)
    return rows is not None and _matmul(r) > 0 and r.shape[-2] % rows == 0


def _amx(r: Any) -> bool:
    """A weight the AMX buffer takes (amx.cpp supports_op): MUL_MAT of a 2-D weight only."""
    ne0 = AMX_TYPES.get(r.format)
    return ne0 is not None and _matmul(r) == 2 and r.shape[-1] % ne0 == 0 and r.shape[-2] % AMX_ROWS == 0


def _amx_bytes(r: Any) -> int:
    """``ggml_backend_amx_get_alloc_size`` of each tensor of a row (rows × get_row_size), each
    placed on the buffer's 32 B alignment."""
    blocks = r.shape[-1] // DTYPES[r.format].elements * r.shape[-2]
    one = r.bytes // r.count + blocks * AMX_EXTRA.get(r.format, 0)
    return r.count * (-(-one // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT)


def loadable(model: Model) -> None:
    """Refuse a file llama.cpp cannot open: Ollama's gpt-oss files store MXFP4 as ggml type 4,
    which llama.cpp's table holds as the removed Q4_2 (ggml.c type_traits[4]: "DEPRECATED", block
    size 0), and gguf.cpp gguf_init_from_file_impl fails on it ("… not a multiple of block size (0)")."""
    from ....gguf.reader import OLLAMA_TYPE_4

    type_4 = (model.config or {}).get(OLLAMA_TYPE_4)
    if type_4:
        raise ParamcountError(
            f"llama.cpp cannot load this file: {len(type_4):,} tensors are ggml type 4, Ollama's MXFP4 (llama.cpp's "
            "is 39; its type 4 is the removed Q4_2, which gguf_init_from_file_impl refuses): use --runtime ollama "
            "with --ollama-version 0.11.0 … 0.11.10",
            source=model.source,
            field=type_4[0],
        )
    # gguf_init_from_file_impl reads the tensor types first: a type-4 file fails there, before its name
    if is_gguf(model) and model.model_type == "gptoss":
        # Ollama's own gpt-oss converter names the architecture gptoss; llama.cpp's is gpt-oss, and
        # llm_arch_from_string's unknown name makes llama_model_loader throw "unknown model architecture"
        raise ParamcountError(
            "llama.cpp cannot load this file: its architecture 'gptoss' is Ollama's name for gpt-oss "
            "(llama.cpp's is 'gpt-oss'; llama_model_loader: unknown model architecture): use --runtime ollama",
            source=model.source,
            field="general.architecture",
        )


def _output_copy(w: Any, arch: str | None, gguf: bool) -> Any:
    """The token embedding's row when llama.cpp loads it again as the output head: a config's
    tied head, or a GGUF file without output.weight, on an architecture that does so."""
    tied = [r for r in w.rows if r.role == "tied" and r.kind == "output_head"]
    if arch in NO_OUTPUT_COPY or (any(r.name == "output.weight" for r in w.rows) if gguf else not tied):
        return None
    if gguf:
        return next((r for r in w.rows if r.name == "token_embd.weight"), None)
    return next((r for r in w.rows if _reads_rows(r) and r.count == 1 and r.shape == tied[0].shape), None)


def repack(w: Any, arch: str | None = None, gguf: bool = False, cpu: str = "avx2") -> tuple[Term, ...]:
    """The CPU's extra buffers (``use_extra_bufts``, on by default), in the order llama.cpp tries
    them (``ggml_backend_cpu_get_extra_buffer_types``: AMX, then CPU_REPACK): a copy, laid out for
    the CPU's kernels, of every matrix one of them takes; the mapped file stays as it is beside
    them. ``arch``: the llama.cpp architecture (None: not known here); ``gguf``: ``w`` holds a
    GGUF file's names; ``cpu``: --cpu-features."""
    amx, packed, copy = extra_rows(w, arch, gguf, cpu)
    guess = copy is not None and arch is None
    terms = (_amx_term(amx, copy, guess), _repack_term(packed, copy, cpu, guess))
    return tuple(t for t in terms if t is not None)


def extra_rows(w: Any, arch: str | None, gguf: bool, cpu: str) -> tuple[list[Any], list[Any], Any]:
    """The rows the AMX buffer takes, those the CPU_REPACK buffer takes, and the token
    embedding's second copy as the output head where llama.cpp loads one (None: it does not)."""
    rows = list(w.rows)
    copy = _output_copy(w, arch, gguf)
    if copy is not None:  # multiplied as the output head (MUL_MAT), not read by GET_ROWS
        copy = replace(copy, name="output.weight", kind="output_head")
        rows.append(copy)
    amx = [r for r in rows if cpu == "amx" and _amx(r)]
    taken = {id(r) for r in amx}
    return amx, [r for r in rows if id(r) not in taken and _repackable(r, cpu)], copy


def _extra_said(copy: Any, rows: list[Any], guess: bool) -> str:
    said = ""
    if copy in rows:
        said += "; the token embedding again, as the output head llama.cpp loads from it (no output.weight)"
    if guess:
        said += "; the llama.cpp architecture of this config is not mapped here: the copy is counted as most load it"
    return said


def _repack_term(rows: list[Any], copy: Any, cpu: str, guess: bool) -> Term | None:
    if not rows:
        return None
    n = sum(r.bytes for r in rows)
    types = ", ".join(sorted({r.format for r in rows}))
    formula = f"{sum(r.count for r in rows):,} tensors ({types}) = {n:,} B"
    kinds = ", ".join(f"{t} (rows by {k})" for t, k in REPACK_TYPES[cpu].items())
    said = (
        f"--cpu-features {cpu}: {kinds}, weights that are multiplied (2-D, or stacked experts), not the token"
        " embeddings (read by GET_ROWS)" + (", nor the 2-D ones the AMX buffer took" if cpu == "amx" else "")
    )
    src = (
        "llama.cpp ggml/src/ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type, extra_buffer_type::supports_op"
        " (CPU_REPACK buffer type); src/llama-model.cpp make_cpu_buft_list (use_extra_bufts);"
        " src/llama-model-loader.cpp create_tensor (TENSOR_DUPLICATED output)"
    )
    label = "CPU_REPACK buffer (weights repacked for the CPU)"
    return Term("repack", label, n, formula, said + _extra_said(copy, rows, guess), guess, src)


def _amx_term(rows: list[Any], copy: Any, guess: bool) -> Term | None:
    if not rows:
        return None
    n = sum(_amx_bytes(r) for r in rows)
    types = ", ".join(sorted({r.format for r in rows}))
    formula = f"{sum(r.count for r in rows):,} tensors ({types}), packed = {n:,} B"
    said = (
        "--cpu-features amx (Sapphire Rapids and later, in a build with AMX: GGML_NATIVE on such a CPU or its"
        " CPU variant): 2-D weights multiplied by MUL_MAT, rows by 32, in Q4_0, Q4_1, Q8_0 (row length by 32),"
        " Q4_K, Q5_K, Q6_K, IQ4_XS (by 256) or F16 (by 16), packed for AMX tiles: Q8_0 4 B more per block,"
        " Q4_K and Q5_K 4 B, IQ4_XS 2 B; F16 copied as it is"
    )
    src = (
        "llama.cpp ggml/src/ggml-cpu/amx/amx.cpp extra_buffer_type::supports_op, ggml_backend_amx_buffer_type;"
        " amx/mmq.cpp ggml_backend_amx_get_alloc_size, get_row_size; amx/common.h qtype_has_amx_kernels;"
        " ggml/src/ggml-cpu/ggml-cpu.cpp ggml_backend_cpu_get_extra_buffer_types (AMX before CPU_REPACK)"
    )
    label = "AMX buffer (weights packed for AMX)"
    return Term("amx", label, n, formula, said + _extra_said(copy, rows, guess), guess, src)


# ---- the mapped model buffer on a CPU ---------------------------------------------------------

ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT: general.alignment of the converter's files
_MAPPED_SRC = (
    "llama.cpp src/llama-model.cpp llama_model_base::load_tensors (with mmap, ggml_backend_dev_buffer_from_host_ptr"
    " over the span get_mapping_range gives), src/llama-model-loader.cpp llama_model_loader::get_mapping_range (from"
    " the first tensor's offset to the end of the last), ggml/src/gguf.cpp (each tensor's data padded to"
    " general.alignment)"
)


def mapped(model: Model, every: Any, w: Any, gguf: bool, moved: list[Any]) -> Term:
    """The CPU_Mapped model buffer: the file's span from the first tensor llama.cpp keeps in CPU
    memory to the end of the last (each tensor's data starts on ``general.alignment``, so the
    padding after each is in it, and any tensor it skips or moves to an extra buffer between
    them). ``every``: the file's tensors, ``w``: those loaded, ``moved``: the rows the CPU's
    extra buffers take."""
    from ....gguf.reader import DATA_ORDER

    t = replace(w.term(), source=_MAPPED_SRC)
    order = (model.config or {}).get(DATA_ORDER) if gguf else None
    if order:
        extra, said, guess = _span(order, model.config.get("general.alignment", ALIGNMENT), every, w, moved)
    else:
        extra, said, guess = _converter_padding(w, moved)
        if every.bytes != w.bytes:  # MTP blocks not loaded: where the converter wrote them is not known here
            said += (
                f"; the {every.bytes - w.bytes:,} B of blocks llama.cpp does not load are left out, as where the"
                " converter writes them last (the checkpoint's order): where they lie before the last tensor it"
                " keeps, the mapped span holds them too"
            )
            guess = True
    if not extra and not guess:
        return t
    label = "padding and skipped tensors in the mapped span" if extra >= 0 else "the mapped span's difference"
    part = Term("weights.padding", label, extra, f"{extra:,} B", said, guess)
    parts = (t.parts or (replace(t, key="weights.tensors", label="tensors", parts=()),)) + (part,)
    formula = f"{w.bytes:,} B (every tensor loaded) + {extra:,} B (the mapped span's padding) = {t.bytes + extra:,} B"
    said, guess = t.assumption + "; " + said, t.estimate or guess
    return replace(t, bytes=t.bytes + extra, formula=formula, assumption=said, estimate=guess, parts=parts)


_RANGE = re.compile(r"^(.*?\.)(\d+)–(\d+)(\..*)$")


def _tensors(rows: list[Any]) -> dict[str, int]:
    """Each tensor of ``rows`` by its own name (``blk.0–15.x`` is sixteen), and its bytes."""
    out: dict[str, int] = {}
    for r in rows:
        m = _RANGE.match(r.name)
        names = [f"{m[1]}{i}{m[4]}" for i in range(int(m[2]), int(m[3]) + 1)] if m else [r.name]
        out |= dict.fromkeys(names, r.bytes // max(r.count, 1))
    return out


def _span(order: Any, align: int, every: Any, w: Any, moved: list[Any]) -> tuple[int, str, bool]:
    """What a GGUF file's mapped span holds beyond the tensors kept in it, from the order of its
    data section (gguf/reader.py GGUFFile.data_order)."""
    sizes, loads = _tensors(list(every.rows)), set(_tensors(list(w.rows)))
    kept = loads - set(_tensors(moved))
    at = [i for i, name in enumerate(order) if name in kept]
    if not at or any(name not in sizes for name in order):
        return 0, "", False
    names = order[at[0] : at[-1] + 1]
    span = sum(-(-sizes[n] // align) * align for n in names[:-1]) + sizes[names[-1]]
    in_file = loads.intersection(order)  # an mmproj's towers beside a GGUF are another file's
    extra = span - sum(sizes[n] for n in in_file)  # below 0 where moved tensors lie outside the span
    said = (
        "with mmap (the default): the file's span from the first tensor kept in CPU memory to the end of the last:"
        f" the padding after each tensor's data (general.alignment {align})"
    )
    skipped = any(n not in loads for n in names)
    outside = any(n not in names for n in kept.union(loads) - kept)
    return (
        extra,
        said
        + (", the tensors it skips among them" if skipped else "")
        + (", less the tensors moved to an extra buffer from its ends" if outside else ""),
        False,
    )


def _converter_padding(w: Any, moved: list[Any]) -> tuple[int, str, bool]:
    """The padding after each tensor the converter writes (gguf-py pads each tensor's data to 32
    B), but the last, which ends the span: taken to be one that fills its 32 B (the converter
    writes the final norm or a matrix last; a smaller one leaves up to 31 B less). The converter
    writes the checkpoint's tensors in the order of their names, lm_head first: where an extra
    buffer takes the output head, llama.cpp's span begins after it, which a config cannot place."""
    extra = 0
    for r in w.rows:
        if r.count and r.role != "tied":
            extra += r.count * (-(r.bytes // r.count) % ALIGNMENT)
    said = "with mmap (the default): each tensor's data padded to 32 B in the converter's file (general.alignment)"
    head = any(r.kind == "output_head" and r.name != "output.weight" for r in moved)
    if head:
        said += (
            "; the span is taken whole, from the file's first tensor: llama.cpp's begins at the first it keeps in"
            " CPU memory, after the output head where the converter writes it first and an extra buffer takes it"
        )
    return extra, said, head


# ---- the model buffers on a GPU ---------------------------------------------------------------

# llama-arch.cpp LLM_TENSOR_INFOS: the tensors of LLM_TENSOR_LAYER_INPUT, by their GGUF names (the
# masked-embedding tables listed there too are GGML_OP_NONE: never loaded)
_INPUT_LAYER = re.compile(r"^(token_embd|position_embd|token_types|per_layer_token_embd)\.weight$")
# the tower kinds of a composite's tree whose tensors are the mmproj file's, not the language model's
_MMPROJ_TOWERS = ("vision_encoder", "audio_encoder", "projector")
_OFFLOAD_SAID = (
    "every layer on the GPU (-ngl all: n_layer + 1 with the output layer; llama-server's default -ngl auto"
    " when they fit, llama_model_default_params' -1; llama-cpp-python's Llama() needs n_gpu_layers=-1): the"
    " repeating and output layers in CUDA0, the input layer on the CPU"
)
_COPY_SAID = (
    "; no output.weight: token_embd loaded again as the output head (create_tensor TENSOR_DUPLICATED, placed"
    " as LLM_TENSOR_OUTPUT), a second copy, on the GPU"
)
_PADDING_SAID = (
    "; each tensor as ggml-cuda allocates it: a quantised tensor whose rows are not a multiple of 512 values"
    " gets one row's worth of the missing values (MATRIX_ROW_PADDING), and every tensor is aligned to 128 B"
)
CUDA_ALIGNMENT = 128  # ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alignment
MATRIX_ROW_PADDING = 512  # ggml-cuda/common.cuh
_DEVICE_SRC = (
    "llama.cpp src/llama-model.cpp llama_model_base::load_tensors (dev_layer, dev_output: get_layer_buft_list,"
    " the GPU for il >= n_layer_all + 1 - n_gpu_layers), src/llama-model-loader.cpp create_tensor"
    " (TENSOR_DUPLICATED token_embd as LLM_TENSOR_OUTPUT, in the output layer's buffer), llama_model_size"
)
_HOST_SRC = (
    'llama.cpp src/llama-model.cpp llama_model_base::load_tensors (dev_input = {cpu_dev, cpu_buft_list}: "the'
    ' input layer is always on the CPU"), src/llama-arch.cpp LLM_TENSOR_INFOS (LLM_TENSOR_LAYER_INPUT),'
    " src/llama-model-loader.cpp create_tensor (with mmap, the CPU buffer type: CPU_Mapped)"
)


def offload(model: Model, w: Any, arch: str | None, gguf: bool) -> tuple[Term, Term | None]:
    """The weights with every layer on the GPU, split as ``llama_model_base::load_tensors`` puts
    them: the CUDA0 model buffer (the repeating and output layers, and the token embedding again
    where llama.cpp loads it as the output head) and the input layer, which stays on the CPU
    whatever ``-ngl`` says: host memory, mmapped from the file (None where there is none)."""
    inputs = _input_layer(model, w, gguf)
    held = {id(r) for r in inputs}
    copy = _output_copy(w, arch, gguf)
    rows = tuple(r for r in w.rows if id(r) not in held) + ((copy,) if copy is not None else ())
    whole = w.term()
    tensors = replace(w, rows=rows).term()
    padding = cuda_padding(rows)
    pad = Term("weights.padding", "ggml-cuda padding and alignment", padding, f"{padding:,} B", "", False)
    on_gpu = replace(tensors, bytes=tensors.bytes + padding, parts=tensors.parts + ((pad,) if padding else ()))
    guess = copy is not None and arch is None
    said = whole.assumption + "; " + _OFFLOAD_SAID + (_COPY_SAID if copy is not None else "") + _PADDING_SAID
    if guess:
        said += "; the llama.cpp architecture of this config is not mapped here: the copy is counted as most load it"
    host = sum(r.bytes for r in inputs)
    moved = f" − {host:,} B (input layer, on the host)" if host else ""
    again = f" + {copy.bytes:,} B (token_embd again as the output head)" if copy is not None else ""
    padded = f" + {padding:,} B (ggml-cuda's row padding and 128 B alignment)" if padding else ""
    formula = f"{w.bytes:,} B (every tensor){moved}{again}{padded} = {on_gpu.bytes:,} B"
    label = whole.label.replace("weights", "weights, CUDA0 model buffer", 1)
    device = replace(
        on_gpu, label=label, formula=formula, assumption=said, estimate=w.bound or guess, source=_DEVICE_SRC
    )
    return device, _host_term(w, inputs) if inputs else None


def cuda_padding(rows: Any) -> int:
    """What a CUDA model buffer holds beyond the tensors' bytes: ``ggml_backend_alloc_ctx_tensors_from_buft``
    takes ``GGML_PAD(get_alloc_size, 128)`` for each tensor, and ggml-cuda's ``get_alloc_size`` adds,
    to a quantised tensor whose rows are not a multiple of 512 values, ``ggml_row_size(type, 512 -
    ne0 % 512)`` (its last row padded, read by the matrix kernels)."""
    extra = 0
    for r in rows:
        if not r.count or r.role == "tied":
            continue
        one = r.bytes // r.count
        block = DTYPES.get(r.format)
        short = -r.shape[-1] % MATRIX_ROW_PADDING if r.shape else 0
        if block is not None and block.elements > 1 and short:
            one += short // block.elements * block.bytes
        extra += r.count * (-(-one // CUDA_ALIGNMENT) * CUDA_ALIGNMENT) - r.bytes
    return extra


def _host_term(w: Any, inputs: list[Any]) -> Term:
    """The input layer's CPU_Mapped buffer: host memory beside the GPU."""
    t = replace(w, rows=tuple(inputs)).term()
    names = ", ".join(r.name for r in inputs)
    said = (
        f"{names}: the input layer, on the CPU whatever -ngl says; with mmap (the default) the file's own pages"
        " (CPU_Mapped: llama.cpp logs the file's span from the first to the end of the last), with --no-mmap a"
        " CUDA_Host copy; host RAM, not in the GPU total"
    )
    label = "input layer, CPU_Mapped model buffer"
    parts = t.parts if len(t.parts) > 1 else ()
    return replace(t, key="host_weights", label=label, assumption=said, source=_HOST_SRC, parts=parts, host=True)


def _input_layer(model: Model, w: Any, gguf: bool) -> list[Any]:
    """The rows of llama.cpp's input layer: a file's token_embd, position_embd, token_types and
    per_layer_token_embd; a config's embedding tables outside the decoder stack and its towers
    (the converter writes the token, position, token-type and Gemma's per-layer tables as those)."""
    if gguf:
        return [r for r in w.rows if _INPUT_LAYER.match(r.name)]
    names = _input_slots(model)
    return [r for r in w.rows if r.name in names and r.role != "tied"]


def _input_slots(model: Model) -> frozenset[str]:
    from ....slots import slots

    found = model.derived(("slots", False), lambda: tuple(slots(model.tree, model.model_type, checkpoint=False)))
    towers = _towers(model.tree)
    return frozenset(
        s.name
        for s in found
        if s.layers is None
        and s.tie is None
        and s.kind == "embeddings"
        and not s.linear
        and len(s.shape) == 2
        and not s.name.startswith(towers)
    )


def _towers(tree: Any, prefix: str = "") -> tuple[str, ...]:
    """Name prefixes of a composite's image and audio towers and projectors (the mmproj file's)."""
    here = join(prefix, tree.name)
    out: list[str] = []
    for c in getattr(tree, "children", ()):
        if not hasattr(c, "children"):
            continue
        if getattr(c, "tower", None) in _MMPROJ_TOWERS:
            out.append(join(here, c.name) + ".")
        else:
            out += _towers(c, here)
    return tuple(out)


# ---- multi-token-prediction blocks ------------------------------------------------------------

# A config's families whose converted file's only bound is its MTP layers' embedding and head copies
_MTP_FAMILIES = frozenset({"glm4_moe", "glm4_moe_lite", "deepseek_v32", "glm_moe_dsa"})


def _mtp_first(model: Model) -> tuple[str, int] | None:
    """The block list and first multi-token-prediction block of the file (None: it has none):
    a GGUF file's last ``nextn_predict_layers`` blocks (llama_hparams::n_layer() = n_layer_all −
    n_layer_nextn), or the layers a converted config's file appends after its decoder layers
    (gguf/layout.py)."""
    from ....gguf.meta import metadata

    if is_gguf(model):
        meta = metadata(model)
        k = meta.integer("nextn_predict_layers", 0, low=0)
        return ("blk", meta.integer("block_count") - k) if k else None
    from ....gguf.layout import mtp_at

    return mtp_at(model)


def _split(r: Any, first: int, path: str) -> tuple[Any | None, Any | None]:
    """A row's blocks (of the list ``path``) before ``first`` and from it on (None where there are none)."""
    if r.name.startswith("mtp."):  # Qwen3-Next's mtp.fc and norms (gguf_hybrid), the file's nextn.*
        return None, r
    m = re.match(rf"^({re.escape(path)})\.(\d+)(?:–(\d+))?\.", r.name)
    if m is None:
        return r, None
    lo, hi = int(m[2]), int(m[3] or m[2])
    if hi < first:
        return r, None
    if lo >= first:
        return None, r
    per = r.count // (hi - lo + 1)

    def part(a: int, b: int) -> Any:
        where = f"{m[1]}.{a}" + (f"–{b}" if b > a else "") + "."
        return replace(r, name=where + r.name[m.end() :], count=per * (b - a + 1))

    return part(lo, first - 1), part(first, hi)


def has_towers(model: Model) -> bool:
    """Whether an image+text model's config holds towers that llama.cpp puts in an mmproj file."""
    return bool(_towers(model.tree))


def text_only(model: Model, w: Any) -> Any:
    """The weights without an image+text model's mmproj file (its towers and projectors): what
    ``llama-server -m FILE`` loads without ``--mmproj`` (tools/server: mtmd is initialised only
    from ``params.mmproj``; ``--no-mmproj`` turns off the one ``-hf`` would fetch)."""
    towers = _towers(model.tree)
    if not towers:  # nothing to leave out: llama-server takes the flag all the same
        return w
    kept = tuple(r for r in w.rows if not r.name.startswith(towers))
    said = "; text only (--no-mmproj): the mmproj file's towers and projectors not loaded"
    return replace(w, rows=kept, note=w.term().assumption + said)


def loaded(model: Model, w: Any) -> Any:
    """The weights llama.cpp loads: not the multi-token-prediction blocks, which every
    architecture's ``load_arch_tensors`` creates with TENSOR_SKIP unless ``load_mtp``
    (llama_model_default_params: false; common.cpp sets it for ``--spec-type draft-mtp``), and
    ``llama_model_loader::create_tensor`` then leaves out of the model buffers."""
    at = _mtp_first(model)
    if at is None:
        return w
    path, first = at
    kept, skipped = [], []
    for r in w.rows:
        a, b = _split(r, first, path)
        kept += [a] if a is not None else []
        skipped += [b] if b is not None else []
    if not skipped:
        return w
    n, size = sum(r.count for r in skipped), sum(r.bytes for r in skipped)
    said = (
        f"; not loaded: the file's multi-token-prediction block(s) from {first} on ({n:,} tensors, {size:,} B), which"
        " llama.cpp skips unless speculative decoding asks for them (--spec-type draft-mtp)"
    )
    # a converted config's only bound is its MTP layers' embedding and head copies (gguf_layout), now left out
    bound = w.bound and model.model_type not in _MTP_FAMILIES
    return replace(w, rows=tuple(kept), note=w.term().assumption + said, bound=bound)


def _arch(model: Model) -> str | None:
    """llama.cpp's architecture: a GGUF file's own, or the one a config's family converts to."""
    if is_gguf(model):
        return model.model_type
    from ....gguf import types as gg

    composite = gg.COMPOSITES.get(model.model_type)  # an image+text family: its language model's file
    return composite.arch if composite else gg.ARCHS.get(model.model_type)


def _layout(model: Model) -> tuple[Layout | None, str | None, Any]:
    """The cache layout (or why there is none) and, for a hybrid or state-space model, llama.cpp's
    hparams (:mod:`paramcount.memory.runtimes.llamacpp.recurrent`)."""
    from ....arch.cache import NoLayout
    from .recurrent import layout

    try:
        recurrent = recurrent_hparams(model)
    except NoLayout as e:
        return None, str(e), None
    if recurrent is not None:
        return layout(model.name, model.model_type, recurrent), None, recurrent
    return (*_attention_layout(model), None)


def _attention_layout(model: Model) -> tuple[Layout | None, str | None]:
    from ....arch.cache import NoLayout
    from ...context.kv_layout import attention_layout

    try:
        layout = attention_layout(model)
    except NoLayout as e:
        return None, str(e)
    if not any(k.attention in ("full", "sliding") for k in layout.kinds):
        return None, "no attention layer keeps a KV cache here; llama.cpp's plan covers decoder attention caches"
    if any(k.attention not in ("full", "sliding") for k in layout.kinds):
        return None, _unplanned(model)
    if layout.runtime != "llama.cpp":
        said = (
            "the cache layout is read from the transformers config; the GGUF file llama.cpp converts from it "
            "may differ (llama.cpp switches Phi-3's sliding window off)"
        )
        kept = tuple(n for n in layout.notes if "DynamicCache" not in n)  # transformers' cache rule, not this one
        layout = replace(layout, notes=(*kept, said))
    return layout, None


def _mixer_note(h: Any) -> tuple[str, ...]:
    """What the compute estimate models of a recurrent layer's graph."""
    if h is None or not h.recurrent:
        return ()
    if mixer(h) is not None:
        said = (
            "the Mamba mixer's tensors at its peak (src/models/mamba-base.cpp), where ggml-alloc reuses the "
            "convolution input's freed block for the scan's output, are one of its moments"
        )
    else:
        said = (
            f"{h.arch}'s recurrent mixer (gated DeltaNet, KDA or short convolution) is not modelled: the estimate "
            "takes the attention, feed-forward and logits moments, which are the peak at published widths"
        )
    return (
        f"compute buffer: {said}; held within 5% of llama.cpp's at published widths in "
        "tests/fixtures/llamacpp_hybrid.json",
    )


def _placed_note(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """Where -ngl, -ot and -ts put it, per GPU and in host memory."""
    where = settings.get("devices")
    if not where:
        return ()
    each = ", ".join(f"{k} {v / 1e9:,.2f} GB" for k, v in where.items() if k != "host")
    return (
        f"placed as llama.cpp {settings['arguments']} places it: {each}; host memory {where['host'] / 1e9:,.2f} GB",
    )


def _unplanned(model: Model) -> str:
    """Why a model with recurrent states or cross-attention has no llama.cpp plan here."""
    return (
        "llama.cpp's plan here covers attention caches, and recurrent states for mamba, mamba2, jamba, falcon_h1, "
        "granitemoehybrid, nemotron_h, lfm2, qwen3_next, qwen3_5(_moe)_text and kimi_linear, not this model's "
        "states or cross-attention"
    )


def _notes(o: Options) -> tuple[str, ...]:
    said = []
    if o.device == "cpu":
        said.append(
            f"CPU: {_CPU_SAID[o.cpu]} is assumed (--cpu-features {o.cpu}), where llama.cpp's default"
            f" use_extra_bufts puts {_EXTRA_SAID[o.cpu]}"
        )
    if o.flash_attn == "auto":
        said.append(
            "--flash-attn auto resolves to on: llama_context::resolve_fused_ops keeps flash attention "
            "when the layer's device runs FLASH_ATTN_EXT (CPU and CUDA do)"
        )
    return tuple(said)
