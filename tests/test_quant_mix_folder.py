"""A llama.cpp mix planned from a model folder (config.json beside safetensors) is the mix planned
from its config.json alone: llama.cpp's converter and quantiser read the family (its experts and
their count, the MoE down-projection rule per layer, the 8-expert rules, the MTP layers the
converter appends), which a tree built from the stored names does not carry.

The folders hold a sparse safetensors file (a header, no data) with the tensors transformers builds
for the small configs of tests/fixtures/llamacpp_hybrid.json (recorded by llama.cpp's converter),
and, for Qwen3-Next, the checkpoint's MTP layer (``mtp.*``), which transformers does not build."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

import paramcount
from paramcount.memory import inference
from paramcount.memory.weights.schemes import weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

DOC = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_hybrid.json").read_text())
MOE = ("jamba", "granitemoehybrid", "qwen3_next")


def _names(config: dict) -> dict[str, tuple[int, ...]]:
    """The tensors transformers builds for ``config`` (on the meta device), as saved."""
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
    with torch.device("meta"):
        model = getattr(transformers, config["architectures"][0])(
            transformers.AutoConfig.for_model(config["model_type"], **kwargs)
        )
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def _mtp(config: dict, shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Qwen3-Next's checkpoint MTP layer: a full-attention decoder layer, mtp.fc and three norms."""
    prefix = f"model.layers.{config.get('full_attention_interval', 4) - 1}."
    out = {"mtp.layers.0." + k[len(prefix) :]: v for k, v in shapes.items() if k.startswith(prefix)}
    h = config["hidden_size"]
    out["mtp.fc.weight"] = (h, 2 * h)
    return out | {f"mtp.{m}.weight": (h,) for m in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")}


def _sparse(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * max(1, int(torch.tensor(shape).prod()) if shape else 1)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for fam in MOE:
        config = DOC["families"][fam]["small"]["config"]
        folder = tmp_path_factory.mktemp(fam)
        shapes = _names(config)
        if fam == "qwen3_next":
            shapes |= _mtp(config, shapes)
        _sparse(folder / "model.safetensors", shapes)
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        out[fam] = folder
    return out


@pytest.mark.parametrize("ftype", ["q4_k_m", "q3_k_m", "q2_k", "iq4_xs", "q8_0"])
@pytest.mark.parametrize("fam", MOE)
def test_a_folders_mix_is_its_configs(folders, fam, ftype):
    folder = paramcount.load(str(folders[fam]))
    config = paramcount.load(str(folders[fam] / "config.json"))
    assert folder.checkpoint is not None  # counted from the files, held to the config
    got, want = weights(folder, ftype), weights(config, ftype)
    assert [(r.name, r.count, r.format, r.bytes) for r in got.rows] == [
        (r.name, r.count, r.format, r.bytes) for r in want.rows
    ]
    assert got.bytes == want.bytes


@pytest.mark.parametrize("ftype", ["q4_k_m", "iq4_xs"])
@pytest.mark.parametrize("fam", MOE)
def test_a_folders_mix_is_the_quantised_converter_file(folders, fam, ftype):
    """Held to the file llama.cpp's converter wrote for the same config (its tensors, recorded in
    the fixture) with llama-quantize's rules restated in tests/test_quant_mix_hybrid.py: per-layer
    ffn_down ranks for experts, the 8-expert rules, the MTP block once."""
    from .test_quant_mix_hybrid import _bytes, _facts, expected_types

    folder = paramcount.load(str(folders[fam]))
    file = {n: tuple(s) for n, s, _ in DOC["families"][fam]["small"]["spec"]["tensors"]}
    types = expected_types(ftype, file, _facts(fam, folder, file))
    assert weights(folder, ftype).bytes == sum(_bytes(t, math.prod(file[n])) for n, t in types.items())


@pytest.mark.parametrize("runtime", ["llama.cpp"])  # a GGUF type is llama.cpp's (refused under transformers)
def test_qwen3_next_mtp_block_is_counted_once(folders, runtime):
    """The checkpoint's mtp.* tensors are the MTP block the converter writes (block n_layer): in
    the file once, and llama.cpp leaves it unloaded."""
    kw = {"device": "cpu"} if runtime == "llama.cpp" else {}
    plans = [
        inference(paramcount.load(str(p)), "q4_k_m", context=4096, runtime=runtime, **kw).term("weights").bytes
        for p in (folders["qwen3_next"], folders["qwen3_next"] / "config.json")
    ]
    assert plans[0] == plans[1]


def test_an_moe_folder_that_is_not_its_config_is_refused(folders, tmp_path, capsys):
    """A folder whose files miss a tensor of what config.json builds is counted from its names,
    which carry no experts: a mix would leave out llama.cpp's expert rules, so it is refused."""
    from paramcount.cli import main

    config = json.loads((folders["granitemoehybrid"] / "config.json").read_text())
    shapes = _names(config)
    shapes.pop(next(n for n in shapes if n.endswith("layers.0.input_layernorm.weight")))
    _sparse(tmp_path / "model.safetensors", shapes)
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(paramcount.ParamcountError, match="cannot be placed"):
        weights(paramcount.load(str(tmp_path)), "q4_k_m")
    assert main(["memory", str(tmp_path), "--dtype", "q4_k_m", "--runtime", "llama.cpp"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plan the mix from config.json" in err[0]
