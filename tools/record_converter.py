"""Record what llama.cpp's converter writes for image+text models, as a test fixture.

Not part of CI: it runs llama.cpp's own ``convert_hf_to_gguf.py`` classes (``conversion/`` and
``gguf-py/``, as vendored by llama-cpp-python 0.3.36; unpack its sdist) with torch and
transformers, for example:

    python tools/record_converter.py /path/to/llama_cpp_python-0.3.36/vendor/llama.cpp [MODEL ...]

For each model (catalog configs, and a small LLaVA over a Pixtral tower) it writes a sparse
checkpoint: transformers' parameter names and shapes for the config (the class on the meta
device), saved as the Hub's checkpoints name them (transformers' reverse renaming, as
tests/test_checkpoint_renames.py checks it; Qwen3-VL's in its own names, its fused experts
transposed as transformers' conversion mapping says the files hold them), in BF16, with no data
behind the header. Then, as ``convert_hf_to_gguf.py`` does, it picks the text and the mmproj
class for the config (``get_model_architecture``, ``get_model_class``) and runs
``prepare_tensors`` with ``--outtype auto``; the lazy tensors are never read, and every
``GGUFWriter.add_tensor`` call is recorded: name, shape (PyTorch order) and type. The mmproj is
recorded again from an F16 checkpoint (its forced types differ). A class that refuses a model
is recorded with its error.

Families whose Hub files name their tensors as transformers 5 does (Qwen3-VL, Qwen3.5, Gemma 4,
MiMo-V2-Flash) are written in those names; where the Hub's files hold experts one by one
(``experts.{e}.gate_proj.weight``, as transformers' conversion mapping merges them) they are
written so. The checkpoint's persistent buffers are written too (Gemma 4's ``layer_scalar`` and
clipped linears' bounds, routers' ``e_score_correction_bias``), and the tensors transformers does
not build but the checkpoints hold: multi-token-prediction layers (``MTP``: each family's decoder
layer for the index past ``num_hidden_layers``, built by transformers itself with the per-layer
lists extended, named as the published checkpoints name them; see ``mtp_tensors``). Gemma3Model
reads the tokenizer to cut the token embedding: a ``tokenizer.json`` of ``vocab_size`` tokens is
written, so the embedding keeps every row (the plan's upper bound). Text-only families
(``TEXT_ONLY``) are recorded for the language-model file alone.

Output: tests/fixtures/llamacpp_mmproj.json. Tensors of numbered blocks are grouped: a name
with ``{}`` for the block number and the blocks it holds (``0-27``; ``8,16,24``).
"""

from __future__ import annotations

import json
import logging
import re
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

FIXTURE = ROOT / "tests" / "fixtures" / "llamacpp_mmproj.json"
MODELS = [
    "Qwen/Qwen2-VL-7B-Instruct",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "Qwen/Qwen3-VL-8B-Instruct",
    "Qwen/Qwen3-VL-4B-Instruct",
    "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "mistralai/Ministral-3-3B-Reasoning-2512",
    "HuggingFaceTB/SmolVLM-Instruct",
    "HuggingFaceTB/SmolVLM2-500M-Video-Instruct",
    "google/gemma-3-4b-it",
    "llava-hf/llava-1.5-7b-hf",
    "google/paligemma-3b-pt-224",
    "google/gemma-4-E2B-it",
    "google/gemma-4-31B-it",
    "Qwen/Qwen3.6-35B-A3B",
    "XiaomiMiMo/MiMo-V2-Flash",
]
# A LLaVA over a Pixtral tower (Pixtral-12B's layout, small), and composites without a converter
# class, by their transformers defaults.
CONFIGS: dict[str, dict[str, Any]] = {
    "llava-pixtral": {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "image_token_index": 10,
        "projector_hidden_act": "gelu",
        "vision_feature_layer": -1,
        "text_config": {
            "model_type": "mistral",
            "hidden_size": 512,
            "head_dim": 64,
            "intermediate_size": 1536,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "num_hidden_layers": 8,
            "vocab_size": 4096,
            "rope_theta": 1000000000.0,
        },
        "vision_config": {
            "model_type": "pixtral",
            "hidden_size": 256,
            "head_dim": 64,
            "intermediate_size": 1024,
            "num_attention_heads": 4,
            "num_hidden_layers": 4,
            "image_size": 1024,
            "patch_size": 16,
            "hidden_act": "gelu",
            "rope_theta": 10000.0,
        },
    },
    "internvl": {"architectures": ["InternVLForConditionalGeneration"], "model_type": "internvl"},
    "llava_onevision": {"architectures": ["LlavaOnevisionForConditionalGeneration"], "model_type": "llava_onevision"},
    "mllama": {"architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama"},
}
# Composites and text models put together here (no published config.json of theirs is stored):
# their fields as each function's docstring says.


def _llama4() -> dict[str, Any]:
    """Llama 4 Scout's language model (the catalog's text_config, with the llama3 rope scaling its
    published config.json gives) under transformers' Llama4VisionConfig defaults."""
    import paramcount

    text = {k: v for k, v in paramcount.load("meta-llama/Llama-4-Scout-17B-16E").config.items() if k != "architectures"}
    text["rope_scaling"] = {
        "rope_type": "llama3", "factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
    }  # fmt: skip
    return {
        "architectures": ["Llama4ForConditionalGeneration"],
        "model_type": "llama4",
        "text_config": text,
        "vision_config": {"model_type": "llama4_vision_model"},
    }


def _qwen3_5() -> dict[str, Any]:
    """Qwen3.5-27B's language model (the catalog's text_config) under Qwen3.6-35B-A3B's vision
    tower (Qwen3.5's, a Qwen3-VL tower without DeepStack), its merger widened to the text model's."""
    import paramcount

    text = {k: v for k, v in paramcount.load("Qwen/Qwen3.5-27B").config.items() if k != "architectures"}
    vision = {**paramcount.load("Qwen/Qwen3.6-35B-A3B").config["vision_config"], "out_hidden_size": text["hidden_size"]}
    vision["model_type"] = "qwen3_5_vision"
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "text_config": text,
        "vision_config": vision,
    }


def _gemma4_moe() -> dict[str, Any]:
    """A Gemma 4 26B-A4B-like language model: Gemma 4 31B's text_config with the MoE block
    (128 experts of 704, top 8), 30 layers of 2816, 16 heads over 8 KV heads (2 in the global
    layers, every sixth)."""
    import paramcount

    text = dict(paramcount.load("google/gemma-4-31B-it").config["text_config"])
    text.pop("expert_intermediate_size", None)
    layers = ["full_attention" if i % 6 == 5 else "sliding_attention" for i in range(30)]
    return {
        **text,
        "architectures": ["Gemma4ForCausalLM"],
        "hidden_size": 2816, "num_hidden_layers": 30, "layer_types": layers, "intermediate_size": 2112,
        "enable_moe_block": True, "num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704,
        "num_attention_heads": 16, "num_key_value_heads": 8, "num_global_key_value_heads": 2,
    }  # fmt: skip


def _step3p5() -> dict[str, Any]:
    """A small Step 3.5 Flash-like language model in its remote-code config's spelling: full
    attention every fourth layer (sliding otherwise, with more query heads), routed layers from
    3 on (moe_layers_enum, as Step-3.5-Flash's lists 3-44 of 45), and three MTP layers, the
    per-layer lists padded with their entries as the published config.json pads them."""
    n, mtp = 8, 3
    types = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(n + mtp)]
    return {
        "architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5",
        "vocab_size": 4096, "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": n,
        "num_attention_heads": 8, "num_attention_groups": 2, "head_dim": 64, "sliding_window": 128,
        "attention_other_setting": {"num_attention_heads": 12, "num_attention_groups": 2},
        "layer_types": types, "moe_layers_enum": ",".join(str(i) for i in range(3, n)),
        "moe_num_experts": 16, "moe_top_k": 4, "moe_intermediate_size": 256, "share_expert_dim": 512,
        "num_nextn_predict_layers": mtp, "rope_theta": [5e6 if t == "full_attention" else 1e4 for t in types],
        "partial_rotary_factors": [0.5 if t == "full_attention" else 1.0 for t in types],
    }  # fmt: skip


def _nemotron_h_moe() -> dict[str, Any]:
    """A small Nemotron-H MoE (Nemotron 3 Nano-like): Mamba-2, attention and MoE layers by
    hybrid_override_pattern (M, *, E), 16 experts of 256 (top 4) and a shared expert, and the
    one MTP block (an attention and an MoE layer) the converter folds."""
    return {
        "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
        "vocab_size": 4096, "hidden_size": 512, "num_hidden_layers": 8, "hybrid_override_pattern": "MEM*EMEM",
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 1024,
        "mamba_num_heads": 16, "mamba_head_dim": 64, "n_groups": 4, "ssm_state_size": 64, "conv_kernel": 4,
        "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
        "moe_shared_expert_intermediate_size": 512, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
        "norm_topk_prob": True, "routed_scaling_factor": 2.5, "mlp_hidden_act": "relu2",
        "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
    }  # fmt: skip


COMPOSED = {
    "llama4": _llama4,
    "qwen3_5": _qwen3_5,
    "gemma4-moe": _gemma4_moe,
    "step3p5": _step3p5,
    "nemotron_h-moe": _nemotron_h_moe,
}
# Recorded for the language-model file only (no mmproj class, or none planned here)
TEXT_ONLY = {"gemma4-moe", "step3p5", "nemotron_h-moe", "XiaomiMiMo/MiMo-V2-Flash"}
# The converter routes the language model by text_config.architectures; the catalog's copy of
# SmolVLM-Instruct's config names none (SmolVLM2's, like the Hub's files, names VLlama3ForCausalLM).
TEXT_ARCHITECTURES = {"idefics3": "VLlama3ForCausalLM"}
# Gemma3Model.modify_tensors reads the tokenizer (it keeps token_embd's rows up to its size): its
# language model is not recorded here (tests/test_quant_mix.py holds it to gemma3_text's mix).
MMPROJ_ONLY = {"google/gemma-3-4b-it"}
_SIZE = {"BF16": 2, "F16": 2, "F32": 4}


def meta_model(config: dict[str, Any]) -> Any:
    """transformers' class for the config, on the meta device."""
    import torch
    import transformers

    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
    with torch.device("meta"):
        return getattr(transformers, config["architectures"][0])(
            transformers.AutoConfig.for_model(config["model_type"], **kwargs)
        )


# Families whose Hub files name tensors as transformers 5 does; those whose files hold experts one
# by one (transformers' conversion mapping merges them: MergeModulelist)
OWN_NAMES = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "gemma4", "gemma4_text")
ONE_BY_ONE = ("qwen3_5_moe", "mimo_v2_flash", "nemotron_h")


def hub_tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Checkpoint name -> shape, as the Hub's safetensors files hold the parameters, the
    persistent buffers and the multi-token-prediction layers."""
    mt = config["model_type"]
    if mt == "step3p5":
        return step3p5_tensors(config)
    model = meta_model(config)
    shapes = {**_named(model, mt in OWN_NAMES), **mtp_tensors(config, model)}
    if mt == "qwen3_vl_moe":
        for name, shape in shapes.items():  # Transpose(1, 2) of the fused experts
            if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                shapes[name] = (*shape[:-2], shape[-1], shape[-2])
    return one_by_one(shapes) if mt in ONE_BY_ONE else shapes


def _named(model: Any, own: bool) -> dict[str, tuple[int, ...]]:
    """The parameters and persistent buffers (a tied parameter once), in transformers' names or
    as its reverse renaming saves them."""
    from tests.test_checkpoint_renames import legacy_names, loading, renamers

    params = dict(model.named_parameters(remove_duplicate=False))
    kept = {n: tuple(p.shape) for n, p in model.named_parameters()}
    buffers = {n: tuple(b.shape) for n, b in model.state_dict().items() if n not in params}
    if own:
        return {**kept, **buffers}
    backward = renamers(model)[1]
    renamed = {loading.rename_source_key(n, backward, [], reverse=True)[0]: s for n, s in buffers.items()}
    return {**{old: kept[new] for old, new in legacy_names(model).items()}, **renamed}


def _saved(model: Any, name: str) -> str:
    """A transformers name as its reverse renaming saves it (the Hub's older layout)."""
    from tests.test_checkpoint_renames import loading, renamers

    return loading.rename_source_key(name, renamers(model)[1], [], reverse=True)[0]


def _layers(model: Any, first: int, last: int) -> dict[int, dict[str, tuple[int, ...]]]:
    """{layer index: {name after ``layers.{i}.``: shape}} of the decoder layers first..last."""
    out: dict[int, dict[str, tuple[int, ...]]] = {}
    for name, t in [*model.named_parameters(), *model.state_dict().items()]:
        m = re.search(r"(?:^|\.)layers\.(\d+)\.(.*)", name)
        if m and first <= int(m[1]) <= last:
            out.setdefault(int(m[1]), {})[m[2]] = tuple(t.shape)
    return out


def _nextn(prefix: str, h: int) -> dict[str, tuple[int, ...]]:
    """The MTP fusion every nextn layer holds: eh_proj (2h → h), enorm and hnorm."""
    return {f"{prefix}eh_proj.weight": (h, 2 * h), f"{prefix}enorm.weight": (h,), f"{prefix}hnorm.weight": (h,)}


def mtp_tensors(config: dict[str, Any], model: Any) -> dict[str, tuple[int, ...]]:
    """The checkpoint's multi-token-prediction layers, which transformers does not build, as the
    published checkpoints name them (each converter's reading of them: qwen.py _QwenMtpMixin,
    mimo.py MimoV2Model, nemotron.py NemotronHModel._MTP_SPECIAL_RENAMES)."""
    mt = config["model_type"]
    text = config.get("text_config", config)
    n, h = text.get("num_hidden_layers"), text.get("hidden_size")
    if mt.startswith("qwen3_5"):  # mtp.layers.j: a full-attention decoder layer, mtp.fc and three norms
        resolved = model.config.get_text_config()  # layer_types as the config class fills them in
        full = max(i for i, t in enumerate(resolved.layer_types) if t == "full_attention")
        layer = _layers(model, full, full)[full]
        count = text.get("mtp_num_hidden_layers", 1)  # the published checkpoints hold one
        out = {f"mtp.layers.{j}.{k}": v for j in range(count) for k, v in layer.items()}
        norms = ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")
        return {**out, "mtp.fc.weight": (h, 2 * h), **{f"mtp.{m}.weight": (h,) for m in norms}}
    if mt == "mimo_v2_flash":  # model.mtp.layers.0-2: a sliding-attention layer with a dense MLP
        extended = {**config, "num_hidden_layers": n + 3}
        extended["layer_types"] = [*config["layer_types"], *["sliding_attention"] * 3]
        extended["mlp_layer_types"] = [*config["mlp_layer_types"], *["dense"] * 3]
        out = {}
        for i, layer in _layers(meta_model(extended), n, n + 2).items():
            for k, v in layer.items():
                k = _saved(model, f"model.layers.0.{k}").split("layers.0.", 1)[1]
                out[f"model.mtp.layers.{i - n}.{k.replace('post_attention_layernorm', 'pre_mlp_layernorm')}"] = v
            out |= _nextn(f"model.mtp.layers.{i - n}.", h) | {f"model.mtp.layers.{i - n}.final_layernorm.weight": (h,)}
        return out
    if mt == "nemotron_h" and config.get("num_nextn_predict_layers"):  # mtp.layers.0 attention, .1 MoE
        extended = {**config, "num_hidden_layers": n + 2, "num_nextn_predict_layers": 0}
        extended["hybrid_override_pattern"] = config["hybrid_override_pattern"] + "*E"
        layers = _layers(meta_model(extended), n, n + 1)
        out = {f"mtp.layers.{i - n}.{k}": v for i, layer in layers.items() for k, v in layer.items()}
        return {**out, **_nextn("mtp.layers.0.", h), "mtp.layers.1.final_layernorm.weight": (h,)}
    return {}


def step3p5_tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Step 3.5's remote-code checkpoint (transformers' step3p7 conversion mapping, reversed):
    ``moe.gate_proj/up_proj.weight`` (E, I, h) stacked, ``moe.down_proj.weight``, ``moe.gate``,
    ``moe.router_bias``, ``share_expert.*``; its MTP layers at ``model.layers.{n + i}`` (built
    here by transformers for those indices), each with eh_proj, enorm, hnorm and
    ``transformer.shared_head.{norm,output}`` (step3.py Step35Model.filter_tensors)."""
    import torch
    import transformers

    n, mtp, h = config["num_hidden_layers"], config["num_nextn_predict_layers"], config["hidden_size"]
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
    cfg = transformers.Step3p7TextConfig(**{**kwargs, "num_hidden_layers": n + mtp, "num_nextn_predict_layers": 0})
    with torch.device("meta"):
        model = transformers.Step3p7TextModel(cfg)
    out: dict[str, tuple[int, ...]] = {}
    for name, t in [*model.named_parameters(), *model.state_dict().items()]:
        out |= _step3p5_name(f"model.{name}", tuple(t.shape))
    for i in range(n, n + mtp):
        out |= _nextn(f"model.layers.{i}.", h)
        out |= {f"model.layers.{i}.transformer.shared_head.norm.weight": (h,)}
        out |= {f"model.layers.{i}.transformer.shared_head.output.weight": (config["vocab_size"], h)}
    return {**out, "lm_head.weight": (config["vocab_size"], h)}


_STEP3P5 = (
    (".mlp.gate.e_score_correction_bias", ".moe.router_bias"), (".mlp.gate.weight", ".moe.gate.weight"),
    (".mlp.shared_experts.", ".share_expert."), (".mlp.experts.down_proj", ".moe.down_proj.weight"),
)  # fmt: skip


def _step3p5_name(name: str, shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    if name.endswith(".mlp.experts.gate_up_proj"):
        e, rows, cols = shape
        base = name.removesuffix(".mlp.experts.gate_up_proj")
        return {f"{base}.moe.{p}.weight": (e, rows // 2, cols) for p in ("gate_proj", "up_proj")}
    for old, new in _STEP3P5:
        name = name.replace(old, new)
    return {name: shape}


def one_by_one(shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Fused experts as per-expert nn.Linear weights: ``experts.gate_up_proj`` (E, 2I, h) as
    ``experts.{e}.gate_proj.weight`` and ``up_proj`` (I, h), ``experts.down_proj`` (E, h, I) and a
    non-gated ``experts.up_proj`` (E, I, h) as ``experts.{e}.….weight``."""
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in shapes.items():
        head, _, last = name.rpartition(".")
        if not head.endswith(".experts") or last not in ("gate_up_proj", "up_proj", "down_proj") or len(shape) != 3:
            out[name] = shape
            continue
        e, rows, cols = shape
        parts = [("gate_proj", rows // 2), ("up_proj", rows // 2)] if last == "gate_up_proj" else [(last, rows)]
        out |= {f"{head}.{i}.{p}.weight": (r, cols) for i in range(e) for p, r in parts}
    return out


def write_sparse(path: Path, shapes: dict[str, tuple[int, ...]], dtype: str) -> None:
    """A safetensors file whose header lists the tensors and whose data is a hole."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = _SIZE[dtype] * max(1, _prod(shape))
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def convert(folder: Path, mmproj: bool) -> dict[str, Any]:
    """The tensors convert_hf_to_gguf.py (--outtype auto, with --mmproj or not) writes."""
    import gguf
    import numpy as np
    import torch
    from conversion import ModelBase, ModelType, get_model_architecture, get_model_class

    written: list[tuple[str, tuple[int, ...], str]] = []

    def add_tensor(self, name, tensor, raw_shape=None, raw_dtype=None, tensor_endianess=None):
        packed = tensor.dtype == np.uint8  # a block type's bytes (Q8_0), as prepare_tensors reads them
        shape = gguf.quant_shape_from_byte_shape(tensor.shape, raw_dtype) if packed else tensor.shape
        written.append((name, tuple(int(d) for d in shape), raw_dtype.name))

    gguf.GGUFWriter.add_tensor = add_tensor
    kind = ModelType.MMPROJ if mmproj else ModelType.TEXT
    try:
        arch = get_model_architecture(ModelBase.load_hparams(folder, False), kind)
        cls = get_model_class(arch, mmproj=mmproj)
        with torch.inference_mode():
            instance = cls(folder, gguf.LlamaFileType.GUESSED, folder / "out.gguf", dry_run=True)
            instance.prepare_tensors()
    except Exception as e:  # the converter's own refusal, recorded as it says it
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    gguf_arch = gguf.MODEL_ARCH_NAMES[instance.model_arch]
    return {"class": cls.__name__, "architecture": arch, "gguf_arch": gguf_arch, "tensors": grouped(written)}


def grouped(written: list[tuple[str, tuple[int, ...], str]]) -> list[list[Any]]:
    """Tensors of numbered blocks (``blk.N.``, ``deepstack.N.``) with equal shape and type as one
    entry: [name with {} for N, shape, type, blocks]; others with blocks ''."""
    groups: dict[tuple[str, tuple[int, ...], str], list[int]] = {}
    for name, shape, dtype in written:
        m = re.search(r"(?:^|\.)(?:blk|deepstack)\.(\d+)\.", name)
        key = (name[: m.start(1)] + "{}" + name[m.end(1) :], shape, dtype) if m else (name, shape, dtype)
        groups.setdefault(key, []).append(int(m[1]) if m else -1)
    return [[n, list(s), t, _spans(ix)] for (n, s, t), ix in groups.items()]


def _spans(ix: list[int]) -> str:
    if ix == [-1]:
        return ""
    ix = sorted(ix)
    if ix == list(range(ix[0], ix[-1] + 1)) and len(ix) > 1:
        return f"{ix[0]}-{ix[-1]}"
    return ",".join(map(str, ix))


def record(config: dict[str, Any], mmproj_only: bool = False, text_only: bool = False) -> dict[str, Any]:
    """Both files for one config, and the mmproj again from an F16 checkpoint (a text-only
    family: its language-model file)."""
    config = dict(config)
    if arch := TEXT_ARCHITECTURES.get(config["model_type"]):
        config["text_config"] = {**config.get("text_config", {}), "architectures": [arch]}
    try:
        shapes = hub_tensors(config)
    except Exception as e:
        return {"error": f"transformers: {type(e).__name__}: {e}".splitlines()[0][:300]}
    out: dict[str, Any] = {}
    runs = (("BF16", ("mmproj",) if mmproj_only else ("text", "mmproj")), ("F16", ("mmproj",)))
    for dtype, files in (("BF16", ("text",)),) if text_only else runs:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_sparse(folder / "model.safetensors", shapes, dtype)
            (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
            # LlavaVisionModel reads [IMG_BREAK]'s id; MmprojModel the image mean and std
            tokens = {"added_tokens_decoder": {"12": {"content": "[IMG_BREAK]"}}}
            (folder / "tokenizer_config.json").write_text(json.dumps(tokens), encoding="utf-8")
            pre = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3}
            (folder / "preprocessor_config.json").write_text(json.dumps(pre), encoding="utf-8")
            # Gemma3Model.modify_tensors keeps token_embd's first len(vocab) + len(added_tokens) rows
            vocab = {f"t{i}": i for i in range(config.get("text_config", config).get("vocab_size", 0))}
            tokenizer = {"model": {"vocab": vocab}, "added_tokens": []}
            (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
            for f in files:
                out[f if dtype == "BF16" else f"{f}_f16"] = convert(folder, f == "mmproj")
    return out


def main(llama_cpp: str, only: list[str] | None = None) -> None:
    """Record every model, or only those named (the others kept as the fixture has them)."""
    vendor = Path(llama_cpp).resolve()
    sys.path.insert(0, str(vendor / "gguf-py"))
    sys.path.insert(0, str(vendor))
    logging.disable(logging.WARNING)
    import paramcount

    configs = {m: dict(paramcount.load(m).config) for m in MODELS} | CONFIGS
    configs |= {name: build() for name, build in COMPOSED.items()}
    models = json.loads(FIXTURE.read_text(encoding="utf-8"))["models"] if only else {}
    for name, config in configs.items():
        if only and name not in only:
            continue
        given = None if name in MODELS else config
        models[name] = {"config": given, **record(config, name in MMPROJ_ONLY, name in TEXT_ONLY)}
        print(name, {k: v.get("class", v.get("error")) for k, v in models[name].items() if isinstance(v, dict)})
    doc = {
        "llama.cpp": "llama-cpp-python 0.3.36's vendored convert_hf_to_gguf.py (conversion/, gguf-py)",
        "outtype": "auto (BF16 checkpoints; mmproj_f16: F16 ones)",
        "models": {name: models[name] for name in configs},
    }
    FIXTURE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
