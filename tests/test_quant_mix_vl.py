"""Image+text composites planned as llama.cpp serves them: two files, held to llama.cpp's converter.

Oracle: tests/fixtures/llamacpp_mmproj.json, recorded by benchmarks/record_converter.py: the
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
from paramcount.cli import main
from paramcount.dtypes import DTYPES
from paramcount.memory import gguf_types as gg
from paramcount.memory.weights import weights

gguf = pytest.importorskip("gguf")
FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_mmproj.json").read_text())
MODELS = FIXTURE["models"]
PLANNED = [m for m, v in MODELS.items() if "class" in v.get("text", {}) and "class" in v.get("mmproj", {})]


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
    name = name.replace("model.language_model.", "model.").replace("model.text_model.", "model.")
    name = re.sub(r"^model\.(visual|vision_tower|multi_modal_projector)\.", r"\1.", name)
    if model_type == "gemma3":  # a SigLIP tower: vision_tower.vision_model. in the Hub's files
        name = name.replace("vision_tower.", "vision_tower.vision_model.")
    return name.replace("_weight", ".weight")  # Gemma3VisionModel.filter_tensors (mm_input_projection_weight)


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
    return None


def plan_tensors(w, config: dict, arch: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """The plan's rows, one GGUF tensor each: {GGUF name: (shape, type)} (a tied head: none)."""
    n = 200
    text_map = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), n)
    mm_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.MMPROJ, n)
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
            for gname, shape in _gguf(name, r.shape, config, text_map, mm_map):
                assert gname not in out, gname
                out[gname] = (shape, r.format)
    return out


def _gguf(name: str, shape: tuple[int, ...], config: dict, text_map, mm_map) -> list[tuple[str, tuple[int, ...]]]:
    if fixed := converter_renames(name, config):
        return [(fixed, shape)]
    if name.endswith("experts.gate_up_proj"):  # Qwen3VLMoeTextModel: split into gate and up halves
        half = (shape[0], shape[1] // 2, *shape[2:])
        base = name.removesuffix(".gate_up_proj")
        return [(text_map.get_name(f"{base}.{p}_proj.weight", (".weight",)), half) for p in ("gate", "up")]
    if name.endswith("experts.down_proj"):
        name += ".weight"
    tmap = text_map if name.startswith(("model.layers.", "model.embed_tokens", "model.norm", "lm_head")) else mm_map
    gname = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
    assert gname is not None, name
    return [(gname, shape)]


# --- llama-quantize's types for the language model (src/llama-quant.cpp) ----------------------


def _more_bits(i: int, n: int) -> bool:  # use_more_bits
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _fits(qtype: str, ne0: int) -> str:  # tensor_type_fallback, for these types
    if ne0 % DTYPES[qtype].elements == 0:
        return qtype
    return {"Q4_K": "Q5_0", "Q6_K": "Q8_0"}.get(qtype, "F16") if ne0 % 32 == 0 else "F16"


def quantised(ftype: str, text: dict, config: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """The language-model file after llama-quantize: tensor_allows_quantization (2-D or more,
    a weight, no norm, no router), then llama_tensor_get_type_impl's q4_k_m/q4_0 branches for
    this file (no 8-expert, 70B or Falcon condition holds here): the output rule (Q6_K, or Q8_0
    for rows that are no whole blocks of the default type; a tied token_embd takes it), attn_v
    and ffn_down in Q6_K on use_more_bits layers under q4_k_m; then the fallback."""
    default = {"q4_k_m": "Q4_K", "q4_0": "Q4_0"}[ftype]
    n_layer = 1 + max(int(m[1]) for name in text if (m := re.match(r"blk\.(\d+)\.", name)))
    tied = "output.weight" not in text
    out = {}
    for name, (shape, stored) in text.items():
        if len(shape) < 2 or "_norm" in name or "ffn_gate_inp" in name:
            out[name] = (shape, stored)
            continue
        ne0, layer = shape[-1], int(m[1]) if (m := re.match(r"blk\.(\d+)\.", name)) else 0
        if name == "output.weight" or (tied and name == "token_embd.weight"):
            t = "Q8_0" if ne0 % DTYPES[default].elements else "Q6_K"
        elif ftype == "q4_k_m" and (".attn_v." in name or ".ffn_down" in name) and _more_bits(layer, n_layer):
            t = "Q6_K"
        else:
            t = default
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
    assert {k: v for k, v in got.items() if k.startswith(("v.", "mm."))} == mmproj
    assert {k: v for k, v in got.items() if not k.startswith(("v.", "mm."))} == text
    assert w.bytes == _bytes(text) + _bytes(mmproj)
    assert {r.role for r in w.rows if r.format in ("BF16", "F16")} == {"not quantised"}
    assert rec["mmproj"]["class"] in w.term().assumption and not w.term().estimate


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
    assert {k: v for k, v in got.items() if k.startswith(("v.", "mm."))} == expand(want)


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


@pytest.mark.parametrize("name", ["Qwen/Qwen3.6-35B-A3B"])
def test_a_composite_whose_files_are_not_both_planned_is_refused(name, capsys):
    assert main(["memory", name, "--dtype", "q4_k_m"]) == 2
    err = capsys.readouterr().err.strip()
    assert "qwen3_5_moe_text" in err and "mmproj file is not modelled here yet" in err and "\n" not in err
    assert "has no mix here" in gg.not_stated("gemma4", {})  # gemma4_text itself is refused
    for mt in ("llama4", "qwen3_5"):
        assert "not modelled here yet" in gg.not_stated(mt, {})


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
