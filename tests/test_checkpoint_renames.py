"""Composite checkpoints saved before transformers 5 (``language_model.model.*``,
``vision_tower.vision_model.*``, Qwen2-VL's ``model.*`` text model) map onto the tree as
transformers maps them on loading (its conversion_mapping.py), held to transformers' own renamer."""

from __future__ import annotations

import json
import struct

import pytest

import paramcount

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
loading = pytest.importorskip("transformers.core_model_loading")
conversion = pytest.importorskip("transformers.conversion_mapping")

TEXT = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}
TEXT |= {"num_key_value_heads": 2, "vocab_size": 128, "head_dim": 16}
CLIP = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2}
CLIP |= {"image_size": 28, "patch_size": 14}
CASES = {
    "llava": (
        {
            "model_type": "llava",
            "text_config": {"model_type": "llama", **TEXT},
            "vision_config": {"model_type": "clip_vision_model", **CLIP},
        },
        "LlavaForConditionalGeneration",
    ),
    "paligemma": (
        {
            "model_type": "paligemma",
            "text_config": {"model_type": "gemma", **TEXT},
            "vision_config": {"model_type": "siglip_vision_model", **CLIP},
        },
        "PaliGemmaForConditionalGeneration",
    ),
    "gemma3": (
        {
            "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", **TEXT},
            "vision_config": {"model_type": "siglip_vision_model", **CLIP},
            "mm_tokens_per_image": 4,
        },
        "Gemma3ForConditionalGeneration",
    ),
    "qwen2_5_vl": (
        {
            "model_type": "qwen2_5_vl",
            "text_config": {
                "model_type": "qwen2_5_vl_text",
                **TEXT,
                "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
            },
            "vision_config": {
                "depth": 2,
                "hidden_size": 32,
                "intermediate_size": 48,
                "num_heads": 2,
                "out_hidden_size": 64,
                "fullatt_block_indexes": [1],
            },
        },
        "Qwen2_5_VLForConditionalGeneration",
    ),
}


def renamers(model):
    """transformers' renamings for ``model`` and their reverses (how it saves the old format)."""
    forward = [
        t
        for t in conversion.get_model_conversion_mapping(model)
        if type(t) is loading.WeightRenaming or isinstance(t, loading.PrefixChange)
    ]
    return forward, [t.reverse_transform() for t in forward]


def legacy_names(model) -> dict[str, str]:
    """{old checkpoint name: in-memory name}: transformers' reverse renaming, except where its own
    forward renaming does not bring that back (LLaVA's lm_head, which old checkpoints keep as
    ``language_model.lm_head.weight``), checked both ways against transformers."""
    forward, backward = renamers(model)
    out = {}
    for name, _ in model.named_parameters():
        old = loading.rename_source_key(name, backward, [], reverse=True)[0]
        if loading.rename_source_key(old, forward, [])[0] != name and name == "lm_head.weight":
            old = "language_model.lm_head.weight"
        assert loading.rename_source_key(old, forward, [])[0] == name, (old, name)
        out[old] = name
    return out


def write_header(path, shapes: dict[str, tuple[int, ...]]) -> None:
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * max(1, int(torch.tensor(shape).prod())) if shape else 2
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)


@pytest.mark.parametrize("case", sorted(CASES))
def test_old_checkpoint_names_map_as_transformers_maps_them(case, tmp_path):
    config, cls = CASES[case]
    kwargs = {k: v for k, v in config.items() if k != "model_type"}
    with torch.device("meta"):
        model = getattr(transformers, cls)(transformers.AutoConfig.for_model(config["model_type"], **kwargs))
    names = legacy_names(model)
    assert any(old != new for old, new in names.items())
    shapes = dict(model.named_parameters())
    write_header(tmp_path / "model.safetensors", {old: tuple(shapes[new].shape) for old, new in names.items()})
    (tmp_path / "config.json").write_text(json.dumps({**config, "architectures": [cls]}), encoding="utf-8")
    counted = paramcount.load(tmp_path)
    assert counted.checkpoint.differences == ()
    assert counted.total == sum(p.numel() for p in model.parameters())
    assert {t.name for t in counted.tensors() if not t.tied_to} == {n for n in names.values()}
    assert any("renames them on loading" in n for n in counted.notes)


def test_names_already_in_memory_form_are_left_alone(tmp_path):
    config, cls = CASES["llava"]
    kwargs = {k: v for k, v in config.items() if k != "model_type"}
    with torch.device("meta"):
        model = getattr(transformers, cls)(transformers.AutoConfig.for_model("llava", **kwargs))
    write_header(tmp_path / "model.safetensors", {n: tuple(p.shape) for n, p in model.named_parameters()})
    (tmp_path / "config.json").write_text(json.dumps({**config, "architectures": [cls]}), encoding="utf-8")
    counted = paramcount.load(tmp_path)
    assert counted.checkpoint.differences == ()
    assert not any("renames them on loading" in n for n in counted.notes)
