"""Quantised checkpoints, written by hand in the real layouts: the logical count of the
unquantised model, and the stored bytes with the bookkeeping itemised and not counted."""

import json

import pytest

import paramcount
from paramcount.frontends.checkpoint import load_path
from paramcount.frontends.quant import classify
from paramcount.frontends.safetensors import Stored

from .ckpt import TINY_LLAMA, linears, plain_parts, save, torch, write_config, zeros

I32, U8, U32, F32 = torch.int32, torch.uint8, torch.uint32, torch.float32
TOTAL = paramcount.load(TINY_LLAMA).total  # the unquantised model
LINEAR_TOTAL = sum(o * i for _, o, i in linears())
N_LINEARS = len(list(linears()))


def write(folder, tensors, quantization=None, key="quantization_config"):
    save(folder / "model.safetensors", tensors)
    write_config(folder, {**TINY_LLAMA, **({key: quantization} if quantization else {})})
    return load_path(folder)


def gptq(bits=4, group=32):
    t = plain_parts()
    for p, out, inp in linears():
        t[f"{p}.qweight"] = zeros(inp * bits // 32, out, dtype=I32)  # packed along the input
        t[f"{p}.qzeros"] = zeros(inp // group, out * bits // 32, dtype=I32)
        t[f"{p}.scales"] = zeros(inp // group, out)
        t[f"{p}.g_idx"] = zeros(inp, dtype=I32)
    return t


def awq(group=32):
    t = plain_parts()
    for p, out, inp in linears():
        t[f"{p}.qweight"] = zeros(inp, out // 8, dtype=I32)  # packed along the output
        t[f"{p}.qzeros"] = zeros(inp // group, out // 8, dtype=I32)
        t[f"{p}.scales"] = zeros(inp // group, out)
    return t


def assert_logical(m, scheme_label, packed_bytes):
    ck = m.checkpoint
    assert m.total == TOTAL and ck.parameters == TOTAL
    assert not [d for d in ck.differences if d.kind != "dtype"], ck.differences
    rows = ck.by_storage()
    assert rows[scheme_label][:2] == (N_LINEARS, LINEAR_TOTAL)
    assert rows[scheme_label][2] == packed_bytes
    assert rows["F16"][1] == TOTAL - LINEAR_TOTAL
    bookkeeping = {e.tensor.name for e in ck.bookkeeping}
    assert not bookkeeping & {p.name for p in ck.params}
    assert ck.stored_elements > 0 and ck.data_bytes == sum(t.nbytes for t in ck.stored())


def test_gptq_with_quantization_config(tmp_path):
    m = write(tmp_path, gptq(), {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False})
    assert_logical(m, "int4 GPTQ (I32)", LINEAR_TOTAL // 2)
    roles = m.checkpoint.bookkeeping_by_role()
    assert {r: v[0] for r, v in roles.items()} == {"GPTQ zeros": 14, "GPTQ scales": 14, "GPTQ g_idx": 14}
    assert roles["GPTQ g_idx"][2] == 4 * sum(i for _, _, i in linears())
    q = next(p for p in m.checkpoint.params if p.name == "model.layers.0.mlp.down_proj.weight")
    assert q.shape == (64, 128)  # [out, in], as nn.Linear holds it
    assert "gptq" in m.checkpoint.quantization


def test_gptq_bits_inferred_without_any_config(tmp_path):
    save(tmp_path / "model.safetensors", gptq(bits=8))
    m = load_path(tmp_path / "model.safetensors")
    assert m.total == TOTAL
    assert m.checkpoint.by_storage()["int8 GPTQ (I32)"][1] == LINEAR_TOTAL


def test_gptq_side_file_quantize_config(tmp_path):
    save(tmp_path / "model.safetensors", gptq(bits=4))
    write_config(tmp_path, TINY_LLAMA)
    (tmp_path / "quantize_config.json").write_text(json.dumps({"bits": 4, "group_size": 32, "desc_act": True}))
    m = load_path(tmp_path)
    assert m.total == TOTAL and "4-bit" in m.checkpoint.quantization


def test_awq_packs_the_other_axis(tmp_path):
    m = write(tmp_path, awq(), {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"})
    assert_logical(m, "int4 AWQ (I32)", LINEAR_TOTAL // 2)
    q = next(p for p in m.checkpoint.params if p.name == "model.layers.0.self_attn.k_proj.weight")
    assert q.shape == (32, 64)
    assert "g_idx" not in " ".join(m.checkpoint.bookkeeping_by_role())


def test_awq_recognised_from_shapes_alone(tmp_path):
    save(tmp_path / "model.safetensors", awq())
    m = load_path(tmp_path / "model.safetensors")
    assert m.total == TOTAL and "int4 AWQ (I32)" in m.checkpoint.by_storage()


def bnb4(double_quant=False):
    t = plain_parts()
    for p, out, inp in linears():
        n = out * inp
        t[f"{p}.weight"] = zeros(n // 2, 1, dtype=U8)
        t[f"{p}.weight.quant_map"] = zeros(16, dtype=F32)
        state = json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [out, inp]})
        t[f"{p}.weight.quant_state.bitsandbytes__nf4"] = torch.tensor(list(state.encode()), dtype=U8)
        if double_quant:
            t[f"{p}.weight.absmax"] = zeros(n // 64, dtype=U8)
            t[f"{p}.weight.nested_absmax"] = zeros(max(1, n // 64 // 256), dtype=F32)
            t[f"{p}.weight.nested_quant_map"] = zeros(256, dtype=F32)
        else:
            t[f"{p}.weight.absmax"] = zeros(n // 64, dtype=F32)
    return t


@pytest.mark.parametrize("double_quant", [False, True])
def test_bitsandbytes_4bit(tmp_path, double_quant):
    qc = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    m = write(tmp_path, bnb4(double_quant), qc)
    assert_logical(m, "nf4 bitsandbytes (U8)", LINEAR_TOTAL // 2)
    roles = m.checkpoint.bookkeeping_by_role()
    assert roles["bitsandbytes quant_state"][0] == N_LINEARS and roles["bitsandbytes absmax"][0] == N_LINEARS
    assert ("bitsandbytes nested_absmax" in roles) == double_quant
    q = next(p for p in m.checkpoint.params if p.name == "model.layers.0.mlp.up_proj.weight")
    assert q.shape == (128, 64)  # the packed [n/2, 1] column takes the config's shape


def test_bitsandbytes_4bit_without_config_counts_two_per_byte(tmp_path):
    save(tmp_path / "model.safetensors", bnb4())
    m = load_path(tmp_path / "model.safetensors")
    assert m.total == TOTAL


def test_bitsandbytes_8bit(tmp_path):
    t = plain_parts()
    for p, out, inp in linears():
        t[f"{p}.weight"] = zeros(out, inp, dtype=torch.int8)
        t[f"{p}.SCB"] = zeros(out, dtype=F32)
        t[f"{p}.weight_format"] = torch.tensor(0, dtype=U8)
    m = write(tmp_path, t, {"quant_method": "bitsandbytes", "load_in_8bit": True})
    assert_logical(m, "int8 bitsandbytes (I8)", LINEAR_TOTAL)
    assert m.checkpoint.bookkeeping_by_role()["bitsandbytes SCB (row scales)"][0] == N_LINEARS


def test_mlx_uint32_with_scales_and_biases(tmp_path):
    t = plain_parts()
    quantised = [(p, o, i) for p, o, i in linears()] + [("model.embed_tokens", 64, 64), ("lm_head", 64, 64)]
    for p, out, inp in quantised:
        t[f"{p}.weight"] = zeros(out, inp * 4 // 32, dtype=U32)
        t[f"{p}.scales"] = zeros(out, inp // 64)
        t[f"{p}.biases"] = zeros(out, inp // 64)
    m = write(tmp_path, t, {"group_size": 64, "bits": 4}, key="quantization")
    assert m.total == TOTAL and not [d for d in m.checkpoint.differences if d.kind != "dtype"]
    assert m.checkpoint.by_storage()["int4 MLX (U32)"][:2] == (N_LINEARS + 2, LINEAR_TOTAL + 2 * 64 * 64)
    assert m.checkpoint.bookkeeping_by_role()["MLX biases (per-group offsets)"][0] == N_LINEARS + 2


def test_fp8_block_scaled(tmp_path):
    t = plain_parts(dtype=torch.bfloat16)
    for p, out, inp in linears():
        t[f"{p}.weight"] = zeros(out, inp, dtype=torch.float8_e4m3fn)
        t[f"{p}.weight_scale_inv"] = zeros(-(-out // 128), -(-inp // 128), dtype=F32)
    qc = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    save(tmp_path / "model.safetensors", t)
    write_config(tmp_path, {**TINY_LLAMA, "torch_dtype": "bfloat16", "quantization_config": qc})
    m = load_path(tmp_path)
    assert m.total == TOTAL and m.checkpoint.differences == ()
    assert m.checkpoint.by_storage()["F8_E4M3"] == (N_LINEARS, LINEAR_TOTAL, LINEAR_TOTAL)
    assert m.checkpoint.bookkeeping_by_role()["FP8 weight_scale_inv"][0] == N_LINEARS
    assert "blocks 128×128" in m.checkpoint.quantization


def test_nvfp4_modelopt(tmp_path):
    t = plain_parts()
    for p, out, inp in linears():
        t[f"{p}.weight"] = zeros(out, inp // 2, dtype=U8)
        t[f"{p}.weight_scale"] = zeros(out, inp // 16, dtype=torch.float8_e4m3fn)
        t[f"{p}.weight_scale_2"] = torch.tensor(1.0)
        t[f"{p}.input_scale"] = torch.tensor(1.0)
    m = write(tmp_path, t, {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16})
    assert_logical(m, "fp4 NVFP4 (U8)", LINEAR_TOTAL // 2)
    assert {r for r in m.checkpoint.bookkeeping_by_role()} == {
        "NVFP4 weight_scale",
        "NVFP4 weight_scale_2",
        "NVFP4 input_scale",
    }


def test_compressed_tensors_pack_quantized(tmp_path):
    t = plain_parts()
    for p, out, inp in linears():
        t[f"{p}.weight_packed"] = zeros(out, inp // 8, dtype=I32)
        t[f"{p}.weight_scale"] = zeros(out, inp // 32)
        t[f"{p}.weight_shape"] = torch.tensor([out, inp], dtype=torch.int64)
    qc = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 32}}},
    }
    m = write(tmp_path, t, qc)
    assert_logical(m, "int4 compressed-tensors (I32)", LINEAR_TOTAL // 2)


def test_mxfp4_blocks_and_scales():
    """gpt-oss stores each expert projection as 32-value fp4 blocks plus an E8M0 scale per block."""
    experts, rows, blocks = 4, 96, 90  # hidden 2880 = 90 blocks × 32
    stored = [
        Stored("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", (experts, rows, blocks, 16), 0, 0),
        Stored("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", (experts, rows, blocks), 0, 0),
        Stored("model.layers.0.mlp.experts.gate_up_proj_bias", "BF16", (experts, rows), 0, 0),
    ]
    split = classify(stored, {"quant_method": "mxfp4"})
    params = {p.name: (p.shape, p.count) for p in split.params}
    assert params == {
        "model.layers.0.mlp.experts.gate_up_proj": ((experts, rows, 2880), experts * rows * 2880),
        "model.layers.0.mlp.experts.gate_up_proj_bias": ((experts, rows), experts * rows),
    }
    assert [e.role for e in split.bookkeeping] == ["mxfp4 block scales (E8M0)"]


def test_cli_shows_bookkeeping(tmp_path, capsys):
    from paramcount.cli import main

    write(tmp_path, gptq(), {"quant_method": "gptq", "bits": 4, "group_size": 32})
    assert main([str(tmp_path), "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert f"{TOTAL:,}" in out and "quantisation bookkeeping (not parameters)" in out and "GPTQ g_idx" in out


def test_unmodelled_family_is_counted_from_the_checkpoint_alone(tmp_path):
    """A gpt-oss style folder of a family paramcount does not model (nor transformers): the
    mxfp4 experts still count."""
    experts, rows, blocks = 2, 8, 2
    tensors = {
        "model.embed_tokens.weight": zeros(16, 64, dtype=torch.bfloat16),
        "model.layers.0.mlp.experts.down_proj_blocks": zeros(experts, rows, blocks, 16, dtype=U8),
        "model.layers.0.mlp.experts.down_proj_scales": zeros(experts, rows, blocks, dtype=U8),
        "model.layers.0.mlp.experts.down_proj_bias": zeros(experts, rows, dtype=torch.bfloat16),
    }
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {"model_type": "private_moe", "quantization_config": {"quant_method": "mxfp4"}})
    m = load_path(tmp_path)
    assert m.total == 16 * 64 + experts * rows * blocks * 32 + experts * rows
    assert m.class_name == "checkpoint" and any("counted from the checkpoint alone" in n for n in m.notes)
    assert m.components()["experts"] == experts * rows * (blocks * 32 + 1)


@pytest.mark.parametrize(
    "method, said",
    [
        ("mxfp4", "keeps the experts in MXFP4 on a GPU of compute capability ≥ 7.5"),
        ("fp8", "keeps the weights in FP8 on a GPU of compute capability ≥ 8.9"),
    ],
)
def test_a_plan_of_stored_weights_says_how_transformers_loads_them(tmp_path, method, said):
    """The plan's note says when transformers keeps the checkpoint's quantisation and when it
    dequantises to bf16 (quantizers/quantizer_*.py validate_environment)."""
    from paramcount.memory import inference

    tensors = {"model.embed_tokens.weight": zeros(16, 64, dtype=torch.bfloat16)}
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {"model_type": "private_moe", "quantization_config": {"quant_method": method}})
    plan = inference(load_path(tmp_path))
    assert plan.settings["scheme"] == "stored"
    assert any(said in n and "dequantises them to bf16" in n for n in plan.notes)
    assert not any("dequantises" in n for n in inference(load_path(tmp_path), "bf16").notes)
