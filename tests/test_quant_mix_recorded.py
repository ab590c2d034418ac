"""llama.cpp mixes from a config for language models whose converter writes tensors the counted
model lacks (Gemma 4's generated rope table and layer scalars, multi-token-prediction layers),
held to llama.cpp's own converter.

Oracle: tests/fixtures/llamacpp_mmproj.json, recorded by tools/record_converter.py (its
text-only entries): the tensors llama.cpp's ``convert_hf_to_gguf.py`` classes
(llama-cpp-python 0.3.36) write for each config with ``--outtype auto`` from a sparse BF16
checkpoint named as the published checkpoints name their tensors, with the checkpoint's buffers
and MTP layers. The plan's rows are mapped to GGUF names through gguf-py's tensor_mapping after
each converter's own renames (listed below, from its class); llama-quantize's type for each
tensor under q4_k_m and q4_0 is derived from llama-quant.cpp's rules on the recorded names and
shapes (test_quant_mix_vl.quantised), not from paramcount's tables.
"""

from __future__ import annotations

import math
import re

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.memory.weights.schemes import weights

from .gguf_files import name_map
from .test_quant_mix_vl import MODELS, _bytes, expand, gemma4_name, plan_tensors, quantised

gguf = pytest.importorskip("gguf")
TEXT_ONLY = [m for m, v in MODELS.items() if "class" in v.get("text", {}) and "mmproj" not in v]


def load(name: str) -> paramcount.Model:
    return paramcount.load(MODELS[name]["config"] or dict(paramcount.load(name).config))


T = gguf.MODEL_TENSOR
# The MTP layers' own tensors, which gguf-py's tensor_mapping maps (model.layers.{bid}.eh_proj, …)
# but the gguf package these tests run with (PyPI's 0.19.0) lacks for some architectures:
# named here from its TENSOR_NAMES, as the vendored mapping names them
NEXTN = {
    "eh_proj": T.NEXTN_EH_PROJ, "enorm": T.NEXTN_ENORM, "hnorm": T.NEXTN_HNORM,
    "shared_head.norm": T.NEXTN_SHARED_HEAD_NORM, "shared_head.head": T.NEXTN_SHARED_HEAD_HEAD,
}  # fmt: skip


def _mapped(tmap, name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    if m := re.fullmatch(rf"model\.layers\.(\d+)\.({'|'.join(map(re.escape, NEXTN))})\.weight", name):
        return [(gguf.TENSOR_NAMES[NEXTN[m[2]]].format(bid=int(m[1])) + ".weight", shape)]
    gname = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
    assert gname is not None, name
    return [(gname, shape)]


def gemma4(tmap, config: dict):
    """Gemma4Model: gemma4_name's renames; the router's scales by modify_tensors."""

    def names(name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if name == "rope_freqs.weight":
            return [(name, shape)]
        if m := re.fullmatch(r"model\.layers\.(\d+)\.router\.(scale|per_expert_scale)", name):
            return [(f"blk.{m[1]}.{'ffn_gate_inp' if m[2] == 'scale' else 'ffn_down_exps'}.scale", shape)]
        return _mapped(tmap, gemma4_name(name), shape)

    return names


_STEP35 = (
    (".mlp.gate.e_score_correction_bias", ".moe.router_bias.bias"),  # Step35Model.filter_tensors: + ".bias"
    (".mlp.gate.weight", ".moe.gate.weight"),
    (".mlp.shared_experts.", ".share_expert."),
    (".mlp.experts.", ".moe."),
)  # transformers' step3p7 conversion mapping, reversed: the checkpoint's names


def step35(tmap, config: dict):
    """Step35Model: the checkpoint's names (the plan's MTP rows carry the converter's own:
    shared_head.head for transformer.shared_head.output)."""

    def names(name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if name.startswith(("layers.", "embed_tokens.", "norm.")):  # Step3p7TextModel's, under model.
            name = "model." + name
        for old, new in _STEP35:
            name = name.replace(old, new)
        return [(name, shape)] if name == "rope_freqs.weight" else _mapped(tmap, name, shape)

    return names


def nemotron_h_moe(tmap, config: dict):
    """NemotronHModel (MoE): the checkpoint's ``backbone.`` names; modify_tensors' merged experts
    (``model.layers.{bid}.mlp.experts.{up,down}_proj.weight``), ``dt.bias``, ``A_log`` and ``D``
    as (n, 1), the gated norm per group, the convolution squeezed; the MTP block's own names
    (``_MTP_SPECIAL_RENAMES``: model.layers.{bid}.post_attention_layernorm, nextn)."""

    def names(name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if m := re.fullmatch(r"model\.layers\.(\d+)\.post_attention_layernorm\.weight", name):
            return [(gguf.TENSOR_NAMES[T.ATTN_POST_NORM].format(bid=int(m[1])) + ".weight", shape)]  # as NEXTN
        if m := re.fullmatch(r"model\.layers\.(\d+)\.mixer\.experts\.(up_proj|down_proj)", name):
            return _mapped(tmap, f"model.layers.{m[1]}.mlp.experts.{m[2]}.weight", shape)
        if not re.search(r"\.(eh_proj|enorm|hnorm|shared_head\.norm)\.weight$", name):
            name = re.sub(r"^model\.", "backbone.", name)
        name = name.replace("e_score_correction_bias", "e_score_correction.bias").replace(".dt_bias", ".dt.bias")
        if name.endswith(("mixer.A_log", "mixer.D")):
            shape = (math.prod(shape), 1)
        elif name.endswith("mixer.norm.weight"):
            shape = (config["n_groups"], math.prod(shape) // config["n_groups"])
        elif name.endswith("mixer.conv1d.weight"):
            shape = tuple(d for d in shape if d != 1)
        return _mapped(tmap, name, shape)

    return names


def mimo2(tmap, config: dict):
    """MimoV2Model: the checkpoint's attention_sink_bias (transformers' sinks; filter_tensors adds
    ``.weight``), its experts merged (``model.layers.{bid}.mlp.experts.{w}.weight``), the MTP
    layers renamed to ``model.layers.{n + i}`` (their final_layernorm: LAYER_OUT_NORM)."""

    def names(name: str, shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if m := re.fullmatch(r"model\.layers\.(\d+)\.final_layernorm\.weight", name):
            return [(gguf.TENSOR_NAMES[T.LAYER_OUT_NORM].format(bid=int(m[1])) + ".weight", shape)]  # as NEXTN
        name = name.replace("self_attn.sinks", "self_attn.attention_sink_bias.weight")
        name = name.replace("e_score_correction_bias", "e_score_correction.bias")
        return _mapped(tmap, name, shape)

    return names


NAMES = {"gemma4": gemma4, "step35": step35, "nemotron_h_moe": nemotron_h_moe, "mimo2": mimo2}


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0"])
@pytest.mark.parametrize("name", TEXT_ONLY)
def test_the_file_tensor_by_tensor(name, ftype):
    """Every tensor of the language-model file, named, shaped and typed as the converter and
    llama-quantize write them; the plan's bytes are the file's tensor bytes."""
    rec = MODELS[name]["text"]
    m = load(name)
    config = dict(m.config)
    arch = getattr(gguf.MODEL_ARCH, rec["gguf_arch"].upper())
    names = NAMES[rec["gguf_arch"]](name_map(arch, 200), config)
    want = quantised(ftype, expand(rec["tensors"]), config)
    w = weights(m, ftype)
    got = plan_tensors(w, config, rec["gguf_arch"], names)
    assert set(got) == set(want), (sorted(set(got) - set(want))[:6], sorted(set(want) - set(got))[:6])
    assert {k: (v, want[k]) for k, v in got.items() if v != want[k]} == {}
    assert w.bytes == _bytes(want)
    assert rec["class"] in w.term().assumption


def test_the_mtp_layers_and_what_else_the_file_adds_are_said():
    """The notes name what the file holds beyond the counted model, and where it is an upper bound."""
    step = weights(load("step3p5"), "q4_k_m").term()
    assert "3 multi-token-prediction layer(s) (layers.8…" in step.assumption and "--no-mtp" in step.assumption
    assert "lm_head as output" in step.assumption and not step.estimate
    mimo = weights(load("XiaomiMiMo/MiMo-V2-Flash"), "q4_k_m").term()
    assert "3 multi-token-prediction layers (model.mtp.layers.0–2, a count the converter fixes" in mimo.assumption
    nemotron = weights(load("nemotron_h-moe"), "q4_k_m").term()
    assert "MTP step (mtp.*, which transformers does not build) as block 8" in nemotron.assumption
    assert "router kept in BF16" in nemotron.assumption
    gemma = weights(load("gemma4-moe"), "q4_k_m").term()
    assert gemma.estimate and "tokenizer's rows" in gemma.assumption and "ffn_gate_up_exps" in gemma.assumption


@pytest.mark.parametrize(
    "name,change,field",
    [
        ("step3p5", {"num_mtp_layers": 1}, "num_mtp_layers"),
        ("step3p5", {"moe_layers_enum": None, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 5}, "mlp_layer_types"),
        ("nemotron_h-moe", {"num_nextn_predict_layers": 2}, "num_nextn_predict_layers"),
        ("nemotron_h-moe", {"mtp_layers_block_type": ["moe", "attention"]}, "num_nextn_predict_layers"),
        ("gemma4-moe", {"rope_parameters": {"full_attention": {"rope_type": "default"}}}, "rope_parameters"),
    ],
)
def test_configs_the_converter_writes_otherwise_are_refused(name, change, field):
    """An MTP count the converter does not write (Step35Model: num_nextn_predict_layers; NemotronHModel:
    one attention-and-MoE step), an MTP layer whose feed-forward the config does not give, a
    rope the converter asserts against (Gemma4Model: proportional)."""
    config = {**(MODELS[name]["config"] or {}), **change}
    with pytest.raises(ParamcountError, match="use a single GGUF type such as q4_k") as e:
        weights(paramcount.load({k: v for k, v in config.items() if v is not None}), "q4_k_m")
    assert e.value.field == field and "\n" not in str(e.value)


@pytest.mark.parametrize("name", [m for m in TEXT_ONLY if m != "gemma4-moe"])
def test_llama_cpp_does_not_load_the_mtp_blocks(name):
    """llama.cpp's runtime leaves the file's MTP blocks (those past num_hidden_layers) out of the
    model buffers unless asked (TENSOR_SKIP without load_mtp): their bytes, from the recording."""
    from paramcount.memory.runtimes.llamacpp.plan import loaded

    m = load(name)
    config = dict(m.config)
    want = quantised("q4_k_m", expand(MODELS[name]["text"]["tensors"]), config)
    first = config["num_hidden_layers"]
    mtp = {k: v for k, v in want.items() if (b := re.match(r"blk\.(\d+)\.", k)) and int(b[1]) >= first}
    w = weights(m, "q4_k_m")
    kept = loaded(m, w)
    assert mtp and w.bytes - kept.bytes == _bytes(mtp)
    assert f"from {first} on ({len(mtp):,} tensors" in kept.term().assumption
