"""llama.cpp mixes from a config for the hybrid and state-space families, tensor by tensor.

The expected side never asks paramcount's mix code. The counted model's tensors (renamed as the
published checkpoints name them) go through each converter's own steps, read in llama.cpp's
``conversion/*.py`` (llama-cpp-python 0.3.36): renames, splits, merged experts, added tensors.
gguf-py's tensor_mapping gives the GGUF names (constants' TENSOR_NAMES where the converter
formats a name itself). The types: the converter's F32 rule (``ModelBase.prepare_tensors``) and
llama-quantize's (``src/llama-quant.cpp``: ``tensor_allows_quantization``,
``tensor_get_category``, ``llama_tensor_get_type_impl`` for q4_k_m, q4_0 and iq4_xs without an
importance matrix, ``tensor_type_fallback``), written out below; the bytes: gguf-py's
GGML_QUANT_SIZES. The plan's rows are mapped to the same GGUF names and compared name by name
(elements and type), then in total bytes.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory.weights.schemes import weights
from paramcount.slots import slots

gguf = pytest.importorskip("gguf")
T = gguf.MODEL_TENSOR
DT_BIAS = ((r"\.dt_bias$", ".dt_proj.bias"),)  # Mamba2Model.filter_tensors, Qwen3Next/Kimi modify_tensors


@dataclass(frozen=True)
class Family:
    hub: str
    arch: str  # gguf.MODEL_ARCH member
    renames: tuple[tuple[str, str], ...] = ()  # transformers name -> the converter's input name
    kv_per_layer: bool = False  # head_count_kv written per layer, 0 for the recurrent ones
    mtp: bool = False  # _QwenMtpMixin: the checkpoint's mtp.* written as the last blocks


FAMILIES = {
    "mamba": Family("state-spaces/mamba-2.8b-hf", "MAMBA"),
    "mamba2": Family("mistralai/Mamba-Codestral-7B-v0.1", "MAMBA2", DT_BIAS),
    "jamba": Family("ai21labs/AI21-Jamba-1.5-Mini", "JAMBA", kv_per_layer=True),
    "falcon_h1": Family("tiiuae/Falcon-H1-7B-Instruct", "FALCON_H1", DT_BIAS),
    "granitemoehybrid": Family(
        "ibm-granite/granite-4.0-h-small",
        "GRANITE_HYBRID",
        (*DT_BIAS, (r"\.router\.weight$", ".router.layer.weight")),  # the checkpoint's router.layer
        kv_per_layer=True,
    ),
    "nemotron_h": Family(
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "NEMOTRON_H", ((r"^model\.", "backbone."), *DT_BIAS), kv_per_layer=True
    ),
    "lfm2": Family("LiquidAI/LFM2-1.2B", "LFM2", kv_per_layer=True),
    "qwen3_next": Family("Qwen/Qwen3-Next-80B-A3B-Instruct", "QWEN3NEXT", DT_BIAS, mtp=True),
    "qwen3_5_text": Family("Qwen/Qwen3.5-27B", "QWEN35", DT_BIAS, mtp=True),
    "qwen3_5_moe_text": Family("Qwen/Qwen3.5-35B-A3B", "QWEN35MOE", DT_BIAS, mtp=True),
    "kimi_linear": Family(
        "moonshotai/Kimi-Linear-48B-A3B-Instruct",
        "KIMI_LINEAR",
        (  # the checkpoint's (fla) names; ModelBase.filter_tensors: e_score_correction.bias
            (r"\.forget_gate\.(f_a_proj|f_b_proj|A_log)", r".\1"),
            (r"\.forget_gate\.dt_bias$", ".dt_proj.bias"),
            (r"\.mlp\.(gate|shared_experts)\.", r".block_sparse_moe.\1."),
            (r"\.e_score_correction_bias$", ".e_score_correction.bias"),
        ),
        kv_per_layer=True,
    ),
}
FTYPES = {"q4_k_m": "Q4_K", "q4_0": "Q4_0", "iq4_xs": "IQ4_XS"}


def _name(key: T, bid: int | None) -> str:
    return gguf.TENSOR_NAMES[key].format(bid=bid) + ".weight"


def _block(name: str) -> int | None:
    m = re.search(r"\.(\d+)\.", name)
    return int(m[1]) if m else None


def _pieces(fam: str, name: str, shape: tuple[int, ...], cfg: dict) -> list[tuple[str, str, tuple[int, ...]]]:
    """(part, name, shape) of what the converter writes for one tensor: a GGUF name where it
    formats one itself, else the name it maps through tensor_mapping."""
    bid = _block(name)
    if name.endswith("experts.gate_up_proj"):  # merged or fused experts, written as gate and up
        half = (shape[0], shape[1] // 2, shape[2])
        return [("gate", _name(T.FFN_GATE_EXP, bid), half), ("up", _name(T.FFN_UP_EXP, bid), half)]
    if name.endswith("experts.down_proj"):
        return [("", _name(T.FFN_DOWN_EXP, bid), shape)]
    if name.endswith("shared_mlp.input_linear.weight"):  # GraniteMoeModel: gate, up of the shared expert
        half = (shape[0] // 2, shape[1])
        return [("gate", _name(T.FFN_GATE_SHEXP, bid), half), ("up", _name(T.FFN_UP_SHEXP, bid), half)]
    if name.endswith("in_proj_qkvz.weight"):  # Qwen3NextModel.modify_tensors
        qkv = 2 * cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
        qkv += cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
        return [
            ("qkv", _name(T.ATTN_QKV, bid), (qkv, shape[1])),
            ("z", _name(T.ATTN_GATE, bid), (shape[0] - qkv, shape[1])),
        ]
    if name.endswith("kv_b_proj.weight"):  # KimiLinearModel.modify_tensors: split, k_b transposed
        heads, nope, v = cfg["num_key_value_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
        return [
            ("k_b", name.replace("kv_b_proj", "k_b_proj"), (heads, shape[1], nope)),
            ("v_b", name.replace("kv_b_proj", "v_b_proj"), (heads, v, shape[1])),
        ]
    if fam == "kimi_linear" and name.endswith("self_attn.conv1d.weight"):  # q_conv1d, k_conv1d, v_conv1d
        c = shape[0] // 3
        return [(p, name.replace(".conv1d", f".{p}_conv1d"), (c, shape[2])) for p in "qkv"]
    if name.startswith("mtp."):  # _QwenMtpMixin's remapper, at the first MTP block
        key = {"fc": T.NEXTN_EH_PROJ, "pre_fc_norm_embedding": T.NEXTN_ENORM, "pre_fc_norm_hidden": T.NEXTN_HNORM}
        return [("", _name(key.get(name.split(".")[1], T.NEXTN_SHARED_HEAD_NORM), cfg["num_hidden_layers"]), shape)]
    squeezed = tuple(d for d in shape if d != 1) if "conv" in name else shape  # the converters squeeze convs
    return [("", name, squeezed)]


@functools.cache
def _tensor_map(arch: str):
    return gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch), 100)


def to_gguf(fam: str, name: str, shape: tuple[int, ...], cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The GGUF tensors one transformers tensor (or one ``…[part]`` of it) becomes."""
    m = re.fullmatch(r"(.*)\[(\w+)\]", name)
    base, part = (m[1], m[2]) if m else (name, None)
    for pattern, repl in FAMILIES[fam].renames:
        base = re.sub(pattern, repl, base)
    tmap = _tensor_map(FAMILIES[fam].arch)
    out = []
    for tag, n, s in _pieces(fam, base, shape, cfg):
        if part is not None and tag != part:
            continue
        mapped = n if n.startswith("blk.") else tmap.get_name(n, try_suffixes=(".weight", ".bias"))
        assert mapped is not None, f"gguf-py maps no tensor {n!r} ({name})"
        out.append((mapped, s if part is None else shape))
    assert out, name
    return out


def per_layer(name: str) -> list[str]:
    """A row's name, its layer range expanded."""
    m = re.match(r"(.*\.layers\.)(\d+)(?:–(\d+))?(\..*)", name)
    if not m:
        return [name]
    return [f"{m[1]}{i}{m[4]}" for i in range(int(m[2]), int(m[3] or m[2]) + 1)]


def counted(model) -> list[tuple[str, tuple[int, ...]]]:
    """The counted model's tensors, one per layer (ties left out: the file stores one table)."""
    return [(n, s.shape) for s in slots(model.tree, model.model_type) if s.tie is None for n in per_layer(s.name)]


def mtp_tensors(model) -> list[tuple[str, tuple[int, ...]]]:
    """The checkpoint's MTP layer (``mtp.layers.0``: a full-attention decoder layer, the same
    modules as the model's) as the converter numbers it, and ``mtp.fc`` and its three norms."""
    cfg = model.config
    n, h = cfg["num_hidden_layers"], cfg["hidden_size"]
    full = cfg.get("full_attention_interval", 4) - 1  # a full-attention layer of the model
    prefix = f"model.layers.{full}."
    layer = [(f"model.layers.{n}.{name[len(prefix) :]}", s) for name, s in counted(model) if name.startswith(prefix)]
    norms = [(f"mtp.{m}.weight", (h,)) for m in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")]
    return [*layer, ("mtp.fc.weight", (h, 2 * h)), *norms]


def expected_file(fam: str, model) -> dict[str, tuple[int, ...]]:
    """The GGUF file's tensors: name → shape."""
    tensors = counted(model) + (mtp_tensors(model) if FAMILIES[fam].mtp else [])
    if fam == "kimi_linear":  # the routers' e_score_correction_bias buffers: exp_probs_b.bias
        tensors += [
            (n.replace(".weight", ".e_score_correction_bias"), (s[0],)) for n, s in tensors if ".mlp.gate." in n
        ]
    out = {}
    for name, shape in tensors:
        for g, s in to_gguf(fam, name, shape, model.config):
            assert g not in out, g
            out[g] = s
    return out


# --- llama-quantize (src/llama-quant.cpp) and the converter's F32 rule --------------------------
_NEVER = ("_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "shortconv.conv.weight")
_CATEGORY = (("attn_qkv.weight", "attn_v"), ("attn_kv_b.weight", "attn_v"), ("attn_v.weight", "attn_v"),
             ("attn_k.weight", "attn_k"), ("attn_q.weight", "attn_q"), ("attn_output.weight", "attn_output"),
             ("ffn_up", "ffn_up"), ("ffn_gate", "ffn_gate"), ("ffn_down", "ffn_down"))  # fmt: skip


def _n_dims(shape: tuple[int, ...]) -> int:  # ggml_n_dims: trailing ne of 1 do not count
    ne = list(reversed(shape))
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return len(ne)


def _quantised(name: str, shape: tuple[int, ...]) -> bool:  # tensor_allows_quantization
    return _n_dims(shape) >= 2 and name.endswith("weight") and not any(p in name for p in _NEVER)


def _category(name: str) -> str:  # tensor_get_category, attn_v-like ones together
    if name in ("output.weight", "token_embd.weight"):
        return name.split(".")[0]
    return next((c for part, c in _CATEGORY if part in name), "other")


def _more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _block_size(t: str) -> int:
    return gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t]][0]


def _fallback(t: str, ne0: int) -> str:  # tensor_type_fallback
    if ne0 % _block_size(t) == 0:
        return t
    t = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}.get(t, t)
    return t if ne0 % _block_size(t) == 0 else "F16"


@dataclass(frozen=True)
class Model:
    """What llama-quantize reads from the file's metadata."""

    n_layer: int  # block_count (n_layer_all)
    n_expert: int  # expert_count
    n_gqa: int  # layer 0's heads per KV head (0 without KV heads)
    tied: bool  # no output.weight


def _facts(fam: str, model, file: dict[str, tuple[int, ...]]) -> Model:
    blocks = {_block(n) for n in file} - {None}
    experts = [s[0] for n, s in file.items() if "_exps." in n]
    cfg = model.config
    heads, kv = cfg.get("num_attention_heads") or 0, cfg.get("num_key_value_heads") or 0
    if fam == "kimi_linear":  # set_gguf_parameters: MLA as MQA
        kv = 1
    if FAMILIES[fam].kv_per_layer and any(n.startswith(("blk.0.ssm_", "blk.0.shortconv.")) for n in file):
        kv = 0  # layer 0 is recurrent: its head_count_kv entry is 0
    return Model(max(blocks) + 1, experts[0] if experts else 0, heads // kv if kv else 0, "output.weight" not in file)


def _order(name: str) -> tuple[int, str]:  # llama_model_loader's weight_name_comparer
    return (_block(name) if name.startswith("blk.") else -1, name)


def expected_types(ftype: str, file: dict[str, tuple[int, ...]], m: Model) -> dict[str, str]:
    """Each tensor's type in the file llama-quantize writes (F32 for what it leaves alone:
    every such tensor here is one the converter writes in F32)."""
    default, out = FTYPES[ftype], {}
    n_wv = sum(_category(n) == "attn_v" for n in file)
    i_wv = i_down = 0
    for name in sorted(file, key=_order):
        shape = file[name]
        if not _quantised(name, shape):
            out[name] = "F32"
            continue
        cat, ne0, t = _category(name), shape[-1], default
        if cat == "output" or (m.tied and cat == "token_embd"):
            t = "Q8_0" if ne0 % _block_size(default) else "Q6_K"
        elif cat == "attn_v":
            if ftype == "iq4_xs" and m.n_gqa >= 4:
                t = "Q5_K"
            elif ftype == "q4_k_m" and _more_bits(i_wv, n_wv):
                t = "Q6_K"
            t, i_wv = ("Q8_0" if m.n_expert == 8 else t), i_wv + 1
        elif cat == "ffn_down":
            i = _block(name) if m.n_expert > 1 else i_down  # layer_info
            if ftype == "q4_k_m" and _more_bits(i, m.n_layer):
                t = "Q6_K"
            elif ftype == "iq4_xs" and i < m.n_layer // 8:
                t = "Q5_K"
            i_down += 1
        out[name] = _fallback(t, ne0)
    return out


def _bytes(t: str, elements: int) -> int:
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t]]
    return elements // block * size


def planned(fam: str, model, w) -> dict[str, tuple[int, str]]:
    """The plan's rows as GGUF tensors: name → (elements, type)."""
    out = {}
    for r in w.rows:
        if r.role == "tied":
            continue
        for name in per_layer(r.name):
            for g, s in to_gguf(fam, name, r.shape, model.config):
                out[g] = (math.prod(s), r.format)
    return out


@pytest.mark.parametrize("ftype", list(FTYPES))
@pytest.mark.parametrize("fam", list(FAMILIES))
def test_mix_from_a_config_is_the_converted_and_quantised_file(fam, ftype):
    model = paramcount.load(FAMILIES[fam].hub)
    assert model.model_type == fam
    _check(fam, model, ftype)


@pytest.mark.parametrize("ftype", list(FTYPES))
def test_kimi_with_an_mla_layer_first(ftype):
    """The converter writes MLA as MQA (one KV head per MLA layer), so with layer 0 an MLA layer
    n_gqa() is 32: iq4_xs's attn_v rule (n_gqa ≥ 4: Q5_K) reaches the KDA layers' v_proj."""
    config = paramcount.load(FAMILIES["kimi_linear"].hub).config
    linear = config["linear_attn_config"]
    full = [1, *linear["full_attn_layers"]]
    linear = {**linear, "full_attn_layers": full, "kda_layers": [i for i in linear["kda_layers"] if i not in full]}
    model = paramcount.load({**config, "linear_attn_config": linear})
    _check("kimi_linear", model, ftype)
    v = {r.format for r in weights(model, ftype).rows if r.name.endswith("v_proj.weight")}
    assert v == {"iq4_xs": {"Q5_K"}, "q4_0": {"Q4_0"}, "q4_k_m": {"Q4_K", "Q6_K"}}[ftype]


def _check(fam: str, model, ftype: str) -> None:
    file = expected_file(fam, model)
    types = expected_types(ftype, file, _facts(fam, model, file))
    want = {n: (math.prod(s), types[n]) for n, s in file.items()}
    w = weights(model, ftype)
    got = planned(fam, model, w)
    assert set(got) == set(want), (sorted(set(got) - set(want))[:5], sorted(set(want) - set(got))[:5])
    assert {n: v for n, v in got.items() if v != want[n]} == {}
    assert w.bytes == sum(_bytes(t, n) for n, t in want.values())
    assert not w.term().estimate


def test_the_rules_the_families_reach():
    """The families above reach the rules that set them apart: attn_qkv typed as attn_v, the
    ffn_down counter over layers without a feed-forward, layer 0's n_gqa of 0, fallbacks."""
    w = weights(paramcount.load("Qwen/Qwen3.5-27B"), "q4_k_m")
    assert {r.format for r in w.rows if "in_proj_qkv" in r.name} == {"Q4_K", "Q6_K"}  # use_more_bits
    assert {r.format for r in w.rows if "in_proj_z" in r.name} == {"Q4_K"}  # attn_gate: "other"
    jamba = weights(paramcount.load("ai21labs/AI21-Jamba-1.5-Mini"), "iq4_xs")  # 32 heads, 8 KV heads
    assert {r.format for r in jamba.rows if "v_proj" in r.name} == {"IQ4_XS"}  # n_gqa() of layer 0: 0
    mamba = weights(paramcount.load("state-spaces/mamba-2.8b-hf"), "q4_k_m")
    assert [r.format for r in mamba.rows if "dt_proj.weight" in r.name] == ["Q5_0"]  # rows of 160
    assert {r.format for r in mamba.rows if "A_log" in r.name or "conv1d" in r.name} == {"F32"}


def test_mtp_layers_are_in_the_file_and_said():
    """Qwen3.5's converter writes the checkpoint's MTP layer as block 64 (not loaded by
    llama.cpp unless asked); the plan holds it, at its bytes, and the note says so."""
    model = paramcount.load("Qwen/Qwen3.5-27B")
    file = expected_file("qwen3_5_text", model)
    types = expected_types("q4_k_m", file, _facts("qwen3_5_text", model, file))
    mtp = sum(_bytes(types[n], math.prod(s)) for n, s in file.items() if n.startswith("blk.64."))
    w = weights(model, "q4_k_m")
    note = w.term().assumption
    assert f"{mtp:,} B planned here" in note and "load_mtp" in note and "--no-mtp" in note
    assert w.parameters == model.total + 424_699_392  # the MTP layer the count's own note gives
    assert "424,699,392 parameters" in " ".join(model.notes)


def test_refused_hybrids_say_why(capsys):
    assert main(["memory", "MiniMaxAI/MiniMax-Text-01", "--dtype", "q4_k_m", "--runtime", "llama.cpp"]) == 2
    assert "not 'minimax'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "mtp"), [("Qwen/Qwen3-Next-80B-A3B-Instruct", 1), ("ai21labs/AI21-Jamba-1.5-Mini", 0)]
)
def test_a_single_type_quantises_the_models_own_tensors_as_for_every_family(name, mtp):
    """q4_k (not a file type) is the what-if of the model's tensors in one type, needing no
    converter: no split, no MTP layer; a file type plans the converter's file, MTP layer included."""
    m = paramcount.load(name)
    single, mix = weights(m, "q4_k"), weights(m, "q4_k_m")
    assert single.parameters == m.total and not any(".weight[" in r.name for r in single.rows)
    assert (mix.parameters > m.total) == bool(mtp)
