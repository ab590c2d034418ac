"""Image+text composites planned as llama.cpp serves them: two files, held to llama.cpp's converter.

Oracle: tests/fixtures/llamacpp_mmproj.json, recorded by tools/record_converter.py: the
tensors llama.cpp's own ``convert_hf_to_gguf.py`` classes (llama-cpp-python 0.3.36) write for
each config with ``--outtype auto``, the language model and the ``--mmproj`` file (again from
an F16 checkpoint), or the converter's refusal. The plan names its rows as transformers does;
here they are mapped to GGUF names through gguf-py's tensor_mapping after the converter's own
renames (listed below, each from its class), and llama-quantize's type for each
language-model tensor under q4_k_m and q4_0 is derived from llama-quant.cpp's rules on the
recorded names and shapes, not from paramcount's tables.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.dtypes import DTYPES
from paramcount.gguf import types as gg
from paramcount.memory.weights.schemes import weights

from .gguf_files import name_map

gguf = pytest.importorskip("gguf")
FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_mmproj.json").read_text())
MODELS = FIXTURE["models"]
PLANNED = [m for m, v in MODELS.items() if "class" in v.get("text", {}) and "class" in v.get("mmproj", {})]
CUTS_VOCAB = {"Gemma4Model"}  # gemma.py: Gemma3Model's subclasses that keep its modify_tensors


def load(name: str, **overrides) -> paramcount.Model:
    config = MODELS[name]["config"] or dict(paramcount.load(name).config)
    return paramcount.load({**config, **overrides})


def expand(entries: list) -> dict[str, tuple[tuple[int, ...], str]]:
    """The fixture's grouped tensors, one name each: {name: (shape, type)}."""
    out = {}
    for name, shape, dtype, blocks in entries:
        for i in _blocks(blocks):
            out[name.format(i) if i is not None else name] = (tuple(shape), dtype)
    return out


def _blocks(spec: str) -> list[int | None]:
    if not spec:
        return [None]
    if "-" in spec:
        a, b = spec.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(i) for i in spec.split(",")]


# --- the plan's rows under llama.cpp's names ---------------------------------------------------


def checkpoint_name(name: str, model_type: str) -> str:
    """A transformers name as the converter sees it before gguf-py maps it: ModelBase.filter_tensors
    strips ``language_model.``, LlamaModel.filter_tensors ``text_model.`` (SmolVLM); the Hub's files
    keep the towers at the top (``visual.``, ``vision_tower.``, ``multi_modal_projector.``; Qwen3-VL's
    ``model.visual.`` is renamed so by Qwen3VLVisionModel.filter_tensors)."""
    if model_type == "gemma4":
        return gemma4_name(name)
    name = name.replace("model.language_model.", "model.").replace("model.text_model.", "model.")
    name = re.sub(r"^(language_model\.)(model\.|lm_head)", r"\2", name)  # Llama 4's older layout
    name = re.sub(r"^model\.(visual|vision_tower|multi_modal_projector)\.", r"\1.", name)
    if model_type == "gemma3":  # a SigLIP tower: vision_tower.vision_model. in the Hub's files
        name = name.replace("vision_tower.", "vision_tower.vision_model.")
    if model_type == "llama4" and name.endswith("positional_embedding_vlm"):  # Llama4VisionModel.filter_tensors
        name += ".weight"
    return name.replace("_weight", ".weight")  # Gemma3VisionModel.filter_tensors (mm_input_projection_weight)


def gemma4_name(name: str) -> str:
    """Gemma 4's names as Gemma4Model and Gemma4VisionAudioModel rename them: ``.weight`` after
    layer_scalar, position_embedding_table, per_dim_scale and fused experts (filter_tensors); the
    encoder as ``vision_model.model.``, the audio tower as ``conformer.``, ``.linear.`` dropped
    (modify_tensors)."""
    name = name.replace("model.language_model.", "model.")
    if name.endswith(("layer_scalar", "position_embedding_table", "per_dim_scale")) or (
        ".experts." in name and not name.endswith(".weight")
    ):
        name += ".weight"
    if name.startswith("model.audio_tower."):
        return name.replace("model.audio_tower.", "conformer.").replace(".linear.", ".")
    return name.replace("model.vision_tower.encoder.", "vision_model.model.").replace(".linear.weight", ".weight")


_PATCH = {"weight": "v.patch_embd.weight", "weight.1": "v.patch_embd.weight.1", "bias": "v.patch_embd.bias"}
_MERGER = {"linear_fc1": "mm.0", "linear_fc2": "mm.2", "norm": "v.post_ln"}
_DEEPSTACK = {"linear_fc1": "fc1", "linear_fc2": "fc2", "norm": "norm"}


def converter_renames(name: str, config: dict) -> str | None:
    """A name the converter writes without gguf-py's mapping, or None: qwenvl.py and qwen3vl.py
    modify_tensors yield V_ENC_EMBD_PATCH's ``.weight`` and ``.weight.1`` (the Conv3D's frames)
    and ``.bias``; Qwen3VLVisionModel the merger as mm.0/mm.2/v.post_ln and each deepstack merger
    as v.deepstack.{its layer in deepstack_visual_indexes}."""
    if m := re.fullmatch(r"visual\.patch_embed\.proj\.(weight|weight\.1|bias)", name):
        return _PATCH[m[1]]
    if m := re.fullmatch(r"visual\.merger\.(linear_fc1|linear_fc2|norm)\.(weight|bias)", name):
        return f"{_MERGER[m[1]]}.{m[2]}"
    if m := re.fullmatch(r"visual\.deepstack_merger_list\.(\d+)\.(\w+)\.(weight|bias)", name):
        layer = config["vision_config"]["deepstack_visual_indexes"][int(m[1])]
        return f"v.deepstack.{layer}.{_DEEPSTACK[m[2]]}.{m[3]}"
    if name == "multi_modal_projector.linear_1.weight" and config["model_type"] == "llama4":
        return "mm.model.fc.weight"  # Llama4VisionModel.modify_tensors: V_MMPROJ_FC
    if name == "rope_freqs.weight":  # generate_extra_tensors: ROPE_FREQS, named by the converter
        return name
    if m := re.fullmatch(r"model\.layers\.(\d+)\.router\.(scale|per_expert_scale)", name):
        key = "ffn_gate_inp" if m[2] == "scale" else "ffn_down_exps"  # Gemma4Model.modify_tensors
        return f"blk.{m[1]}.{key}.scale"
    return None


def plan_tensors(w, config: dict, arch: str, names=None) -> dict[str, tuple[tuple[int, ...], str]]:
    """The plan's rows, one GGUF tensor each: {GGUF name: (shape, type)} (a tied head: none).
    ``names`` maps a row's checkpoint name and shape to the GGUF tensors (default: a composite's)."""
    n = 200
    text_map = name_map(getattr(gguf.MODEL_ARCH, arch.upper().replace("-", "_")), n)
    mm_map = name_map(gguf.MODEL_ARCH.MMPROJ, n)
    names = names or (lambda name, shape: _gguf(name, shape, config, text_map, mm_map))
    out = {}
    for r in w.rows:
        if r.role == "tied":
            continue
        m = re.search(r"\.(\d+)(?:–(\d+))?\.", r.name)
        layers = range(int(m[1]), int(m[2] or m[1]) + 1) if m else [None]
        assert r.count % len(layers) == 0
        for i in layers:
            name = r.name if i is None else r.name[: m.start()] + f".{i}." + r.name[m.end() :]
            name = checkpoint_name(name, config["model_type"])
            for gname, shape in names(name, r.shape):
                assert gname not in out, gname
                out[gname] = (shape, r.format)
    return out


MMPROJ = ("v.", "mm.", "a.")  # the mmproj file's names: vision, projector, audio
_SUFFIXES = (".weight", ".bias", ".input_max", ".input_min", ".output_max", ".output_min")


def _gguf(name: str, shape: tuple[int, ...], config: dict, text_map, mm_map) -> list[tuple[str, tuple[int, ...]]]:
    if fixed := converter_renames(name, config):
        return [(fixed, shape)]
    if config["model_type"].startswith("qwen3_5") and not name.startswith(("visual.", "model.visual.")):
        from .test_quant_mix_hybrid import to_gguf  # the hybrid file's renames, splits and MTP layers

        return to_gguf(config["text_config"]["model_type"], name, shape, config["text_config"])
    if name.endswith("experts.gate_up_proj") and config["model_type"] == "qwen3_vl_moe":  # split in halves
        half = (shape[0], shape[1] // 2, *shape[2:])
        base = name.removesuffix(".gate_up_proj")
        return [(text_map.get_name(f"{base}.{p}_proj.weight", (".weight",)), half) for p in ("gate", "up")]
    if name.endswith("experts.down_proj"):
        name += ".weight"
    text = name.startswith(("model.layers.", "model.embed_tokens", "model.norm", "lm_head", "model.per_layer"))
    gname = (text_map if text else mm_map).get_name(name, try_suffixes=_SUFFIXES)
    assert gname is not None, name
    return [(gname, shape)]


# --- llama-quantize's types for the language model (src/llama-quant.cpp) ----------------------


def _more_bits(i: int, n: int) -> bool:  # use_more_bits
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _fits(qtype: str, ne0: int) -> str:  # tensor_type_fallback, for these types
    if ne0 % DTYPES[qtype].elements == 0:
        return qtype
    return {"Q4_K": "Q5_0", "Q6_K": "Q8_0"}.get(qtype, "F16") if ne0 % 32 == 0 else "F16"


# tensor_allows_quantization: names never quantised (those these files hold)
_KEPT = ("_norm.weight", "ffn_gate_inp.weight", "per_layer_model_proj", "ssm_conv1d")
_ATTN_V = ("attn_qkv.weight", "attn_kv_b.weight", "attn_v.weight")  # category_is_attn_v


def _n_dims(shape: tuple[int, ...]) -> int:  # ggml_n_dims: trailing ne of 1 do not count
    ne = list(reversed(shape))
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return len(ne)


def _block_of(name: str) -> int:
    m = re.match(r"blk\.(\d+)\.", name)
    return int(m[1]) if m else -1


def quantised(ftype: str, text: dict, config: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """The language-model file after llama-quantize: tensor_allows_quantization (2-D or more,
    a weight, none of the names it keeps, which stay as the converter wrote them), then
    llama_tensor_get_type_impl's q4_k_m/q4_0 branches for these files (no 8-expert, 70B or
    Falcon condition holds here): the output rule (Q6_K, or Q8_0 for rows that are no whole
    blocks of the default type; a tied file's token embeddings, token_embd and
    per_layer_token_embd, take it), and under q4_k_m Q6_K for attn_v-like tensors (attn_v,
    attn_qkv, attn_kv_b) on use_more_bits of their counter, and for ffn_down on use_more_bits
    of its layer (with experts, the block in its name; else its counter), in llama.cpp's order
    (by block, then name); then the fallback."""
    default = {"q4_k_m": "Q4_K", "q4_0": "Q4_0"}[ftype]
    n_layer = 1 + max(_block_of(name) for name in text)
    n_expert = max((shape[0] for name, (shape, _) in text.items() if "_exps." in name), default=0)
    tied = "output.weight" not in text
    n_wv = sum(any(k in name for k in _ATTN_V) for name in text)
    out, i_wv, i_down = {}, 0, 0
    for name in sorted(text, key=lambda n: (_block_of(n), n)):
        shape, stored = text[name]
        if _n_dims(shape) < 2 or not name.endswith("weight") or any(k in name for k in _KEPT):
            out[name] = (shape, stored)
            continue
        t, ne0 = default, shape[-1]
        if name == "output.weight" or (tied and name in ("token_embd.weight", "per_layer_token_embd.weight")):
            t = "Q8_0" if ne0 % DTYPES[default].elements else "Q6_K"
        elif any(k in name for k in _ATTN_V):
            t, i_wv = ("Q6_K" if ftype == "q4_k_m" and _more_bits(i_wv, n_wv) else t), i_wv + 1
        elif "ffn_down" in name:
            i = _block_of(name) if n_expert > 1 else i_down
            t, i_down = ("Q6_K" if ftype == "q4_k_m" and _more_bits(i, n_layer) else t), i_down + 1
        out[name] = (shape, _fits(t, ne0))
    return out


def _bytes(tensors: dict[str, tuple[tuple[int, ...], str]]) -> int:
    return sum(math.prod(s) // DTYPES[t].elements * DTYPES[t].bytes for s, t in tensors.values())


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0"])
@pytest.mark.parametrize("name", PLANNED)
def test_both_files_tensor_by_tensor(name, ftype):
    """Every tensor of both files, named, shaped and typed as the converter and llama-quantize
    write them; the plan's bytes are the two files' tensor bytes."""
    rec = MODELS[name]
    m = load(name)
    config = dict(m.config)
    assert gg.arch_of(m.model_type) == rec["text"]["gguf_arch"]
    text = quantised(ftype, expand(rec["text"]["tensors"]), config)
    # --outtype auto follows the checkpoint: BF16 from bf16, else F16 (an F32 checkpoint, as
    # SmolVLM2-500M's, is written as from F16: the forced types read only the file type)
    mmproj = expand(rec["mmproj" if gg.mmproj_outtype(config) == "BF16" else "mmproj_f16"]["tensors"])
    w = weights(m, ftype)
    got = plan_tensors(w, config, rec["text"]["gguf_arch"])
    assert {k: v for k, v in got.items() if k.startswith(MMPROJ)} == mmproj
    assert {k: v for k, v in got.items() if not k.startswith(MMPROJ)} == text
    assert w.bytes == _bytes(text) + _bytes(mmproj)
    assert {r.role for r in w.rows if r.format in ("BF16", "F16")} == {"not quantised"}
    assert rec["mmproj"]["class"] in w.term().assumption
    # Gemma3Model.modify_tensors (inherited) keeps the tokenizer's rows of token_embd: recorded
    # with a tokenizer of vocab_size tokens, the plan's rows are the most it can hold
    cut = rec["text"]["class"] in CUTS_VOCAB
    assert w.term().estimate == cut and ("tokenizer's rows" in w.term().assumption) == cut


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", [*PLANNED, "google/gemma-3-4b-it"])
def test_the_mmproj_file(name, dtype):
    """--outtype auto from a BF16 and an F16 checkpoint: 2-D weights in the checkpoint's type,
    MmprojModel's patch embedding and patch merger F32 from BF16 but F16 from F16, where the class
    forces no type of its own (Gemma 3's and SmolVLM's embeddings: F32 either way)."""
    rec = MODELS[name]
    m = load(name, torch_dtype=dtype)
    arch = rec.get("text", {}).get("gguf_arch", "gemma3")
    got = plan_tensors(weights(m, "q4_k_m"), dict(m.config), arch)
    want = rec["mmproj_f16" if dtype == "float16" else "mmproj"]["tensors"]
    assert {k: v for k, v in got.items() if k.startswith(MMPROJ)} == expand(want)


def test_pure_keeps_the_mmproj_file_as_the_converter_writes_it():
    """llama-quantize --pure changes the language model only."""
    m = load("Qwen/Qwen2.5-VL-7B-Instruct")
    pure, mix = weights(m, "q4_k_m", pure=True), weights(m, "q4_k_m")
    vision = lambda w: [r for r in w.rows if r.name.startswith("model.visual.")]  # noqa: E731
    assert vision(pure) == vision(mix) and {r.format for r in vision(pure)} == {"F32", "BF16"}
    assert {r.format for r in pure.rows if r.role == "quantised"} == {"Q4_K"}
    assert "mmproj file" in pure.term().assumption


# Composites the converter refuses (recorded), and those whose language model has no mix here.
REFUSED = {
    "llava-hf/llava-1.5-7b-hf": "LlavaVisionModel writes pixtral towers only",
    "google/paligemma-3b-pt-224": "no class for PaliGemmaForConditionalGeneration",
    "internvl": "no class for InternVLForConditionalGeneration",
    "llava_onevision": "no class for LlavaOnevisionForConditionalGeneration",
    "mllama": "no class for MllamaForConditionalGeneration",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_converter_refuses_is_refused_in_one_line(name):
    rec = MODELS[name]
    assert "error" in rec["mmproj"]  # llama.cpp's converter cannot write the mmproj file
    with pytest.raises(ParamcountError, match=REFUSED[name]) as e:
        weights(load(name), "q4_k_m")
    assert "\n" not in str(e.value) and "use a single GGUF type such as q4_k" in str(e.value)


def test_composite_configs_the_converter_would_write_otherwise_are_refused():
    """A text or vision model type the converter class does not take, a temporal patch the
    Conv3D split does not handle, or llama3 rope scaling (LlamaModel.generate_extra_tensors adds
    rope_freqs, which the plan does not hold)."""
    pixtral = MODELS["llava-pixtral"]["config"]
    llama3 = {"rope_type": "llama3", "factor": 8.0}
    cases = [
        ({**pixtral, "text_config": {**pixtral["text_config"], "model_type": "qwen2"}}, "text_config.model_type"),
        ({**pixtral, "vision_config": {"model_type": "siglip_vision_model"}}, "pixtral towers only"),
        ({**pixtral, "text_config": {**pixtral["text_config"], "rope_scaling": llama3}}, "rope_freqs"),
        ({**dict(load("Qwen/Qwen2-VL-7B-Instruct").config), "vision_config": {"temporal_patch_size": 3}}, "temporal"),
    ]
    for config, why in cases:
        with pytest.raises(ParamcountError, match=why):
            weights(paramcount.load(config), "q4_k_m")


def test_a_gguf_model_with_its_mmproj_keeps_the_projector_as_stored(tmp_path):
    """A folder of a language model's GGUF and its mmproj: the type re-plans the language
    model's file (llama-quantize is run on it); the mmproj, a file of its own, keeps its types
    and stays out of the language model's mix (its attn_v and ffn_down tensors would shift the
    language model's use_more_bits positions)."""
    from .test_gguf import LLAMA, META, Q, write

    projector = [
        ("v.patch_embd.weight", (64, 3, 14, 14), Q.F16),
        *[(f"v.blk.{i}.attn_v.weight", (64, 64), Q.F16) for i in range(4)],
        *[(f"v.blk.{i}.ffn_down.weight", (64, 256), Q.F16) for i in range(4)],
        ("mm.0.weight", (256, 64), Q.F16),
        ("mm.0.bias", (256,), Q.F32),
    ]
    for d in ("lm", "both"):
        (tmp_path / d).mkdir()
    write(tmp_path / "lm" / "m.gguf", LLAMA, meta=META)
    write(tmp_path / "both" / "m.gguf", LLAMA, meta=META)
    write(tmp_path / "both" / "mmproj-m-f16.gguf", projector, arch="clip")
    alone, both = (weights(paramcount.load(tmp_path / d), "q4_k_m") for d in ("lm", "both"))
    assert [(r.name, r.format) for r in both.rows if not r.name.startswith(("v.", "mm."))] == [
        (r.name, r.format) for r in alone.rows
    ]
    stored = {r.name: r.format for r in both.rows if r.name.startswith(("v.", "mm."))}
    assert stored == {
        "v.patch_embd.weight": "F16", "v.blk.0–3.attn_v.weight": "F16", "v.blk.0–3.ffn_down.weight": "F16",
        "mm.0.weight": "F16", "mm.0.bias": "F32",
    }  # fmt: skip
    assert both.bytes == alone.bytes + sum(math.prod(s) * (4 if t == Q.F32 else 2) for _, s, t in projector)
    assert "mmproj file beside it is kept as it stores its tensors" in both.term().assumption


def test_a_llama4_vision_tower_other_than_gelu_is_refused_as_the_converter_asserts():
    """llama4.py Llama4VisionModel.set_gguf_parameters: assert hparams["hidden_act"] == "gelu"."""
    cls = "Llama4ForConditionalGeneration"
    assert gg.not_stated("llama4", {"model_type": "llama4"}) is None  # the default tower is GELU
    silu = paramcount.load({"model_type": "llama4", "vision_config": {"hidden_act": "silu"}}, model_class=cls)
    with pytest.raises(ParamcountError, match="hidden_act 'gelu', not 'silu'"):
        weights(silu, "q4_k_m")
