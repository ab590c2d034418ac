"""The type llama.cpp's quantiser gives each tensor, keyed by its GGUF role.

Transcribed from ``src/llama-quant.cpp`` of ggml-org/llama.cpp (as vendored by
llama-cpp-python 0.3.36): ``tensor_get_category`` (the role of a tensor name),
``tensor_allows_quantization``, ``llama_ftype_get_default_type``, ``llama_tensor_get_type`` /
``llama_tensor_get_type_impl`` (the mix rules) and ``tensor_type_fallback``. One table of
rules serves a GGUF file (its own tensor names) and a transformers config (each tensor mapped
to the GGUF role llama.cpp's converter gives it: :mod:`paramcount.gguf.types`).

What a rule looks at (:class:`Facts`, :class:`Tensor`):

* the ftype (``Q4_K_M``) and its default type (Q4_K); ``pure`` (``llama-quantize --pure``):
  every quantisable tensor in the default type, no rule;
* the role (``output``, ``token_embd``, ``attn_v``, ``attn_qkv``, ``attn_kv_b``, ``attn_k``,
  ``attn_q``, ``attn_output``, ``ffn_up``, ``ffn_gate``, ``ffn_down``; ``*_exps`` and ``*_shexp``
  tensors share their dense role);
* the attn_v-like tensors' rank ``i`` of ``n`` in llama.cpp's order (by layer, then name), and
  for ffn tensors the layer (a dense model: the rank among ffn_down tensors, which is the
  layer) of ``n_layer``: ``use_more_bits(i, n)`` is ``i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2``;
* the model: its llama.cpp architecture, ``n_expert``, ``n_gqa`` (heads per KV head),
  whether it is a "70B" (llama with 80 layers and GQA, qwen2/deci/olmo with 80, jais2 with 68)
  and whether the output head is tied to the token embedding (no ``output.weight``: the token
  embedding then follows the output rule);
* for ``mxfp4_moe``, ggml's ``ne[2]``: every tensor stacked along it (the experts, and MLA's
  per-head attn_k_b and attn_v_b) MXFP4, the others Q8_0, the output head included.

Then the fallback for rows (``ne[0]``) that do not fill whole blocks: the 256-blocks IQ types
→ IQ4_NL, Q2_K/Q3_K/TQ* → Q4_0, Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, and F16 when even that
does not fit (a 32-block type included). The IQ1/IQ2/IQ3_XXS types need an importance matrix
in llama-quantize; the types are the same with one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DTYPES
from ..errors import ParamcountError

# llama_ftype_get_default_type
FTYPES = {
    "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q8_0": "Q8_0",
    "q2_k": "Q2_K", "q2_k_s": "Q2_K", "q3_k_s": "Q3_K", "q3_k_m": "Q3_K", "q3_k_l": "Q3_K",
    "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K", "q6_k": "Q6_K",
    "iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS", "iq2_s": "IQ2_XS", "iq2_m": "IQ2_S", "iq3_xxs": "IQ3_XXS",
    "iq3_xs": "IQ3_S", "iq3_s": "IQ3_S", "iq3_m": "IQ3_S", "iq1_s": "IQ1_S", "iq1_m": "IQ1_M",
    "iq4_nl": "IQ4_NL", "iq4_xs": "IQ4_XS", "tq1_0": "TQ1_0", "tq2_0": "TQ2_0",
    "mxfp4_moe": "MXFP4",  # LLAMA_FTYPE_MOSTLY_MXFP4_MOE: stacked experts MXFP4, the rest Q8_0
}  # fmt: skip
NEEDS_IMATRIX = frozenset({"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS"})
ROLES = (
    "output", "token_embd", "attn_qkv", "attn_kv_b", "attn_v", "attn_k", "attn_q", "attn_output",
    "ffn_up", "ffn_gate", "ffn_down", "other",
)  # fmt: skip
ATTN_V = frozenset({"attn_v", "attn_qkv", "attn_kv_b"})  # category_is_attn_v
_IQ2 = frozenset({"iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"})
_BY_NAME = (  # tensor_get_category: substring tests, in this order
    ("attn_qkv.weight", "attn_qkv"),
    ("attn_kv_b.weight", "attn_kv_b"),
    ("attn_v.weight", "attn_v"),
    ("attn_k.weight", "attn_k"),
    ("attn_q.weight", "attn_q"),
    ("attn_output.weight", "attn_output"),
    ("ffn_up", "ffn_up"),
    ("ffn_gate", "ffn_gate"),
    ("ffn_down", "ffn_down"),
)
# tensor_allows_quantization: names (substrings) never quantised
_NEVER = (
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
    "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
    "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
    "attn_rel_b.weight", ".position_embd", ".rel_pos", ".patch_embd", ".patch_merger",
)  # fmt: skip
_EXACT_NEVER = frozenset({"position_embd.weight", "token_types.weight"})
_FALLBACK = {
    **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"),
    **dict.fromkeys(("Q2_0", "Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
SEVENTY_B = {"llama": 80, "qwen2": 80, "deci": 80, "olmo": 80, "jais2": 68}  # load_hparams: LLM_TYPE_70B


def role(name: str) -> str:
    """``tensor_get_category`` of a GGUF tensor name."""
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    return next((r for part, r in _BY_NAME if part in name), "other")


def allows_quantization(name: str, n_dims: int) -> bool:
    """``tensor_allows_quantization`` (with llama-quantize's defaults)."""
    if n_dims < 2 or not name.endswith("weight"):
        return False
    return name not in _EXACT_NEVER and not any(part in name for part in _NEVER)


@dataclass(frozen=True)
class Facts:
    """What the rules read from the model (``qs.model``)."""

    arch: str  # llama.cpp's architecture name
    n_layer: int
    n_expert: int = 0
    n_gqa: int = 1  # n_head / n_head_kv of layer 0, in whole numbers as llama.cpp divides
    tied: bool = False  # no output.weight: the token embedding takes the output rule
    is_70b: bool = False

    @staticmethod
    def of(arch: str, n_layer: int, n_head: int, n_head_kv: int, n_expert: int = 0, tied: bool = False) -> Facts:
        seventy = SEVENTY_B.get(arch) == n_layer and (arch != "llama" or (n_expert != 8 and n_head != n_head_kv))
        return Facts(arch, n_layer, n_expert, n_head // max(n_head_kv, 1), tied, seventy)


@dataclass(frozen=True)
class Tensor:
    """One tensor as the rules see it: ``rank`` is its place, in llama.cpp's order (by layer,
    then name), among the tensors of its role (all attn_v-like ones together), of ``count``
    (for ffn roles llama.cpp takes ``n_layer`` as the count); ``layer`` its block index."""

    role: str
    ne0: int  # the row length: the input width of a matrix
    rank: int = 0
    count: int = 0
    layer: int = 0
    ne2: int = 1  # ggml's third dimension: the experts of a stacked tensor (MLA's heads for attn_k_b)


def use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(ftype: str, t: Tensor, facts: Facts, pure: bool = False) -> str:
    """The type ``llama_tensor_get_type`` gives a quantisable tensor under ``ftype``."""
    if ftype not in FTYPES:
        raise ParamcountError(
            f"{ftype!r} is not a llama.cpp file type; choose one of: {', '.join(FTYPES)}", field="dtype"
        )
    default = FTYPES[ftype]
    chosen = default if pure else _impl(ftype, default, t, facts)
    return fallback(chosen, t.ne0)


def fallback(qtype: str, ne0: int) -> str:
    """``tensor_type_fallback``: the type rows of ``ne0`` values can be stored in."""
    block = DTYPES[qtype].elements
    if ne0 % block == 0:
        return qtype
    other = _FALLBACK.get(qtype, qtype if block <= 32 else None)
    if other is None:
        raise ParamcountError(f"llama.cpp defines no fallback type for {qtype}", field="dtype")
    return other if ne0 % DTYPES[other].elements == 0 else "F16"


def _impl(ftype: str, qtype: str, t: Tensor, f: Facts) -> str:
    """``llama_tensor_get_type_impl``, branch by branch."""
    r = t.role
    if r == "output" or (f.tied and r == "token_embd"):
        return "Q8_0" if ftype == "mxfp4_moe" else _output(ftype, qtype, t, f)
    if ftype == "mxfp4_moe":
        return _mxfp4_moe(t, f)
    if r == "token_embd":
        return _token_embd(ftype, qtype)
    if ftype in _IQ2:
        return _iq2(ftype, qtype, t, f)
    if r in ATTN_V:
        return _attn_v(ftype, qtype, t, f)
    if r == "attn_k":
        return "Q8_0" if f.n_expert == 8 else {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(ftype, qtype)
    if r == "attn_q":
        return {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(ftype, qtype)
    if r == "ffn_down":
        return _ffn_down(ftype, qtype, t, f)
    if r == "attn_output":
        return _attn_output(ftype, qtype, f)
    if r == "attn_qkv":  # never reached: attn_qkv is attn_v-like; kept as llama.cpp has it
        return qtype
    if r in ("ffn_gate", "ffn_up") and ftype == "iq3_xs" and f.n_layer // 8 <= _layer(t, f) < 7 * f.n_layer // 8:
        return "IQ3_XXS"
    return qtype


def _output(ftype: str, qtype: str, t: Tensor, f: Facts) -> str:
    if f.arch == "falcon" or t.ne0 % DTYPES[qtype].elements:
        return "Q8_0"
    if ftype in ("iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
        return "Q5_K"
    return qtype if qtype == "Q8_0" else "Q6_K"


def _mxfp4_moe(t: Tensor, f: Facts) -> str:
    """MoE tensors MXFP4, other tensors (the token embedding too) Q8_0: any tensor with
    ``ne[2] > 1`` is "MoE", so MLA's 3-D attn_k_b and attn_v_b are MXFP4 as well, except on
    bailingmoe3, where only the ffn roles are."""
    moe = t.ne2 > 1 and (f.arch != "bailingmoe3" or t.role in ("ffn_up", "ffn_gate", "ffn_down"))
    return "MXFP4" if moe else "Q8_0"


def _token_embd(ftype: str, qtype: str) -> str:
    if ftype in ("iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"):
        return "Q2_K"
    if ftype in ("iq2_s", "iq2_m", "iq3_xxs"):
        return "IQ3_S"
    if ftype in ("tq1_0", "tq2_0"):
        return "Q4_K"
    return qtype


def _iq2(ftype: str, qtype: str, t: Tensor, f: Facts) -> str:
    """The IQ1/IQ2 ftypes' own branch (the attn_v, attn_k, ffn_down, attn_output rules)."""
    s_or_m = ftype in ("iq2_s", "iq2_m")
    if t.role in ATTN_V:
        if f.n_gqa >= 4 or f.n_expert >= 4:
            return "Q4_K"
        return "IQ3_S" if s_or_m else "Q2_K"
    if t.role == "attn_k" and f.n_expert == 8:
        return "Q4_K"
    if t.role == "ffn_down":  # the counter of ffn_down tensors, not the layer, against n_layer
        return ("IQ3_S" if s_or_m else "Q2_K") if t.rank < f.n_layer // 8 else qtype
    if t.role == "attn_output":
        if f.n_expert == 8:
            return "Q5_K"
        return {"iq1_s": "IQ2_XXS", "iq1_m": "IQ2_XXS", "iq2_s": "IQ3_S", "iq2_m": "IQ3_S"}.get(ftype, qtype)
    return qtype


def _attn_v(ftype: str, qtype: str, t: Tensor, f: Facts) -> str:
    i, n, gqa4 = t.rank, t.count, f.n_gqa >= 4
    if ftype == "q2_k":
        qtype = "Q4_K" if gqa4 else "Q3_K"
    elif ftype == "q2_k_s" and gqa4:
        qtype = "Q4_K"
    elif ftype == "iq3_xxs":
        qtype = "Q4_K" if gqa4 else "IQ3_S"  # without an importance matrix
    elif (ftype in ("iq3_xs", "iq3_s") and gqa4) or ftype == "iq3_m":
        qtype = "Q4_K"
    elif ftype == "q3_k_m":
        qtype = "Q5_K" if i < 2 else "Q4_K"
    elif ftype == "q3_k_l" or (ftype in ("iq4_nl", "iq4_xs") and gqa4):
        qtype = "Q5_K"
    elif ftype in ("q4_k_m", "q5_k_m") and use_more_bits(i, n):
        qtype = "Q6_K"
    elif ftype == "q4_k_s" and i < 4:
        qtype = "Q5_K"
    if f.is_70b and qtype in ("Q3_K", "Q4_K"):
        qtype = "Q5_K"
    return "Q8_0" if f.n_expert == 8 else qtype


def _layer(t: Tensor, f: Facts) -> int:
    """``layer_info``: with experts, the block index in the name; else the tensor's rank."""
    return t.layer if f.n_expert > 1 else t.rank


def _ffn_down(ftype: str, qtype: str, t: Tensor, f: Facts) -> str:
    i, n, falcon = _layer(t, f), f.n_layer, f.arch == "falcon"
    if ftype == "q2_k":
        return "Q3_K"
    if ftype == "q2_k_s":
        return "Q4_K" if i < n // 8 else qtype
    if ftype == "iq3_xxs":  # without an importance matrix
        return "Q4_K" if i < n // 8 else "Q3_K"
    if ftype == "q3_k_m":
        return "Q5_K" if i < n // 16 else "Q4_K" if not falcon or use_more_bits(i, n) else "Q3_K"
    if ftype == "iq3_m" and (i < n // 8 or (f.n_expert == 8 and use_more_bits(i, n))):
        return "Q4_K"
    if ftype == "iq3_m":
        return qtype
    if ftype == "q3_k_l":
        return "Q4_K" if falcon else "Q5_K"
    if ftype == "q4_k_m":
        if falcon:
            return "Q6_K" if i < n // 16 else "Q5_K" if use_more_bits(i, n) else "Q4_K"
        return "Q6_K" if use_more_bits(i, n) else qtype
    if i < n // 8 and ftype in ("iq4_nl", "iq4_xs"):  # without an importance matrix
        return "Q5_K"
    if ftype == "q5_k_m" and use_more_bits(i, n):
        return "Q6_K"
    if ftype == "q4_k_s" and not falcon and i < n // 8:
        return "Q5_K"
    return qtype


_EIGHT_EXPERTS_Q5_K = frozenset(
    {"q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq3_s", "iq3_m", "iq4_xs"}
)


def _attn_output(ftype: str, qtype: str, f: Facts) -> str:
    if f.arch == "falcon":
        return "Q4_K" if ftype == "q3_k_l" else qtype
    if f.n_expert == 8:
        return "Q5_K" if ftype in _EIGHT_EXPERTS_Q5_K else qtype
    return {"q2_k": "Q3_K", "iq3_xxs": "IQ3_S", "q3_k_m": "Q4_K", "q3_k_l": "Q5_K", "iq3_m": "Q4_K"}.get(ftype, qtype)
