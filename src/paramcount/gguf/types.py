"""Which GGUF type each tensor gets, as llama.cpp's ``llama-quantize`` decides it.

The rules themselves are :mod:`paramcount.gguf.mix` (one table keyed by GGUF tensor
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
from ..slots import Slot
from . import hybrid
from . import mix as qm

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
    **dict.fromkeys(("q_proj", "query", "q"), "attn_q"),  # not MLA's q_b_proj: attn_q_b, role "other"
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
    # Families whose converter writes other tensors than transformers builds: the file's tensors
    # come from gguf/layout.py (RULES), each read in the converter (conversion/*.py).
    "deepseek_v2": "deepseek2", "deepseek_v3": "deepseek2",  # deepseek.py DeepseekV2Model
    "deepseek_v32": "deepseek32",  # deepseek.py DeepseekV32Model(DeepseekV2Model), MTP layers kept
    "glm_moe_dsa": "glm-dsa",  # glm.py GlmMoeDsaModel(DeepseekV2Model), MTP layers kept
    "glm4_moe": "glm4moe",  # glm.py Glm4MoeModel (MTP layers kept)
    "glm4_moe_lite": "deepseek2",  # glm.py Glm4MoeLiteModel(DeepseekV2Model), MTP layers kept
    "gpt_oss": "gpt-oss",  # gpt_oss.py GptOssModel
    "minimax_m2": "minimax-m2",  # minimax.py MiniMaxM2Model
    "llama4_text": "llama4",  # llama.py Llama4Model
    "phimoe": "phimoe",  # phi.py PhiMoeModel
    "apertus": "apertus",  # llama.py ApertusModel
    "gemma4_text": "gemma4",  # gemma.py Gemma4Model(Gemma3Model)
    "step3p5": "step35",  # step3.py Step35Model (MTP layers kept)
    "mimo_v2_flash": "mimo2",  # mimo.py MimoV2Model (its three MTP layers kept)
    # The model's own tensors, names mapped by gguf-py's tensor_mapping: mpt.py MPTModel (no lm_head:
    # tied), starcoder.py StarCoderModel (GPTBigCodeForCausalLM; wpe F32 as position_embd)
    "mpt": "mpt", "gpt_bigcode": "starcoder",
    # hunyuan.py HunYuanModel (HunYuanDenseV1ForCausalLM): query_layernorm/key_layernorm → attn_q_norm /
    # attn_k_norm (F32); modify_tensors drops lm_head.weight when tie_word_embeddings is set
    "hunyuan_v1_dense": "hunyuan-dense",
    # Hybrid and state-space families (mamba, mamba2, jamba, falcon_h1, granitemoehybrid,
    # nemotron_h, lfm2, qwen3_next, qwen3_5_text, qwen3_5_moe_text, kimi_linear): their
    # converters' renames, splits, added tensors and F32 rules are gguf_hybrid's
    **hybrid.ARCHS,
}  # fmt: skip
# head_count_kv as the converter writes it, where it is not the config's: DeepseekV2Model sets
# num_key_value_heads = 1 (MLA as MQA over the latent), StarCoderModel always writes 1. llama-quantize
# reads n_gqa = n_head / head_count_kv from the file.
KV_HEADS = {
    "deepseek_v2": 1,
    "deepseek_v3": 1,
    "deepseek_v32": 1,
    "glm_moe_dsa": 1,
    "glm4_moe_lite": 1,
    "gpt_bigcode": 1,
}
# Families refused by model_type, with the reason: no converter class (read in the converter).
_CONVERTER = "llama.cpp's converter (llama-cpp-python 0.3.36)"
NO_MIX = {
    "gpt_neo": f"{_CONVERTER} has no class for GPTNeoForCausalLM",
    "longcat_flash": f"{_CONVERTER} has no class for LongcatFlashForCausalLM",
}
# Image+text composites. llama.cpp serves one as two files: the language model (quantised by
# llama-quantize) and an mmproj file (vision tower and projector, written by
# ``convert_hf_to_gguf.py --mmproj`` and served as written; llama-quantize, run on the language
# model's file, does not see it). Read in the converter
# (conversion/*.py, llama-cpp-python 0.3.36): the language model is the text class registered for
# the composite's architecture (or its text_config's), ModelBase.filter_tensors strips
# ``language_model.`` and TextModel.filter_tensors drops the vision tower and projector (names with
# ``visual.``, ``vision_``, ``projector.``, ``model.connector.``); the mmproj file is the
# MmprojModel subclass's, its types set in ModelBase.prepare_tensors (see mmproj_tensors).


@dataclass(frozen=True)
class Composite:
    """How llama.cpp's converter writes one image+text family as two files.

    The language model holds every tensor outside ``towers``, in the mix of llama.cpp
    architecture ``arch``. The mmproj file holds the tensors under ``towers`` as the converter
    writes them (:func:`mmproj_tensors`): 1-D tensors F32, then the class's tensor_force_quant
    (``f16`` names F16, ``f32`` names F32, ``patch`` names, MmprojModel's patch embedding and
    patch merger, F32, or F16 when the file is F16), then the output type.
    """

    arch: str  # llama.cpp architecture of the language-model file
    converter: str  # the converter's classes (language model; mmproj)
    towers: tuple[str, ...]  # name prefixes of the vision tower and projector tensors
    f16: tuple[str, ...] = ()
    f32: tuple[str, ...] = ()
    patch: tuple[str, ...] = ()
    split_qkv: bool = False  # a fused qkv written as q, k, v (cut in three along its rows)
    split_patch: str = ""  # a Conv3D patch embedding written as two 2-D kernels (one per frame)
    # the text_config model types the language-model class converts (any if empty), the first
    # transformers' default; the vision_config model type the mmproj class requires, and the default
    texts: tuple[str, ...] = ()
    vision: tuple[str, str] = ("", "")
    # the text family whose file rules (gguf/layout.py RULES) the language model follows
    # (its text_config's model_type, this by default), and what the mmproj class writes beside
    # the towers' parameters (gguf_layout.TOWERS), in words
    text: str = ""
    adds: str = ""


_QWEN2_VL = Composite(
    "qwen2vl",
    "qwenvl.py Qwen2VLModel; Qwen2VLVisionModel",
    ("model.visual.",),
    patch=("patch_embed.proj.weight",),
    split_qkv=True,
    split_patch="patch_embed.proj.weight",
)
_TOWER_PROJECTOR = ("model.vision_tower.", "model.multi_modal_projector.")
COMPOSITES = {
    # gemma.py Gemma3Model (registered for Gemma3ForConditionalGeneration: no lm_head, tied) and
    # Gemma3VisionModel: input_projection F16, anything under .embeddings. (patch and position
    # embeddings) F32
    "gemma3": Composite(
        "gemma3",
        "gemma.py Gemma3Model; Gemma3VisionModel",
        _TOWER_PROJECTOR,
        f16=("input_projection",),
        f32=(".embeddings.",),
    ),
    # qwenvl.py: the Conv3D patch embedding split into two kernels, each fused qkv (weight and
    # bias) cut into q, k, v; MmprojModel's patch rule
    "qwen2_vl": _QWEN2_VL,
    "qwen2_5_vl": _QWEN2_VL,
    # qwen3vl.py Qwen3VLTextModel(Qwen3Model) / Qwen3VLMoeTextModel(Qwen3MoeModel) and
    # Qwen3VLVisionModel: the Conv3D patch embedding split in two, qkv kept fused, the merger and
    # deepstack mergers renamed (mm.0/mm.2, v.deepstack.N); pos_embed is V_ENC_EMBD_POS, F32
    "qwen3_vl": Composite(
        "qwen3vl",
        "qwen3vl.py Qwen3VLTextModel; Qwen3VLVisionModel",
        ("model.visual.",),
        f32=("pos_embed",),
        patch=("patch_embed.proj.weight",),
        split_patch="patch_embed.proj.weight",
    ),
    "qwen3_vl_moe": Composite(
        "qwen3vlmoe",
        "qwen3vl.py Qwen3VLMoeTextModel; Qwen3VLVisionModel",
        ("model.visual.",),
        f32=("pos_embed",),
        patch=("patch_embed.proj.weight",),
        split_patch="patch_embed.proj.weight",
    ),
    # mistral3.py Mistral3Model (Ministral3Model(LlamaModel) for a mistral or ministral3 text
    # config) and llava.py LlavaVisionModel (a Pixtral tower; q/k permuted in place): MmprojModel's
    # patch rule for the patch convolution and the patch merger. Its [IMG_BREAK] row of the token
    # embedding is never written from transformers' layout: MmprojModel.filter_tensors drops every
    # language_model. name before modify_tensors would take it.
    "mistral3": Composite(
        "mistral3",
        "mistral3.py Mistral3Model; llava.py LlavaVisionModel",
        _TOWER_PROJECTOR,
        patch=("patch_conv.weight", "merging_layer.weight"),
        texts=("mistral", "ministral3"),
        vision=("pixtral", "pixtral"),
    ),
    # llama.py LlamaModel (registered for LlavaForConditionalGeneration) and LlavaVisionModel,
    # which writes Pixtral towers only (it raises for CLIP's: "Unsupported model type")
    "llava": Composite(
        "llama",
        "llama.py LlamaModel; llava.py LlavaVisionModel",
        _TOWER_PROJECTOR,
        patch=("patch_conv.weight", "merging_layer.weight"),
        texts=("llama", "mistral"),
        vision=("pixtral", "clip_vision_model"),
    ),
    # llama.py LlamaModel (text_config's VLlama3ForCausalLM; "text_model." stripped) and
    # smolvlm.py SmolVLMModel: anything under .embeddings. F32; the connector is mm.model.fc
    "idefics3": Composite(
        "llama",
        "llama.py LlamaModel; smolvlm.py SmolVLMModel",
        ("model.vision_model.", "model.connector."),
        f32=(".embeddings.",),
        texts=("llama",),
    ),
    "smolvlm": Composite(
        "llama",
        "llama.py LlamaModel; smolvlm.py SmolVLMModel",
        ("model.vision_model.", "model.connector."),
        f32=(".embeddings.",),
        texts=("llama",),
    ),
}


def _qwen3_5(arch: str, cls: str, text: str) -> Composite:
    """qwen.py's text class and qwen3vl.py Qwen3VLVisionModel (registered for
    Qwen3_5(Moe)ForConditionalGeneration), a Qwen3-VL tower as qwen3_vl's."""
    return replace(
        COMPOSITES["qwen3_vl"],
        arch=arch,
        converter=f"qwen.py {cls}; qwen3vl.py Qwen3VLVisionModel",
        texts=(text,),
        text=text,
    )


# The language models of these composites follow their text family's file rules
# (gguf_layout.RULES: text); their mmproj classes are registered for the composite's architecture.
COMPOSITES |= {
    # llama.py Llama4Model and llama4.py Llama4VisionModel: the patch embedding (a Linear over
    # 3·p² values) MmprojModel's patch rule, positional_embedding_vlm V_ENC_EMBD_POS (F32)
    "llama4": Composite(
        "llama4",
        "llama.py Llama4Model; llama4.py Llama4VisionModel",
        ("vision_model.", "multi_modal_projector."),
        f32=("positional_embedding_vlm",),
        patch=("patch_embedding.linear.weight",),
        texts=("llama4_text",),
        vision=("llama4_vision_model", "llama4_vision_model"),
        text="llama4_text",
    ),
    "qwen3_5": _qwen3_5("qwen35", "Qwen3_5TextModel", "qwen3_5_text"),
    "qwen3_5_moe": _qwen3_5("qwen35moe", "Qwen3_5MoeTextModel", "qwen3_5_moe_text"),
    # gemma.py Gemma4Model and Gemma4VisionAudioModel (vision and audio towers in one mmproj):
    # tensor_force_quant F32 for position_embedding_table and the audio tower's convolutions
    # (names with ".conv", or "_conv" and ".weight": subsample_conv_projection.*, depthwise_conv1d),
    # MmprojModel's patch rule for the patch embedding; the buffers it writes: gguf_layout.TOWERS
    "gemma4": Composite(
        "gemma4",
        "gemma.py Gemma4Model; Gemma4VisionAudioModel",
        ("model.vision_tower.", "model.embed_vision.", "model.audio_tower.", "model.embed_audio."),
        f32=("position_embedding_table", "subsample_conv_projection.", "depthwise_conv1d."),
        patch=("patch_embedder.input_proj.weight",),
        texts=("gemma4_text",),
        text="gemma4_text",
        adds="each clipped linear's input and output bounds (use_clipped_linears) and std_bias and std_scale"
        " (standardize), buffers the checkpoint holds, F32",
    ),
}
# Composites paramcount counts that llama.cpp's converter cannot write as these two files, or
# whose language model has no mix stated here.
_NO_CONVERTER = "llama.cpp's converter (llama-cpp-python 0.3.36) has no class for {}"
NOT_CONVERTED = {
    "paligemma": _NO_CONVERTER.format("PaliGemmaForConditionalGeneration"),
    "llava_onevision": _NO_CONVERTER.format("LlavaOnevisionForConditionalGeneration"),
    "mllama": _NO_CONVERTER.format("MllamaForConditionalGeneration"),
    "internvl": _NO_CONVERTER.format("InternVLForConditionalGeneration")
    + " (it converts OpenGVLab's own checkpoints: InternVisionModel with an llm_config)",
}
# convert_hf_to_gguf.py's default --outtype auto: the checkpoint's first 2-D tensor's dtype
# (bf16 -> BF16, f16 -> F16, anything else -> F16), all 2 bytes a value
_OUTTYPE = {"bfloat16": "BF16", "float16": "F16", "float32": "F16"}
# Families the mixes are stated for from a config: decoder-only, with the tensor roles mapped above.
MIX_FAMILIES = frozenset(ARCHS) | frozenset(COMPOSITES)


def arch_of(model_type: str) -> str:
    """The llama.cpp architecture of a family's (language-model) file."""
    c = COMPOSITES.get(model_type)
    return c.arch if c else ARCHS.get(model_type, model_type)


def in_mmproj(model_type: str, s: Slot) -> bool:
    """A composite's vision tower or projector tensor (the mmproj file's, not the language model's)."""
    c = COMPOSITES.get(model_type)
    return c is not None and (s.layer_path or s.rest).startswith(c.towers)


def mmproj_outtype(config: dict) -> str:
    """The mmproj file's type for 2-D weights under the default ``--outtype auto`` (by the
    config's torch_dtype; BF16 when it says none: BF16 and F16 take 2 bytes a value alike)."""
    return _OUTTYPE.get(str(config.get("torch_dtype") or config.get("dtype") or ""), "BF16")


def mmproj_tensors(model_type: str, s: Slot, outtype: str) -> list[tuple[str, tuple[int, ...], str]]:
    """The tensors (name, shape, type) the mmproj file holds for one copy of a slot, named as
    the slot with the converter's splits: a fused ``qkv`` as ``q``, ``k``, ``v`` (Qwen2VLVisionModel
    .modify_tensors), a Conv3D patch embedding as its two frames' kernels, the second
    ``….weight.1`` (V_ENC_EMBD_PATCH + ".weight.1")."""
    c = COMPOSITES[model_type]
    name, shape = s.name, tuple(int(d) for d in s.shape)
    if c.split_qkv and ".qkv." in f".{s.rest}":
        part = (shape[0] // 3, *shape[1:])
        pieces = [(name.replace(".qkv.", f".{x}."), part) for x in ("q", "k", "v")]
    elif c.split_patch and s.rest.endswith(c.split_patch):
        frame = (*shape[:2], *shape[3:])
        pieces = [(name, frame), (name + ".1", frame)]
    else:
        pieces = [(name, shape)]
    return [(n, sh, _mmproj_type(c, n, sh, outtype)) for n, sh in pieces]


def mmproj_said(model_type: str, outtype: str) -> str:
    """What the plan assumes of the mmproj file, in a phrase for the plan's note."""
    c = COMPOSITES[model_type]
    cls = c.converter.split("; ")[1]
    forced = [f"{', '.join(names)} {dtype}" for names, dtype in ((c.f16, "F16"), (c.f32, "F32")) if names]
    if c.patch:
        forced.append(f"{', '.join(c.patch)} {'F16' if outtype == 'F16' else 'F32'}")
    split = ["qkv as q, k, v"] * c.split_qkv + ["the Conv3D patch kernel per frame"] * bool(c.split_patch)
    return (
        f"{cls}, convert_hf_to_gguf.py --mmproj, default --outtype auto: {outtype} for 2-D weights, F32 for 1-D"
        + "".join(f"; {x}" for x in forced)
        + (f"; written split: {', '.join(split)}" if split else "")
        + (f"; plus {c.adds}" if c.adds else "")
    )


def _mmproj_type(c: Composite, name: str, shape: tuple[int, ...], outtype: str) -> str:
    """ModelBase.prepare_tensors: 1-D tensors (norms, biases) F32, whatever tensor_force_quant
    says; then the class's forced types; then the output type."""
    if len(shape) <= 1:
        return "F32"
    patch = "F16" if outtype == "F16" else "F32"  # MmprojModel.tensor_force_quant
    for marks, dtype in ((c.f16, "F16"), (c.f32, "F32"), (c.patch, patch)):
        if any(m in name for m in marks):
            return dtype
    return outtype


def not_stated(model_type: str, config: dict) -> str | None:
    """Why a mapped family's config has no mix here (the GGUF file would not hold its tensors)."""
    if model_type == "stablelm" and config.get("qk_layernorm"):
        # stablelm.py StableLMModel.modify_tensors is a generator that ``return``s the generator
        # _stack_qk_norm: the stacked norms are never written, their entries never consumed, and
        # prepare_tensors raises "Unprocessed norms"
        return (
            "llama.cpp's converter (llama-cpp-python 0.3.36) fails on StableLM's per-head q/k norms"
            " (StableLMModel never writes them and stops with 'Unprocessed norms')"
        )
    if model_type in NOT_CONVERTED:
        return NOT_CONVERTED[model_type]
    if model_type in COMPOSITES:
        return _composite_not_stated(model_type, config)
    return None


# Text models a composite's converter class writes, but as a file whose tensors are not stated here.
UNSTATED_TEXTS = {
    # mistral3.py Mistral3Model picks its inner Mistral4Model(DeepseekV2Model) for a mistral4
    # text_config (Mistral Small 4): llama.cpp architecture mistral4, with DeepseekV2Model's kv_b_proj
    # split and its own handling of the checkpoint's 3-D experts
    ("mistral3", "mistral4"): (
        "mistral3.py Mistral3Model converts a mistral4 text_config through Mistral4Model(DeepseekV2Model)"
        " (llama.cpp architecture mistral4), whose file's tensors are not stated here"
    ),
}


def _composite_not_stated(model_type: str, config: dict) -> str | None:
    """Why the converter cannot write this composite config as the two files planned."""
    c = COMPOSITES[model_type]
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    vision = config.get("vision_config") if isinstance(config.get("vision_config"), dict) else {}
    cls = c.converter.split("; ")
    kind = text.get("model_type", c.texts[0] if c.texts else "")
    if (model_type, kind) in UNSTATED_TEXTS:
        return UNSTATED_TEXTS[model_type, kind]
    if c.texts and kind not in c.texts:
        return f"text_config.model_type {kind!r} is not one {cls[0]} converts ({', '.join(c.texts)})"
    kind = vision.get("model_type", c.vision[1])
    if c.vision[0] and kind != c.vision[0]:
        return f"vision_config.model_type {kind!r}: {cls[1]} writes {c.vision[0]} towers only"
    if model_type == "llama4" and vision.get("hidden_act", "gelu") != "gelu":  # Llama4VisionModel asserts it
        return f"{cls[1]} converts only vision_config.hidden_act 'gelu', not {vision.get('hidden_act')!r}"
    if c.split_patch and vision.get("temporal_patch_size", 2) != 2:
        return f"{cls[1]} splits the Conv3D patch embedding only for vision_config.temporal_patch_size 2"
    if c.arch == "llama" or c.arch == "mistral3":
        return _llama3_rope(text, cls[0])
    return None


def _llama3_rope(text: dict, cls: str) -> str | None:
    """LlamaModel.generate_extra_tensors writes a rope_freqs table for llama3 rope scaling."""
    rope = text.get("rope_parameters") or text.get("rope_scaling") or {}
    rope = rope.get("full_attention", rope) if isinstance(rope, dict) else {}
    if str(rope.get("rope_type") or rope.get("type") or "").lower() == "llama3":
        return f"{cls} adds a rope_freqs tensor for llama3 rope scaling, which this plan does not hold"
    return None


def allowed(s: Slot, gguf: bool = False) -> bool:
    """Whether llama-quantize quantises this tensor at all (a GGUF file's: by its name)."""
    if gguf:
        return s.tie is None and qm.allows_quantization(s.rest, _n_dims(s.shape))
    if s.tie is not None or len(s.shape) < 2 or s.is_bias or s.kind == "norms" or hybrid.never_quantised(s):
        return False
    if s.file_type is not None:  # a tensor the layout says llama-quantize keeps as written
        return False
    if s.kind == "router":  # the converter's ffn_gate_inp (a mixtral-style ``gate``, granitemoe's
        # ``router``), ffn_gate_inp_shexp (qwen2moe's (1, n_embd) shared-expert gate: one ggml
        # dimension) and ERNIE 4.5's e_score_correction_bias (exp_probs_b.bias): F32, left alone
        return False
    return s.module not in _POSITIONS and s.module != "relative_attention_bias"


def unquantised(s: Slot) -> str:
    """The type convert_hf_to_gguf.py writes for a tensor llama-quantize leaves alone."""
    if s.file_type is not None:
        return s.file_type
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

    def of(self, s: Slot) -> str:
        """The role llama.cpp's quantiser sees for this slot."""
        if self.gguf:
            return qm.role(s.rest)
        if s.order == self.output:
            return "output"
        if s.order == self.token_embd:
            return "token_embd"
        if s.file_role is not None:  # the converter's name for it (gguf/layout.py)
            return s.file_role
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
    heads = text.get("num_attention_heads") or _count(text.get("n_head"), text.get("n_heads"))  # GPT-2 style, MPT
    kv = KV_HEADS.get(model_type) or text.get("num_key_value_heads") or heads
    embd = next((s for s in slots if token_embedding(s)), None)
    tied = output is None or output.tie is not None or (embd is not None and embd.tie is not None)
    arch = arch_of(model_type)
    facts = qm.Facts.of(arch, n_layer, int(heads), int(kv), n_expert, tied)
    if arch in _HYBRID:  # layer 0's n_gqa, as the converter writes the KV heads
        facts = replace(facts, n_gqa=hybrid.n_gqa(arch, slots, int(heads), int(kv)))
    if arch == "gemma4":  # head_count_kv per layer type: layer 0's q_proj rows over its k_proj rows
        facts = replace(facts, n_gqa=_layer0_gqa(slots))
    out = None if output is None or output.tie is not None else output.order
    return Roles(facts, False, out, embd.order if embd else None)


_HYBRID = frozenset(hybrid.ARCHS.values())


def _layer0_gqa(slots: Sequence[Slot]) -> int:
    """``llama_hparams::n_gqa(0)`` where a layer's heads and KV heads share its head size."""
    rows = {s.module: s.shape[0] for s in slots if s.layers and 0 in s.layers and s.module in ("q_proj", "k_proj")}
    return rows["q_proj"] // rows["k_proj"]


def _count(*values: Any) -> int:
    """The first positive integer among ``values`` (a config's other names for a head count), else 1."""
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0), 1)


def gguf_roles(meta: Any, slots: Sequence[Slot]) -> Roles:
    """The roles and facts of a GGUF file, from its metadata and tensor names."""
    heads = meta.per_layer("attention.head_count", 1)[0]  # llama_hparams::n_gqa(): layer 0's
    kv = meta.per_layer("attention.head_count_kv", heads)[0] or heads
    tied = not any(s.rest == "output.weight" for s in slots)
    n_layer, experts = meta.integer("block_count"), meta.integer("expert_count", 0, low=0)
    facts = qm.Facts.of(meta.arch, n_layer, heads, kv, experts, tied)
    return Roles(facts, True, None, None)
