"""GPTQ and AWQ checkpoints as vLLM loads them (paramcount.memory.runtimes.vllm.quant_config, .marlin),
worked out by hand on a tiny Llama config (h 256, 4 heads and 2 KV heads of 64, MLP 512, 2 layers)
and vLLM's source: the quantization_config's bits and group size; the kernel choose_mp_linear_kernel
picks on the GPU (Machete on an H100 where its shapes fit, Marlin on Ampere, the checkpoint's own
layout before SM80); what each kernel's process_weights_after_loading keeps:

- Marlin: a symmetric GPTQ layer's qzeros emptied, g_idx emptied unless desc_act, where
  g_idx_sort_indices (int32, one per input) joins it; act order keeps row-parallel scales whole;
- Machete: GPTQ's qzeros and g_idx stay as loaded (act order adds an int32 permutation); AWQ's
  zero points become −scale × zero, one per group and output in the scales' dtype.
"""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.runtimes import planner

H, HEADS, KV, D, FF, LAYERS = 256, 4, 2, 64, 512, 2
# (N, K) of each linear layer: q, k, v, o, gate, up, down
LINEARS = {
    "q_proj": (HEADS * D, H),
    "k_proj": (KV * D, H),
    "v_proj": (KV * D, H),
    "o_proj": (H, HEADS * D),
    "gate_proj": (FF, H),
    "up_proj": (FF, H),
    "down_proj": (H, FF),
}
ROW = {"o_proj", "down_proj"}


def tiny(tmp_path, **quant) -> paramcount.Model:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": H,
        "intermediate_size": FF,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV,
        "num_hidden_layers": LAYERS,
        "vocab_size": 1024,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "quantization_config": quant,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return paramcount.load(str(path))


GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}


def rank_bytes(m, gpu, **given) -> int:
    return planner(m, None, "vllm", gpu=gpu, **given).stages[0].share.bytes


def qzeros(n: int, k: int, g: int = 128) -> int:
    return k // g * (n * 4 // 32) * 4


def scales(n: int, k: int, g: int = 128) -> int:
    return k // g * n * 2


def test_a_gptq_config_is_planned_at_its_bits_and_group(tmp_path):
    p = planner(tiny(tmp_path, **{**GPTQ, "group_size": 64}), None, "vllm")
    assert p.scheme == "gptq-int4"
    row = next(r for r in p.weights.rows if r.name.endswith("mlp.down_proj.weight"))
    assert next(x for x in row.parts if x.what == "scales").elements == FF // 64 * H


def test_marlin_on_ampere_empties_gptq_zeros_and_g_idx(tmp_path):
    """A100 (SM80, Marlin) against a T4 (SM75, Exllama: the checkpoint as loaded)."""
    m = tiny(tmp_path, **GPTQ)
    dropped = sum(qzeros(n, k) + 4 * k for n, k in LINEARS.values()) * LAYERS
    assert rank_bytes(m, "t4") - rank_bytes(m, "a100-80gb") == dropped


def test_machete_on_hopper_leaves_gptq_as_loaded(tmp_path):
    """Every layer here fits Machete (inputs a multiple of 64, outputs of 128, group 128)."""
    m = tiny(tmp_path, **GPTQ)
    p = planner(m, None, "vllm", gpu="h100")
    assert p.stages[0].share.bytes == rank_bytes(m, "t4")
    assert "Machete" in p.plan(1024).term("weights").assumption


def test_act_order_keeps_g_idx_and_its_sort_indices(tmp_path):
    m = tiny(tmp_path, **{**GPTQ, "desc_act": True})
    dropped = sum(qzeros(n, k) - 4 * k for n, k in LINEARS.values()) * LAYERS  # zeros out, sort indices in
    assert rank_bytes(m, "t4") - rank_bytes(m, "a100-80gb") == dropped


def test_act_order_over_two_ranks(tmp_path):
    """TP 2: g_idx (one per input) is whole on a column-parallel rank under every kernel; with act
    order a row-parallel rank holds all scales (Marlin: marlin_repeat_scales_on_all_ranks) and, on a
    T4, all zeros too (GPTQLinearMethod: scale_and_zero_input_dim None). Marlin (A100) drops the zeros
    and adds g_idx_sort_indices, as g_idx is split."""
    m = tiny(tmp_path, **{**GPTQ, "desc_act": True})
    extra = 0
    for name, (n, k) in LINEARS.items():
        if name in ROW:
            extra += -qzeros(n, k) + 4 * k // 2
        else:
            extra += -qzeros(n, k) // 2 + 4 * k
    assert rank_bytes(m, "a100-80gb", tp=2) - rank_bytes(m, "t4", tp=2) == extra * LAYERS


def test_t4_row_parallel_act_order_holds_every_group(tmp_path):
    """GPTQLinearMethod on a T4 at TP 2: a row-parallel act-order layer's scales and zeros are whole,
    where without act order they are split (column-parallel layers hold g_idx whole either way)."""
    plain, ordered = tiny(tmp_path, **GPTQ), tiny(tmp_path / "..", **{**GPTQ, "desc_act": True})
    extra = 0
    for name, (n, k) in LINEARS.items():
        extra += (scales(n, k) + qzeros(n, k)) // 2 if name in ROW else 0
    assert rank_bytes(ordered, "t4", tp=2) - rank_bytes(plain, "t4", tp=2) == extra * LAYERS


def test_awq_on_hopper_latest_holds_machete_zero_points(tmp_path):
    """The latest AWQMarlinLinearMethod goes through choose_mp_linear_kernel: Machete's zero points
    are fp16, one per group and output; 0.20's own Marlin path repacks them at their size."""
    m = tiny(tmp_path, **AWQ)
    grown = sum(scales(n, k) - qzeros(n, k) for n, k in LINEARS.values()) * LAYERS
    assert rank_bytes(m, "h100") - rank_bytes(m, "t4") == grown
    assert rank_bytes(m, "h100", vllm_version="0.20") == rank_bytes(m, "t4")


def test_awq_modules_to_not_convert_stay_16_bit(tmp_path):
    """is_layer_skipped_awq: 'mlp.down_proj' is part of every layer's down projection's name."""
    m = tiny(tmp_path, **{**AWQ, "modules_to_not_convert": ["mlp.down_proj"]})
    p = planner(m, None, "vllm", gpu="t4")
    row = next(r for r in p.rows if r.name.endswith("mlp.down_proj.weight"))
    assert row.role == "kept" and row.bytes == LAYERS * H * FF * 2
    assert "is_layer_skipped_awq" in p.plan(1024).term("weights").assumption


def test_awq_modules_of_one_layer_are_refused(tmp_path):
    m = tiny(tmp_path, **{**AWQ, "modules_to_not_convert": ["model.layers.1.mlp"]})
    with pytest.raises(ParamcountError, match="some layers only"):
        planner(m, None, "vllm")


@pytest.mark.parametrize("quant", [{**GPTQ, "bits": 3}, {**AWQ, "bits": 8}])
def test_other_bit_widths_are_refused_in_one_line(tmp_path, capsys, quant):
    m = tiny(tmp_path, **quant)
    rc = main(["memory", str(tmp_path / "config.json"), "--runtime", "vllm"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "quantization_config" in err and "bits" in err and "\n" not in err
    assert m.config["quantization_config"]["quant_method"] in err.lower()


def test_a_gptq_scheme_without_a_config_is_held_the_same(tmp_path):
    """--dtype gptq-int4 on an unquantised config: a GPTQ checkpoint of group 128 as Marlin holds it."""
    m = tiny(tmp_path)
    on = {gpu: planner(m, "gptq-int4", "vllm", gpu=gpu).stages[0].share.bytes for gpu in ("t4", "a100-80gb")}
    assert on["t4"] - on["a100-80gb"] == sum(qzeros(n, k) + 4 * k for n, k in LINEARS.values()) * LAYERS


def test_a_stored_gptq_checkpoint_on_ampere(tmp_path):
    """The checkpoint's own tensors (tests/test_quantized.py's GPTQ layout, group 32): Marlin holds
    them less every qzeros and g_idx."""
    from .ckpt import linears
    from .test_quantized import gptq, write

    m = write(tmp_path, gptq(), {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False})
    on = {gpu: planner(m, None, "vllm", gpu=gpu).stages[0].share.bytes for gpu in ("t4", "a100-80gb")}
    dropped = sum(qzeros(out, inp, 32) + 4 * inp for _, out, inp in linears())
    assert on["t4"] - on["a100-80gb"] == dropped


@pytest.mark.parametrize("group", [0, -5, "abc", True, 1 << 40])
def test_a_bad_group_size_is_refused_in_one_line(tmp_path, capsys, group):
    tiny(tmp_path, **{**GPTQ, "group_size": group})
    rc = main(["memory", str(tmp_path / "config.json"), "--runtime", "vllm"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "quantization_config.group_size" in err and "\n" not in err


def test_modules_to_not_convert_that_is_not_a_list_is_refused_in_one_line(tmp_path, capsys):
    tiny(tmp_path, **{**AWQ, "modules_to_not_convert": "visual"})
    rc = main(["memory", str(tmp_path / "config.json"), "--runtime", "vllm"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "modules_to_not_convert must be a list" in err and "\n" not in err


@pytest.mark.parametrize(
    "quant, said",
    [
        ({"quant_method": "compressed-tensors", "format": "float-quantized"}, "'compressed-tensors' is not planned"),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "'bitsandbytes (8-bit)' is not planned"),
        ({"quant_method": "hqq"}, "'hqq' is not planned"),
    ],
)
def test_a_method_vllm_is_not_planned_for_is_refused_not_planned_bf16(tmp_path, capsys, quant, said):
    """Its shapes at bf16 would be marked exact and be wrong: one line, exit 2, naming the field;
    --dtype still plans the shapes at the scheme named."""
    m = tiny(tmp_path, **quant)
    folder = tmp_path / "config.json"
    folder.write_text(json.dumps(m.config))
    rc = main(["memory", str(folder), "--runtime", "vllm", "--gpu", "h100-sxm"])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and "quantization_config.quant_method" in err and err.count("\n") == 1
    assert main(["memory", str(folder), "--runtime", "vllm", "--gpu", "h100-sxm", "--dtype", "bf16"]) == 0
