"""Which GGUF type each tensor gets, as llama.cpp's ``llama-quantize`` decides it.

The rules themselves are :mod:`paramcount.memory.quant_mix` (one table keyed by GGUF tensor
role, transcribed from ``src/llama-quant.cpp``). This module maps a model's tensors to those
roles: a GGUF file's tensors by their own names; a transformers config's by the name
llama.cpp's converter (``convert_hf_to_gguf.py``) gives them (``v_proj`` → ``attn_v``,
``down_proj`` → ``ffn_down``, the input embeddings → ``token_embd``, the output head →
``output``), and the F32 rule of the converter for tensors llama-quantize leaves alone:

* Quantised: tensors of 2 or more dimensions whose name ends in ``weight``, except norms, the
  MoE router (``ffn_gate_inp``), positional and token-type embeddings and T5's relative
  attention bias (``tensor_allows_quantization``).
* Not quantised, as the converter writes them: 1-D tensors, biases, norms, routers, positional
  and token-type embeddings in F32; T5's relative attention bias in F16.

A llama.cpp file type (``q4_k_m``, ``q4_0``, ``q2_k``, ``iq4_xs``, …) is its mix: the rules per
role, then the fallback for rows that do not fill whole blocks. With ``pure``
(``llama-quantize --pure``), or for a type that is not a file type (``q4_k``), every
quantisable tensor is in one type, the fallback still applying.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..dtypes import DTYPES, GGML_TYPES
from ..records import replace
from . import gguf_hybrid as hybrid
from . import quant_mix as qm
from .slots import Slot

# Single types llama-quantize writes (F32/F16/BF16 and the integer types are not quant targets).
PURE = tuple(t.lower() for t in GGML_TYPES if DTYPES[t].elements > 1 and t != "Q8_K")
MIXES = qm.FTYPES  # llama.cpp file types, each a mix: name -> default type

_POSITIONS = frozenset({"wpe", "position_embeddings", "embed_positions", "pos_embed", "token_type_embeddings"})
# transformers module names -> the GGUF role llama.cpp's converter gives them (by component)
_ATTENTION = {
    **dict.fromkeys(("v_proj", "value", "v"), "attn_v"),
    **dict.fromkeys(("query_key_value", "c_attn", "qkv_proj", "Wqkv", "qkv"), "attn_qkv"),
    "kv_b_proj": "attn_kv_b",
    **dict.fromkeys(("k_proj", "key", "k"), "attn_k"),
    **dict.fromkeys(("q_proj", "query", "q", "q_b_proj"), "attn_q"),
    **dict.fromkeys(("o_proj", "out_proj", "dense", "c_proj", "o"), "attn_output"),
}
_FFN = {
    **dict.fromkeys(("down_proj", "fc2", "dense_4h_to_h", "c_proj", "fc_out", "w2", "wo"), "ffn_down"),
    **dict.fromkeys(("up_proj", "fc1", "dense_h_to_4h", "c_fc", "fc_in", "w3", "wi", "gate_up_proj"), "ffn_up"),
    **dict.fromkeys(("gate_proj", "w1"), "ffn_gate"),
}
# transformers model_type -> llama.cpp architecture (what the 70B and Falcon rules look at)
ARCHS = {
    "llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2", "qwen2_moe": "qwen2moe",
    "qwen3": "qwen3", "qwen3_moe": "qwen3moe", "gemma": "gemma", "gemma2": "gemma2", "gemma3_text": "gemma3",
    "phi": "phi2", "phi3": "phi3", "starcoder2": "starcoder2", "olmo": "olmo", "gpt2": "gpt2",
    "gpt_neox": "gptneox", "gptj": "gptj", "falcon": "falcon", "bloom": "bloom", "opt": "opt",
    # Read in llama.cpp's converter (conversion/*.py, as vendored by llama-cpp-python 0.3.36): each
    # tensor keeps its transformers shape and maps, through gguf-py's tensor_mapping, to the role
    # the tables above give; 1-D tensors, biases and norms (per-head q/k norms too) are F32.
    "granite": "granite",  # granite.py GraniteModel(LlamaModel): q/k permuted in place
    "olmo2": "olmo2", "olmo3": "olmo2",  # olmo.py Olmo2Model (both registered)
    "smollm3": "smollm3",  # llama.py SmolLM3Model(LlamaModel)
    "seed_oss": "seed_oss",  # olmo.py SeedOssModel: no modify_tensors
    "ernie4_5": "ernie4_5",  # ernie.py Ernie4_5Model: splits only a checkpoint's fused qkv/up_gate
    "exaone4": "exaone4",  # exaone.py Exaone4Model (adds llama3 rope_freqs, F32, as LlamaModel does)
    "cohere": "command-r",  # command_r.py CommandR2Model
    "cohere2": "cohere2",  # command_r.py Cohere2Model (drops only all-zero biases)
    "glm4": "glm4",  # glm.py Glm4Model: gate_up_proj stays one ffn_up of n_ff*2 rows
    "olmoe": "olmoe",  # olmo.py OlmoeModel: experts stacked into ffn_{gate,up,down}_exps, as Mixtral's
    # granite.py GraniteMoeModel(GraniteModel): input_linear split into ffn_gate_exps/ffn_up_exps,
    # output_linear → ffn_down_exps, router.layer → ffn_gate_inp (F32)
    "granitemoe": "granitemoe",
    # ernie.py Ernie4_5MoeModel: experts stacked into *_exps, shared_experts → *_shexp, the gate →
    # ffn_gate_inp and moe_statics.e_score_correction_bias → exp_probs_b.bias (both F32); MTP dropped
    "ernie4_5_moe": "ernie4_5-moe",
    # stablelm.py StableLMModel: biases and LayerNorm biases F32. With qk_layernorm its
    # modify_tensors `return`s the stacked per-head q/k norms from a generator: they never reach
    # the file (refused below, as the plan would count tensors the GGUF lacks).
    "stablelm": "stablelm",
    # mistral3.py Mistral3Model → Ministral3Model(LlamaModel) for a ministral3 text config (yarn
    # rope: no rope_freqs tensor); the Mistral3ForConditionalGeneration composite is not mapped here
    "ministral3": "mistral3",
    # Hybrid and state-space families (mamba, mamba2, jamba, falcon_h1, granitemoehybrid,
    # nemotron_h, lfm2, qwen3_next, qwen3_5_text, qwen3_5_moe_text, kimi_linear): their
    # converters' renames, splits, added tensors and F32 rules are gguf_hybrid's
    **hybrid.ARCHS,
}  # fmt: skip
# Image+text composites -> their language model's family. llama.cpp serves one as two files: the
# language model (quantised by llama-quantize) and an mmproj file (vision tower and projector,
# written by ``convert_hf_to_gguf.py --mmproj``, which llama-quantize leaves alone). Read in the
# converter (llama-cpp-python 0.3.36): gemma.py Gemma3Model is registered for
# Gemma3ForConditionalGeneration too; ModelBase.filter_tensors strips ``language_model.`` (so
# its tensors get gemma3_text's names) and TextModel.filter_tensors drops ``vision_*`` and
# ``*projector.*``; no lm_head is written (tied, as gemma3_text). The mmproj side is
# gemma.py Gemma3VisionModel(MmprojModel), its types in ModelBase.prepare_tensors (see mmproj_type).
COMPOSITES = {"gemma3": "gemma3_text"}
_MMPROJ = ("model.vision_tower.", "vision_tower.", "model.multi_modal_projector.", "multi_modal_projector.")
# convert_hf_to_gguf.py's default --outtype auto: the checkpoint's first 2-D tensor's dtype
# (bf16 -> BF16, f16 -> F16, anything else -> F16), all 2 bytes a value
_OUTTYPE = {"bfloat16": "BF16", "float16": "F16", "float32": "F16"}
# Families the mixes are stated for from a config: decoder-only, with the tensor roles mapped above.
MIX_FAMILIES = frozenset(ARCHS) | frozenset(COMPOSITES)


def in_mmproj(s: Slot) -> bool:
    """A composite's vision tower or projector tensor (the mmproj file's, not the language model's)."""
    return (s.layer_path or s.rest).startswith(_MMPROJ)


def mmproj_outtype(config: dict) -> str:
    """The mmproj file's type for 2-D weights under the default ``--outtype auto`` (by the
    config's torch_dtype; BF16 when it says none: BF16 and F16 take 2 bytes a value alike)."""
    return _OUTTYPE.get(str(config.get("torch_dtype") or config.get("dtype") or ""), "BF16")


def mmproj_type(s: Slot, outtype: str) -> str:
    """The type Gemma3VisionModel's mmproj file holds a tensor in: tensor_force_quant gives the
    projector's ``input_projection`` F16 and anything under ``.embeddings.`` (patch embedding
    weight and bias, position embedding) F32; prepare_tensors then gives 1-D tensors (norms,
    biases) F32 and the other 2-D weights (attention, MLP) the output type."""
    if "input_projection" in s.rest:
        return "F16"
    if ".embeddings." in f".{s.layer_path}.{s.rest}" or len(s.shape) <= 1 or s.is_bias:
        return "F32"
    return outtype


def not_stated(model_type: str, config: dict) -> str | None:
    """Why a mapped family's config has no mix here (the GGUF file would not hold its tensors)."""
    if model_type == "stablelm" and config.get("qk_layernorm"):
        return "llama.cpp's converter (llama-cpp-python 0.3.36) drops StableLM's per-head q/k norms"
    return hybrid.not_stated(model_type, config)


def converted(model_type: str, config: dict, found: Sequence[Slot]) -> list[Slot]:
    """The tensors of the GGUF file llama.cpp's converter writes from this config (``found``
    but for the hybrid families' splits and added tensors: :mod:`gguf_hybrid`)."""
    return hybrid.converted(model_type, config, found) if model_type in hybrid.ARCHS else list(found)


def allowed(s: Slot, gguf: bool = False) -> bool:
    """Whether llama-quantize quantises this tensor at all (a GGUF file's: by its name)."""
    if gguf:
        return s.tie is None and qm.allows_quantization(s.rest, _n_dims(s.shape))
    if s.tie is not None or len(s.shape) < 2 or s.is_bias or s.kind == "norms" or hybrid.never_quantised(s):
        return False
    if s.kind == "router":  # the converter's ffn_gate_inp (a mixtral-style ``gate``, granitemoe's
        # ``router``), ffn_gate_inp_shexp (qwen2moe's (1, n_embd) shared-expert gate: one ggml
        # dimension) and ERNIE 4.5's e_score_correction_bias (exp_probs_b.bias): F32, left alone
        return False
    return s.module not in _POSITIONS and s.module != "relative_attention_bias"


def unquantised(s: Slot) -> str:
    """The type convert_hf_to_gguf.py writes for a tensor llama-quantize leaves alone."""
    return "F16" if s.module == "relative_attention_bias" else "F32"


def ne0(s: Slot) -> int:
    """The row length ggml blocks run along: a linear layer's input width, else the last dim."""
    return s.in_out[0] if s.linear else s.shape[-1]


def _n_dims(shape: tuple[int, ...]) -> int:
    """``ggml_n_dims``: dimensions up to the last one longer than 1 (ne[] is PyTorch's reversed)."""
    ne = list(reversed(shape))
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return len(ne)


def fallback(qtype: str, s: Slot) -> str:
    """llama.cpp's replacement type when the rows do not fill whole blocks."""
    return qm.fallback(qtype, ne0(s))


def token_embedding(s: Slot) -> bool:
    return s.kind == "embeddings" and not s.linear and len(s.shape) == 2 and s.module not in _POSITIONS


@dataclass(frozen=True)
class Roles:
    """Each slot's GGUF role, and the model's facts the rules read."""

    facts: qm.Facts
    gguf: bool  # a GGUF file: its own tensor names
    output: int | None  # order of the output-head slot (a config)
    token_embd: int | None  # order of the token-embedding slot (a config)
    family: str = ""  # a config's model_type (the hybrid families' own roles)

    def of(self, s: Slot) -> str:
        """The role llama.cpp's quantiser sees for this slot."""
        if self.gguf:
            return qm.role(s.rest)
        if s.order == self.output:
            return "output"
        if s.order == self.token_embd:
            return "token_embd"
        if (own := hybrid.role(self.family, s)) is not None:
            return own
        if s.kind == "attention":
            return _ATTENTION.get(s.role, "other")
        if s.kind in ("feed_forward", "experts"):
            return _FFN.get(s.role, "other")
        return "other"


def config_roles(model_type: str, config: dict, slots: Sequence[Slot], n_expert: int, output: Slot | None) -> Roles:
    """The roles and facts of a model built from a transformers config."""
    layered = [s for s in slots if s.layers]
    n_layer = max((s.layers.stop for s in layered), default=0)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    heads = text.get("num_attention_heads") or 1
    kv = text.get("num_key_value_heads") or heads
    embd = next((s for s in slots if token_embedding(s)), None)
    tied = output is None or output.tie is not None or (embd is not None and embd.tie is not None)
    arch = ARCHS.get(model_type, model_type)
    facts = qm.Facts.of(arch, n_layer, int(heads), int(kv), n_expert, tied)
    if model_type in hybrid.ARCHS:  # layer 0's n_gqa, as the converter writes the KV heads
        facts = replace(facts, n_gqa=hybrid.n_gqa(arch, slots, int(heads), int(kv)))
    out = None if output is None or output.tie is not None else output.order
    return Roles(facts, False, out, embd.order if embd else None, model_type)


def gguf_roles(meta: Any, slots: Sequence[Slot]) -> Roles:
    """The roles and facts of a GGUF file, from its metadata and tensor names."""
    heads = meta.get("attention.head_count", 1)
    kv = meta.get("attention.head_count_kv", heads)
    heads, kv = (v[0] if isinstance(v, list) else v for v in (heads, kv))
    tied = not any(s.rest == "output.weight" for s in slots)
    n_layer = meta.integer("block_count")
    facts = qm.Facts.of(meta.arch, n_layer, int(heads), int(kv or heads), int(meta.get("expert_count", 0) or 0), tied)
    return Roles(facts, True, None, None)
