"""Which GGUF type each tensor gets, as llama.cpp's ``llama-quantize`` decides it.

Transcribed from ``src/llama-quant.cpp`` of ggml-org/llama.cpp (main, 2025;
``tensor_allows_quantization``, ``llama_tensor_get_type_impl``, ``tensor_type_fallback``) and
the F32 rule of ``convert_hf_to_gguf.py``:

* Quantised: tensors of 2 or more dimensions whose name ends in ``weight``, except norms, the
  MoE router (``ffn_gate_inp``), positional and token-type embeddings and T5's relative
  attention bias. The token embedding and the output head are quantised too.
* Not quantised, as the converter writes them: 1-D tensors, biases, norms, routers, positional
  and token-type embeddings in F32; T5's relative attention bias in F16.
* A tensor whose rows (``ne[0]``, the input width) do not fill whole blocks falls back:
  Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0, Q2_K/Q3_K/TQ*→Q4_0, the 256-blocks IQ types→IQ4_NL, and
  to F16 when even that does not fit; other types have no fallback and are an error.

A single type name (``q4_0``, ``q4_k``) is ``llama-quantize --pure``: every quantised tensor
in that type. The mixes ``q4_k_s``, ``q4_k_m``, ``q5_k_s``, ``q5_k_m`` follow the per-tensor
rule of those ftypes (no importance matrix):

* ``output.weight`` (or the token embedding when the head is tied to it): Q6_K, or Q8_0 when
  its rows are not a multiple of 256 or the model is Falcon.
* the i-th of n ``attn_v`` / ``attn_qkv`` / ``attn_kv_b`` tensors: *_M: Q6_K when
  ``i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2``; Q4_K_S: Q5_K for the first 4. Then Q3_K/Q4_K
  becomes Q5_K in a "70B" model (llama architecture with 80 layers and grouped KV heads, or
  qwen2 with 80 layers); with 8 experts it is Q8_0.
* ``attn_k`` with 8 experts: Q8_0 (llama.cpp: "bumping this to Q8_0 trades just ~128MB").
  ``attn_output`` with 8 experts: Q5_K for Q4_K_S / Q4_K_M.
* ``ffn_down`` (also of experts and shared experts) of layer i: Q4_K_M: Q6_K under the same
  rule as attn_v (Falcon: Q6_K for i < n/16, Q5_K under the rule, else Q4_K); Q5_K_M: Q6_K
  under the rule; Q4_K_S: Q5_K for i < n/8 (not Falcon).
* Everything else quantised: the ftype's type (Q4_K or Q5_K). Then the fallback above.

llama.cpp's ``Q4_0``/``Q8_0``/``Q6_K`` ftypes differ from the single types only in
``output.weight`` (Q6_K for Q4_0) and, with 8 experts, attn_k/attn_v in Q8_0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..dtypes import DTYPES, GGML_TYPES
from ..errors import ParamcountError
from .slots import Slot

# Single types llama-quantize writes (F32/F16/BF16 and the integer types are not quant targets).
PURE = tuple(t.lower() for t in GGML_TYPES if DTYPES[t].elements > 1 and t != "Q8_K")
MIXES = {"q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K"}

_FALLBACK = {
    **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"),
    **dict.fromkeys(("Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
_POSITIONS = frozenset({"wpe", "position_embeddings", "embed_positions", "pos_embed", "token_type_embeddings"})
# Attention modules by llama.cpp category: attn_v-like (V, fused QKV, MLA's kv_b), attn_k, attn_output.
_ATTENTION = {
    **dict.fromkeys(("v_proj", "value", "v", "query_key_value", "c_attn", "qkv_proj", "Wqkv", "qkv"), "attn_v"),
    "kv_b_proj": "attn_v",
    **dict.fromkeys(("k_proj", "key", "k"), "attn_k"),
    **dict.fromkeys(("o_proj", "out_proj", "dense", "c_proj", "o"), "attn_output"),
}
_DOWN = frozenset({"down_proj", "fc2", "dense_4h_to_h", "c_proj", "fc_out", "w2", "wo"})
# Families llama.cpp converts under the llama architecture (what the 70B rule looks at).
_LLAMA_ARCH = frozenset({"llama", "mistral", "mixtral"})
# Families the mixes are stated for: decoder-only, with the tensor roles mapped above.
MIX_FAMILIES = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text"}
    | {"phi", "phi3", "starcoder2", "olmo", "gpt2", "gpt_neox", "gptj", "falcon", "bloom", "opt"}
)


def allowed(s: Slot) -> bool:
    """Whether llama-quantize quantises this tensor at all."""
    if s.tie is not None or len(s.shape) < 2 or s.is_bias or s.kind == "norms":
        return False
    if s.kind == "router" and s.module == "gate":  # ffn_gate_inp (the shared-expert gate is not)
        return False
    return s.module not in _POSITIONS and s.module != "relative_attention_bias"


def unquantised(s: Slot) -> str:
    """The type convert_hf_to_gguf.py writes for a tensor llama-quantize leaves alone."""
    return "F16" if s.module == "relative_attention_bias" else "F32"


def ne0(s: Slot) -> int:
    """The row length ggml blocks run along: a linear layer's input width, else the last dim."""
    return s.in_out[0] if s.linear else s.shape[-1]


def fallback(qtype: str, s: Slot) -> str:
    """llama.cpp's replacement type when the rows do not fill whole blocks."""
    n = ne0(s)
    if n % DTYPES[qtype].elements == 0:
        return qtype
    if qtype not in _FALLBACK:
        raise ParamcountError(
            f"{s.name}: rows of {n} values do not fill whole {qtype} blocks of {DTYPES[qtype].elements},"
            f" and llama.cpp has no fallback type for {qtype}",
            field="dtype",
        )
    other = _FALLBACK[qtype]
    return other if n % DTYPES[other].elements == 0 else "F16"


@dataclass(frozen=True)
class Facts:
    """What llama.cpp's mixes look at, for one model."""

    n_layer: int
    n_expert: int
    tied: bool  # no output.weight: the token embedding is quantised as the output
    falcon: bool
    is_70b: bool
    output: int | None  # order of the output-head slot
    token_embd: int | None  # order of the token-embedding slot

    @staticmethod
    def of(model_type: str, config: dict, slots: Sequence[Slot], n_expert: int, output: Slot | None) -> Facts:
        layered = [s for s in slots if s.layers]
        n_layer = max((s.layers.stop for s in layered), default=0)
        heads = config.get("num_attention_heads")
        kv = config.get("num_key_value_heads", heads)
        is_70b = n_layer == 80 and (
            (model_type in _LLAMA_ARCH and n_expert != 8 and heads != kv) or model_type == "qwen2"
        )
        embd = next((s for s in slots if token_embedding(s)), None)
        tied = output is None or output.tie is not None or (embd is not None and embd.tie is not None)
        out = None if output is None or output.tie is not None else output.order
        return Facts(n_layer, n_expert, tied, model_type == "falcon", is_70b, out, embd.order if embd else None)


def token_embedding(s: Slot) -> bool:
    return s.kind == "embeddings" and not s.linear and len(s.shape) == 2 and s.module not in _POSITIONS


def category(s: Slot, facts: Facts) -> str:
    """llama.cpp's tensor category (only those the mixes treat specially)."""
    if s.order == facts.output or (facts.tied and s.order == facts.token_embd):
        return "output"
    if s.kind == "attention":
        return _ATTENTION.get(s.role, "")
    if s.kind in ("feed_forward", "experts") and s.role in _DOWN:
        return "ffn_down"
    return ""


def more_bits(i: int, n: int) -> bool:
    """llama.cpp's ``use_more_bits``: the first and last eighth, and every third layer between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def mix_type(mix: str, s: Slot, facts: Facts, i: int, wv: tuple[int, int] = (0, 0)) -> str:
    """The type of slot ``s`` in layer ``i`` under a K-quant mix; ``wv`` is (rank, count)
    among the attn_v-like tensors, in llama.cpp's order (by layer, then name)."""
    base = MIXES[mix]
    cat = category(s, facts)
    if cat == "output":
        return "Q8_0" if facts.falcon or ne0(s) % 256 else "Q6_K"
    if cat == "attn_v":
        return _attn_v(mix, base, facts, *wv)
    if cat == "attn_k" and facts.n_expert == 8:
        return "Q8_0"
    if cat == "attn_output" and facts.n_expert == 8 and not facts.falcon and mix in ("q4_k_s", "q4_k_m"):
        return "Q5_K"
    if cat == "ffn_down":
        return _ffn_down(mix, base, facts, i)
    return base


def _attn_v(mix: str, qtype: str, facts: Facts, i: int, n: int) -> str:
    if mix in ("q4_k_m", "q5_k_m") and more_bits(i, n):
        qtype = "Q6_K"
    elif mix == "q4_k_s" and i < 4:
        qtype = "Q5_K"
    if facts.is_70b and qtype in ("Q3_K", "Q4_K"):
        qtype = "Q5_K"
    return "Q8_0" if facts.n_expert == 8 else qtype


def _ffn_down(mix: str, qtype: str, facts: Facts, i: int) -> str:
    n = facts.n_layer
    if mix == "q4_k_m" and facts.falcon:
        return "Q6_K" if i < n // 16 else "Q5_K" if more_bits(i, n) else "Q4_K"
    if mix in ("q4_k_m", "q5_k_m") and more_bits(i, n):
        return "Q6_K"
    if mix == "q4_k_s" and not facts.falcon and i < n // 8:
        return "Q5_K"
    return qtype
