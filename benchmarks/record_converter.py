"""Record what llama.cpp's converter writes for image+text models, as a test fixture.

Not part of CI: it runs llama.cpp's own ``convert_hf_to_gguf.py`` classes (``conversion/`` and
``gguf-py/``, as vendored by llama-cpp-python 0.3.36; unpack its sdist) with torch and
transformers, for example:

    python benchmarks/record_converter.py /path/to/llama_cpp_python-0.3.36/vendor/llama.cpp

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


def hub_tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Checkpoint name -> shape, as the Hub's safetensors files hold the parameters."""
    from tests.test_checkpoint_renames import legacy_names

    model = meta_model(config)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    if not config["model_type"].startswith("qwen3_vl"):
        return {old: shapes[new] for old, new in legacy_names(model).items()}
    for name, shape in shapes.items():  # qwen3_vl_moe's Transpose(1, 2) of the fused experts
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            shapes[name] = (*shape[:-2], shape[-1], shape[-2])
    return shapes


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


def record(config: dict[str, Any], mmproj_only: bool = False) -> dict[str, Any]:
    """Both files for one config, and the mmproj again from an F16 checkpoint."""
    config = dict(config)
    if arch := TEXT_ARCHITECTURES.get(config["model_type"]):
        config["text_config"] = {**config.get("text_config", {}), "architectures": [arch]}
    try:
        shapes = hub_tensors(config)
    except Exception as e:
        return {"error": f"transformers: {type(e).__name__}: {e}".splitlines()[0][:300]}
    out: dict[str, Any] = {}
    for dtype, files in (("BF16", ("mmproj",) if mmproj_only else ("text", "mmproj")), ("F16", ("mmproj",))):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_sparse(folder / "model.safetensors", shapes, dtype)
            (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
            # LlavaVisionModel reads [IMG_BREAK]'s id; MmprojModel the image mean and std
            tokens = {"added_tokens_decoder": {"12": {"content": "[IMG_BREAK]"}}}
            (folder / "tokenizer_config.json").write_text(json.dumps(tokens), encoding="utf-8")
            pre = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3}
            (folder / "preprocessor_config.json").write_text(json.dumps(pre), encoding="utf-8")
            for f in files:
                out[f if dtype == "BF16" else f"{f}_f16"] = convert(folder, f == "mmproj")
    return out


def main(llama_cpp: str) -> None:
    vendor = Path(llama_cpp).resolve()
    sys.path.insert(0, str(vendor / "gguf-py"))
    sys.path.insert(0, str(vendor))
    logging.disable(logging.WARNING)
    import paramcount

    configs = {m: dict(paramcount.load(m).config) for m in MODELS} | CONFIGS
    models = {}
    for name, config in configs.items():
        models[name] = {"config": config if name in CONFIGS else None, **record(config, name in MMPROJ_ONLY)}
        print(name, {k: v.get("class", v.get("error")) for k, v in models[name].items() if isinstance(v, dict)})
    doc = {
        "llama.cpp": "llama-cpp-python 0.3.36's vendored convert_hf_to_gguf.py (conversion/, gguf-py)",
        "outtype": "auto (BF16 checkpoints; mmproj_f16: F16 ones)",
        "models": models,
    }
    FIXTURE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
