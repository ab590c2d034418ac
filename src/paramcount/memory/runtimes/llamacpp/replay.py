"""The compute buffer of a dense decoder (llama, qwen2, qwen3; Mistral's files are llama's), of
LFM2 and of Granite 4.0-H on one backend, by replay:
the graph llama.cpp 0.5.0 builds for the reserved micro-batch, emitted node by node as its
builders add them, allocated by the port of ggml-alloc (:mod:`.gallocr`).

Emitted (``src/models/llama.cpp`` ``llama_model_llama::graph``, ``qwen2.cpp``, ``qwen3.cpp``;
``src/llama-graph.cpp``): ``build_inp_embd`` (``ggml_get_rows`` of the token ids and the
``inp_embd`` alternative, both put in the graph by ``ggml_build_forward_select``),
``build_inp_pos``, ``build_attn_inp_kv`` (``attn_inp_k_idxs``, ``attn_inp_v_idxs`` per token, or per
token and V element when V is stored transposed, the KQ mask ``n_kv × n_tokens``, f16 with flash
attention), ``build_inp_out_ids``; per layer ``build_norm`` (``ggml_rms_norm`` then ``ggml_mul``),
``build_qkv`` (three ``ggml_mul_mat``, biases added for qwen2, ``ggml_reshape_3d``), qwen3's Q/K
norms, ``ggml_rope_ext``, ``build_attn`` (Q, V, K expanded in that order, then
``llama_kv_cache::cpy_k`` / ``cpy_v``: ``ggml_set_rows`` into the cache through views),
``build_attn_mha`` (``ggml_flash_attn_ext`` and a reshape, or ``ggml_mul_mat(k, q)``,
``ggml_soft_max_ext``, ``ggml_mul_mat(v, kq)``, a permute and ``ggml_cont_2d``), ``attn_output``,
the last layer's ``ggml_get_rows`` by ``out_ids``, the residual ``ggml_add``, ``build_ffn``
(gate, up, ``ggml_swiglu_split``, down) and the output norm and head
(``llm_graph_result::set_outputs``: ``result_norm`` and ``result_output`` are graph outputs).
A quantised cache adds its Hadamard rotations (``llama_mul_mat_hadamard``). LFM2
(``src/models/lfm2.cpp``): ``build_rs`` gathers each short-convolution layer's state, then
``build_shortconv_block`` (in_proj, the B·x product transposed, concatenated after the state, the
state snapshot copied back, ``ggml_ssm_conv``, C·conv, out_proj), its attention layers with Q/K
norms, the residual added first. Granite 4.0-H (``src/models/granite-hybrid.cpp``, granitehybrid):
``build_mamba2_layer`` (``src/models/mamba-base.cpp``: ``build_rs`` of the conv and SSM states,
``ggml_ssm_conv``, ``ggml_ssm_scan``), attention with or without ``ggml_rope_ext``, then
``build_layer_ffn``: ``build_moe_ffn`` and the shared expert's ``build_ffn`` (or a dense
``build_ffn``), and the muP ``ggml_scale`` ops where the file sets the multipliers.

A dense stack's layers repeat, so the work is bounded: the replay stops adding middle layers once the allocator's
state at a layer's start (free blocks, the buffer's top, where each live tensor lies) is the one
at the previous layer's start; from there every further middle layer replays the same, and the
first, those middle layers and the last give the buffer of the whole stack
(tests/test_llamacpp_replay.py holds it to a full replay). LFM2's layers differ (convolution or
attention, as the file says), and so do Granite's (Mamba-2 or attention), so their graphs are
replayed whole: one pass over the file's own layers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any

from .gallocr import INPUT, OUTPUT, Graph, Tensor, reserve

F32, F16, I32, I64 = 4, 2, 4, 8
ARCHS = ("llama", "qwen2", "qwen3", "lfm2", "granitehybrid")


@dataclass(frozen=True)
class Dense:
    """What the dense graph's tensors depend on (widths in elements)."""

    arch: str
    hidden: int
    heads: int
    heads_kv: int
    head_k: int
    head_v: int
    ffn: int
    vocab: int
    layers: int
    n_kv: int  # cells one stream's attention reads
    tokens: int  # the reserved micro-batch
    streams: int = 1
    flash: bool = True
    outputs: int | None = None  # rows the head computes (reserve: every token)
    k_rot: int = 0  # a quantised K cache's Hadamard rotation (nrot × nrot), 0: none
    v_rot: int = 0  # a quantised V cache's
    recurrent: tuple[int, ...] = ()  # LFM2: its short-convolution layers
    d_conv: int = 0  # LFM2: l_cache - 1, the convolution state's columns (Granite: ssm.conv_kernel - 1)
    ssm: tuple[int, int, int, int] = (0, 0, 0, 0)  # Granite: d_inner, d_state, n_group, n_head of its Mamba-2
    moe: tuple[int, int, int, int] = (0, 0, 0, 0)  # Granite: n_expert, n_expert_used, n_ff_exp, n_ff_shexp
    rope: bool = True  # Granite: has_rope (rope.scaling.finetuned)
    scales: tuple[bool, bool, bool] = (False, False, False)  # Granite's muP: embedding, residual, logit scale


def rotations(head_k: int, head_v: int, k_quantised: bool, v_quantised: bool) -> tuple[int, int]:
    """``llama_kv_cache``'s ``attn_rot_k`` / ``attn_rot_v`` (a quantised cache type and a head
    size a multiple of 64) and their matrices' sides (``build_input_k_rot``: the largest power of
    two from 64 that divides the K head; ``build_input_v_rot``: 64)."""
    k = 0
    if k_quantised and head_k % 64 == 0:
        k = 64
        while head_k % (2 * k) == 0:
            k *= 2
    return k, 64 if v_quantised and head_v % 64 == 0 else 0


def _w(name: str, *ne: int) -> Tensor:
    return Tensor(name, "NONE", ne, 2, external=True)


def _input(name: str, size: int, *ne: int) -> Tensor:
    return Tensor(name, "NONE", ne, size, flags=INPUT)


def _view(name: str, a: Tensor, op: str, ne: tuple[int, ...], *more: Tensor) -> Tensor:
    root = a.view_src if a.view_src is not None else a
    return Tensor(name, op, ne, a.size, (a, *more), view_src=root, external=root.external, layer=a.layer)


def _into(name: str, op: str, src: Tensor, dst: Tensor, *more: Tensor) -> Tensor:
    """``ggml_cpy(src, dst)`` / ``ggml_set_rows(dst, src, idxs)``: a view of ``dst`` whose sources
    are ``src``, then ``more``, then ``dst``'s view (``ggml_cpy``: src, dst; ``ggml_set_rows``:
    src, indices, dst)."""
    root = dst.view_src if dst.view_src is not None else dst
    srcs = (src, *more, dst) if more else (src, dst)
    return Tensor(name, op, dst.ne, dst.size, srcs, view_src=root, external=root.external, layer=src.layer)


class _Builder:
    def __init__(self, d: Dense) -> None:
        self.d = d
        self.g = Graph()
        self.layer = -1

    def op(self, name: str, op: str, ne: tuple[int, ...], *src: Tensor, size: int = F32) -> Tensor:
        return Tensor(name, op, ne, size, src, layer=self.layer)

    def norm(self, x: Tensor, name: str) -> Tensor:
        """``build_norm`` (LLM_NORM_RMS, a weight): ``ggml_rms_norm``, ``ggml_mul``."""
        n = self.op("norm", "RMS_NORM", x.ne, x)
        return self.op(name, "MUL", x.ne, n, _w(name + ".w", x.ne[0]))

    def inputs(self) -> tuple[Tensor, ...]:
        d, t = self.d, self.d.tokens
        tokens = _input("inp_tokens", I32, t)
        embd = self.op("embd", "GET_ROWS", (d.hidden, t), _w("token_embd", d.hidden, d.vocab), tokens)
        self.g.select([embd, _input("inp_embd", F32, d.hidden, t)])
        pos = _input("inp_pos", I32, t)
        k_idxs = _input("attn_inp_k_idxs", I64, t)
        v_idxs = _input("attn_inp_v_idxs", I64, t if d.flash else t * d.heads_kv * d.head_v)
        mask = _input("attn_inp_kq_mask", F16 if d.flash else F32, d.n_kv, t // d.streams, 1, d.streams)
        out_ids = _input("out_ids", I32, d.outputs or t)
        copy = _input("rs_s_copy", I32, d.streams)  # build_rs_inp: one cell per sequence when reserved
        self.copy_main = _view("s_copy_main", copy, "VIEW", (d.streams,))
        self.copy_extra = _view("s_copy_extra", copy, "VIEW", (0,))
        self.k_rot = _input("attn_inp_k_rot", F32, d.k_rot, d.k_rot)
        self.v_rot = _input("attn_inp_v_rot", F32, d.v_rot, d.v_rot)
        return embd, pos, k_idxs, v_idxs, mask, out_ids

    def hadamard(self, cur: Tensor, rot: Tensor) -> Tensor:
        """``llama_mul_mat_hadamard`` (src/llama-impl.h) of a contiguous tensor: a 2-D reshape,
        ``ggml_mul_mat(rot, ·)`` and a reshape back."""
        n = rot.ne[0]
        flat = _view(cur.name + " (reshaped)", cur, "RESHAPE", (n, prod(cur.ne) // n))
        return _view(cur.name + " (rotated)", self.op(cur.name, "MUL_MAT", flat.ne, rot, flat), "RESHAPE", cur.ne)

    def rs(self, il: int, width: int = 0, cache: str = "r", rows: Any = None) -> Tensor:
        """``build_rs`` (src/llama-graph.cpp): the zeroed state (``ggml_scale_inplace``, a view),
        the sequences' states gathered (``get_state_rows``: ``ggml_get_rows``, or ``rows``, e.g.
        Mamba-2's ``ggml_ssm_scan``) and the other cells' copied back (``ggml_cpy`` of
        ``ggml_get_rows``), each expanded in that order."""
        d, n_seqs = self.d, self.d.streams
        s = _w(f"cache_{cache}_l{il}", width or d.d_conv * d.hidden, n_seqs)
        states = _view("states", s, "RESHAPE", s.ne)
        self.g.expand(_view("zero", _view("state_zero", states, "VIEW", (s.ne[0],)), "SCALE", (s.ne[0],)))
        main = rows(states) if rows else self.op("states_main", "GET_ROWS", (s.ne[0], n_seqs), states, self.copy_main)
        out = self.g.expand(main)
        extra = self.op("states_extra", "GET_ROWS", (s.ne[0], 0), states, self.copy_extra)
        self.g.expand(_into("cpy", "CPY", extra, _view("s (view)", s, "VIEW", s.ne)))
        return out

    def shortconv(self, x: Tensor, il: int) -> Tensor:
        """LFM2's ``build_shortconv_block`` (src/models/lfm2.cpp), causal, one state snapshot."""
        d, n_seqs = self.d, self.d.streams
        n = d.tokens // n_seqs
        x3 = _view("x3", x, "RESHAPE", (d.hidden, n, n_seqs))
        bcx = self.op("in_proj", "MUL_MAT", (3 * d.hidden, n, n_seqs), _w("in_proj", d.hidden, 3 * d.hidden), x3)
        b, c, xx = (_view(f"bcx.{i}", bcx, "VIEW", (d.hidden, n, n_seqs)) for i in range(3))
        bx = _view("bx (transposed)", self.op("bx", "MUL", b.ne, b, xx), "TRANSPOSE", (n, d.hidden, n_seqs))
        conv = _view("conv", self.rs(il), "RESHAPE", (d.d_conv, d.hidden, n_seqs))
        bx = self.op("concat", "CONCAT", (d.d_conv + n, d.hidden, n_seqs), conv, bx)
        state = _w(f"cache_r_l{il} (snap)", d.d_conv * d.hidden, n_seqs)
        snap = _view("snap", bx, "VIEW", (d.d_conv, d.hidden, n_seqs))
        self.g.expand(_into("cpy", "CPY", snap, _view("state (view)", state, "VIEW", state.ne)))
        conv_out = self.op("conv", "SSM_CONV", (d.hidden, n, n_seqs), bx, _w("conv", d.d_conv + 1, d.hidden))
        y = self.op("y", "MUL", c.ne, c, conv_out)
        y = self.op("out_proj", "MUL_MAT", (d.hidden, n, n_seqs), _w("out_proj", d.hidden, d.hidden), y)
        return _view("y", y, "RESHAPE", (d.hidden, d.tokens))

    def qkv(self, x: Tensor, pos: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``build_qkv``, qwen3's Q/K norms and ``ggml_rope_ext`` (src/models/<arch>.cpp)."""
        d, t = self.d, self.d.tokens
        out = []
        parts = (("Qcur", d.heads, d.head_k), ("Kcur", d.heads_kv, d.head_k), ("Vcur", d.heads_kv, d.head_v))
        for name, heads, hd in parts:
            c = self.op(name, "MUL_MAT", (heads * hd, t), _w("w" + name, d.hidden, heads * hd), x)
            if d.arch == "qwen2":  # wq_b, wk_b, wv_b
                c = self.op(name, "ADD", c.ne, c, _w("b" + name, heads * hd))
            out.append(_view(name, c, "RESHAPE", (hd, heads, t)))
        q, k, v = out
        if d.arch in ("qwen3", "qwen3moe", "lfm2"):  # attn_q_norm / attn_k_norm over the reshaped heads
            q, k = self.norm(q, "Qcur_normed"), self.norm(k, "Kcur_normed")
        if d.rope:  # Granite 4.0-H without positions (has_rope false): Q and K as projected
            q = self.op("Qcur", "ROPE", q.ne, q, pos)
            k = self.op("Kcur", "ROPE", k.ne, k, pos)
        return q, k, v

    def attn(self, x: Tensor, ins: tuple[Tensor, ...]) -> Tensor:
        """``build_attn`` (the KV-cache form) and ``build_attn_mha``."""
        d, t = self.d, self.d.tokens
        _, pos, k_idxs, v_idxs, mask, _ = ins
        q, k, v = self.qkv(x, pos)
        if d.k_rot:  # build_attn: Q and K rotated by the K cache's matrix, V by the V cache's
            q, k = self.hadamard(q, self.k_rot), self.hadamard(k, self.k_rot)
        if d.v_rot:
            v = self.hadamard(v, self.v_rot)
        for cur in (q, v, k):
            self.g.expand(cur)
        cells = d.n_kv * d.streams  # every stream's cells: get_k, get_v view them all (ggml_view_4d over n_stream)
        cache_k, cache_v = _w("cache_k", d.head_k * d.heads_kv, cells), _w("cache_v", d.head_v * d.heads_kv, cells)
        k_rows = _view("Kcur (view)", k, "VIEW", (d.head_k * d.heads_kv, t))
        self.g.expand(_into("cache_k (view)", "SET_ROWS", k_rows, cache_k, k_idxs))
        v_rows = _view("Vcur (reshaped)", v, "RESHAPE", (d.head_v * d.heads_kv, t))
        if not d.flash:  # V stored transposed: one more reshape to a column per element
            v_rows = _view("Vcur (reshaped) (reshaped)", v_rows, "RESHAPE", (1, d.head_v * d.heads_kv * t))
        self.g.expand(_into("cache_v (view)", "SET_ROWS", v_rows, cache_v, v_idxs))
        kv = [_view(n + " (view) (permuted)", _view(n + " (view)", c, "VIEW", c.ne), "PERMUTE", c.ne)
              for n, c in (("cache_k", cache_k), ("cache_v", cache_v))]  # fmt: skip
        qp = _view("Qcur (permuted)", _view("Qcur (view)", q, "VIEW", q.ne), "PERMUTE", q.ne)
        width = d.heads * d.head_v
        if d.flash:
            fa = self.op("fattn", "FLASH_ATTN_EXT", (d.head_v, d.heads, t), qp, kv[0], kv[1], mask)
            cur = _view("kqv_out", fa, "RESHAPE", (width, t))
        else:
            kq = self.op("kq", "MUL_MAT", (d.n_kv, t, d.heads), kv[0], qp)
            kq = self.op("kq_soft_max", "SOFT_MAX", kq.ne, kq, mask)
            kqv = self.op("kqv", "MUL_MAT", (d.head_v, t, d.heads), kv[1], kq)
            cur = self.op("kqv_out", "CONT", (width, t), _view("kqv (permuted)", kqv, "PERMUTE", kqv.ne))
        self.g.expand(cur)
        if d.v_rot:  # the attention output rotated back before attn_output
            cur = self.hadamard(cur, self.v_rot)
        return self.op("attn_out", "MUL_MAT", (d.hidden, t), _w("wo", width, d.hidden), cur)

    def ffn(self, x: Tensor, width: int = 0) -> Tensor:
        """``build_ffn`` (LLM_FFN_SILU, LLM_FFN_PAR): up, gate, ``ggml_swiglu_split``, down."""
        d, n = replace(self.d, ffn=width or self.d.ffn), x.ne[1]
        up = self.op("ffn_up", "MUL_MAT", (d.ffn, n), _w("up", d.hidden, d.ffn), x)
        gate = self.op("ffn_gate", "MUL_MAT", (d.ffn, n), _w("gate", d.hidden, d.ffn), x)
        act = self.op("ffn_swiglu", "GLU", (d.ffn, n), gate, up)
        return self.op("ffn_out", "MUL_MAT", (d.hidden, n), _w("down", d.ffn, d.hidden), act)

    def mamba2(self, x: Tensor, il: int) -> Tensor:
        """``llm_build_mamba_base::build_mamba2_layer`` (src/models/mamba-base.cpp), one state
        snapshot (``n_rs_seq`` 0): the conv states gathered (``build_rs``), the in-projection
        split by views, the conv input concatenated and its last columns copied back,
        ``ggml_ssm_conv`` + bias + SiLU, dt made contiguous and biased, the SSM states gathered
        by ``ggml_ssm_scan`` (``build_rs`` with ``get_ssm_rows``), the new states copied back, y + x·D,
        ``ggml_swiglu_split`` by the contiguous z, the grouped RMS norm and the out-projection."""
        d, ns = self.d, self.d.streams
        n, (d_inner, d_state, groups, heads) = d.tokens // ns, d.ssm
        xbc_w, head_dim = d_inner + 2 * groups * d_state, d_inner // heads
        d_in_proj = d_inner + xbc_w + heads
        conv = _view("conv", self.rs(il, d.d_conv * xbc_w), "RESHAPE", (d.d_conv, xbc_w, ns))
        zx = self.op("zxBCdt", "MUL_MAT", (d_in_proj, d.tokens), _w("ssm_in", d.hidden, d_in_proj), x)
        zx = _view("zxBCdt", zx, "RESHAPE", (d_in_proj, n, ns))
        z = _view("z", zx, "VIEW", (head_dim, heads, n, ns))
        xbc = _view("xBC", zx, "VIEW", (xbc_w, n, ns))
        dt = _view("dt", zx, "VIEW", (heads, n, ns))
        xbc_t = _view("xBC_t", xbc, "TRANSPOSE", (n, xbc_w, ns))
        conv_x = self.op("conv_x", "CONCAT", (d.d_conv + n, xbc_w, ns), conv, xbc_t)
        last = _view("last_conv", conv_x, "VIEW", (d.d_conv, xbc_w, ns))
        r_all = _w(f"cache_r_l{il} (snap)", d.d_conv * xbc_w, ns)
        self.g.expand(_into("cpy", "CPY", last, _view("r (view)", r_all, "VIEW", r_all.ne)))
        xbc = self.op("xBC", "SSM_CONV", (xbc_w, n, ns), conv_x, _w("conv1d", d.d_conv + 1, xbc_w))
        xbc = self.op("xBC", "ADD", xbc.ne, xbc, _w("conv1d_b", xbc_w))
        xbc = self.op("xBC", "UNARY", xbc.ne, xbc)  # ggml_silu
        xs = _view("x", xbc, "VIEW", (head_dim, heads, n, ns))
        b = _view("B", xbc, "VIEW", (d_state, groups, n, ns))
        c = _view("C", xbc, "VIEW", (d_state, groups, n, ns))
        dt = self.op("dt", "ADD", dt.ne, self.op("dt", "CONT", dt.ne, dt), _w("dt_b", heads))
        a = _w("ssm_a", 1, heads)
        y_len = prod(xs.ne) + d_state * d_inner * ns  # ggml_ssm_scan: y, then the final states

        def scan(states: Tensor) -> Tensor:
            ssm = _view("ssm", states, "RESHAPE", (d_state, head_dim, heads, ns))
            return self.op("y_ssm", "SSM_SCAN", (y_len,), ssm, xs, dt, a, b, c, self.copy_main)

        y_ssm = self.rs(il, d_state * d_inner, "s", scan)
        s_all = _w(f"cache_s_l{il} (snap)", d_state * d_inner, ns)
        states = _view("y_ssm (view)", y_ssm, "VIEW", (d_state * d_inner, ns, 1))
        self.g.expand(_into("cpy", "CPY", states, _view("s (view)", s_all, "VIEW", s_all.ne)))
        y = _view("y", y_ssm, "VIEW", xs.ne)
        y = self.op("y_add_d", "ADD", y.ne, y, self.op("xD", "MUL", xs.ne, xs, _w("ssm_d", 1, heads)))
        y = self.op("y", "GLU", y.ne, self.op("z", "CONT", z.ne, z), y)
        y = self.norm(_view("y", y, "RESHAPE", (d_inner // groups, groups, n, ns)), "ssm_norm")
        y = _view("y", y, "RESHAPE", (d_inner, d.tokens))
        return self.op("mamba_out", "MUL_MAT", (d.hidden, d.tokens), _w("ssm_out", d_inner, d.hidden), y)

    def moe(self, x: Tensor) -> Tensor:
        """``build_moe_ffn`` (src/llama-graph.cpp) as Granite calls it: softmax gating, the top
        ``n_expert_used`` (``ggml_argsort_top_k``: an argsort and a view), the weights gathered and
        normalised (sum, clamp, div), expanded; gate and up by ``ggml_mul_mat_id``, SwiGLU, down,
        weighted, expanded; each expert's view expanded and the views added one by one."""
        d, t = self.d, x.ne[1]
        n_exp, used, ff, _ = d.moe
        logits = self.op("ffn_moe_logits", "MUL_MAT", (n_exp, t), _w("gate_inp", d.hidden, n_exp), x)
        probs = self.op("ffn_moe_probs", "SOFT_MAX", logits.ne, logits)
        order = self.op("ffn_moe_argsort", "ARGSORT", (n_exp, t), probs, size=I32)
        top = _view("ffn_moe_topk", order, "VIEW", (used, t))
        w = self.op("ffn_moe_weights", "GET_ROWS", (1, used, t), _view("probs", probs, "RESHAPE", (1, n_exp, t)), top)
        w = _view("weights", w, "RESHAPE", (used, t))
        total = self.op("ffn_moe_weights_sum", "SUM_ROWS", (1, t), w)
        total = self.op("ffn_moe_weights_sum_clamped", "CLAMP", total.ne, total)
        w = self.op("ffn_moe_weights_norm", "DIV", w.ne, w, total)
        w = self.g.expand(_view("weights", w, "RESHAPE", (1, used, t)))
        cur = _view("cur", x, "RESHAPE", (d.hidden, 1, t))
        up = self.op("ffn_moe_up", "MUL_MAT_ID", (ff, used, t), _w("up_exps", d.hidden, ff, n_exp), cur, top)
        gate = self.op("ffn_moe_gate", "MUL_MAT_ID", (ff, used, t), _w("gate_exps", d.hidden, ff, n_exp), cur, top)
        act = self.op("ffn_moe_swiglu", "GLU", gate.ne, gate, up)
        w_down = _w("down_exps", ff, d.hidden, n_exp)
        down = self.op("ffn_moe_down", "MUL_MAT_ID", (d.hidden, used, t), w_down, act, top)
        experts = self.g.expand(self.op("ffn_moe_weighted", "MUL", down.ne, down, w))
        views = [self.g.expand(_view("expert", experts, "VIEW", (d.hidden, t))) for _ in range(used)]
        out = views[0]
        for v in views[1:]:
            out = self.g.expand(self.op("ffn_moe_out", "ADD", out.ne, out, v))
        return out if used > 1 else self.op("ffn_moe_out", "CONT", out.ne, out)

    def scaled(self, x: Tensor, on: bool) -> Tensor:
        """Granite's muP multipliers (``ggml_scale``), where the file sets them."""
        return self.op(x.name, "SCALE", x.ne, x) if on else x

    def granite_layer(self, il: int, last: bool, inp: Tensor, ins: tuple[Tensor, ...]) -> Tensor:
        """``llama_model_granite_hybrid::graph`` (src/models/granite-hybrid.cpp): a Mamba-2 or
        attention layer, then ``build_layer_ffn``: the residual scale, the residual add, the
        routed experts and the shared expert (``build_ffn``) added, the residual scale and add."""
        self.layer = il
        x = self.norm(inp, "attn_norm")
        cur = self.mamba2(x, il) if il in self.d.recurrent else self.attn(x, ins)
        res = inp
        if last:
            out_ids = ins[-1]
            cur = self.op("cur_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), cur, out_ids)
            res = self.op("inp_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), inp, out_ids)
        ffn_inp = self.op("ffn_inp", "ADD", cur.ne, self.scaled(cur, self.d.scales[1]), res)
        x = self.norm(ffn_inp, "ffn_norm")
        cur = self.moe(x) if self.d.moe[0] else self.ffn(x)  # no ffn_gate_inp: build_ffn
        if self.d.moe[0] and self.d.moe[3]:  # the shared expert
            cur = self.op("ffn_out", "ADD", cur.ne, cur, self.ffn(x, self.d.moe[3]))
        return self.op("l_out", "ADD", cur.ne, self.scaled(cur, self.d.scales[1]), ffn_inp)

    def lfm2_layer(self, il: int, last: bool, inp: Tensor, ins: tuple[Tensor, ...]) -> Tensor:
        """``llama_model_lfm2::graph``: the residual added first (``ggml_add(prev_cur, cur)``)."""
        self.layer = il
        x = self.norm(inp, "operator_norm")
        cur = self.shortconv(x, il) if il in self.d.recurrent else self.attn(x, ins)
        res = inp
        if last:
            out_ids = ins[-1]
            cur = self.op("cur_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), cur, out_ids)
            res = self.op("prev_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), inp, out_ids)
        cur = self.op("add", "ADD", cur.ne, res, cur)
        out = self.ffn(self.norm(cur, "ffn_norm"))
        return self.op("l_out", "ADD", cur.ne, cur, out)

    def layer_(self, il: int, last: bool, inp: Tensor, ins: tuple[Tensor, ...]) -> Tensor:
        if self.d.arch == "lfm2":
            return self.lfm2_layer(il, last, inp, ins)
        if self.d.arch == "granitehybrid":
            return self.granite_layer(il, last, inp, ins)
        self.layer = il
        cur = self.attn(self.norm(inp, "attn_norm"), ins)
        res = inp
        if last:  # ggml_get_rows(cur, inp_out_ids), ggml_get_rows(inpSA, inp_out_ids)
            out_ids = ins[-1]
            cur = self.op("attn_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), cur, out_ids)
            res = self.op("inp_rows", "GET_ROWS", (self.d.hidden, out_ids.ne[0]), inp, out_ids)
        ffn_inp = self.op("ffn_inp", "ADD", cur.ne, cur, res)
        x = self.norm(ffn_inp, "ffn_norm")
        out = self.moe(x) if self.d.moe[0] else self.ffn(x)  # qwen3moe: build_moe_ffn, no shared expert
        return self.op("l_out", "ADD", out.ne, out, ffn_inp)

    def build(self, layers: int) -> Graph:
        ins = self.inputs()
        cur = ins[0]
        if self.d.scales[0]:  # build_inp_embd: Granite's embedding multiplier, expanded
            cur = self.g.expand(self.scaled(cur, True))
        for il in range(layers):
            cur = self.layer_(il, il == layers - 1, cur, ins)
        self.layer = layers
        norm = self.norm(cur, "result_norm")
        norm.flags |= OUTPUT
        weight = _w("output", self.d.hidden, self.d.vocab)
        head = self.op("result_output", "MUL_MAT", (self.d.vocab, cur.ne[1]), weight, norm)
        head = self.scaled(head, self.d.scales[2])  # f_logit_scale: the scaled logits are the output
        head.flags |= OUTPUT
        self.g.expand(head)
        return self.g


def _state(g: Any, names: dict[int, str]) -> tuple:
    """The allocator's state at a layer's start, live tensors named by role, not by layer."""
    live = sorted((names[k], h.offset) for k, h in g.hash.items() if h.allocated and k in names)
    return tuple(map(tuple, g.alloc.blocks)), g.alloc.max_size, tuple(live)


def replay(d: Dense, layers: int | None = None, alignment: int = 32) -> int:
    """The buffer ggml-alloc reserves for one graph of ``d`` (``max_size``), over ``layers``
    layers (None: the first, as many middle layers as it takes the state to repeat, the last)."""
    if layers is not None or d.recurrent:  # LFM2's and Granite's layers differ from one another: all replayed
        return reserve(_Builder(d).build(layers or d.layers), alignment).alloc.max_size
    n = min(d.layers, 5)
    while True:
        size, seen = _bounded(d, n, alignment)
        # middle layers 1 .. n-2: the state before n-2 equal to the one before n-3 repeats thereafter
        if n == d.layers or seen[n - 2] == seen[n - 3]:
            return size
        n = min(d.layers, 2 * n)


def _bounded(d: Dense, n: int, alignment: int) -> tuple[int, dict[int, tuple]]:
    """The buffer of ``n`` layers and the allocator's state at each layer's start."""
    graph = _Builder(d).build(n)
    names = {id(t): t.name for t in (*graph.nodes, *graph.leafs)}
    seen: dict[int, tuple] = {}
    g = reserve(graph, alignment, on_layer=lambda layer, g: seen.setdefault(layer, _state(g, names)))
    return g.alloc.max_size, seen


def buffer(d: Dense, alignment: int = 32) -> int:
    """``llama_context::sched_reserve``: the prompt graph (every token an output) and the
    one-token-per-sequence graph are reserved; the buffer holds the larger."""
    pp = replay(d, alignment=alignment)
    tg = replay(replace(d, tokens=d.streams, outputs=d.streams), alignment=alignment)
    return max(pp, tg)
