"""Which weights llama.cpp repacks on a CPU (the CPU_REPACK buffer), from a config and from a
GGUF file of the same shape.

The expected side is llama.cpp's rule, restated from its source (llama-cpp-python 0.3.36) and
applied to the file's tensors by their GGUF names and ggml shapes:

* src/llama-model-loader.cpp ``create_tensor`` puts a weight in the first buffer type of the
  CPU list whose ``supports_op`` takes the op the tensor is used with (src/llama-arch.cpp
  ``LLM_TENSOR_INFOS``): ``token_embd`` is GET_ROWS, the experts MUL_MAT_ID, the other
  weights MUL_MAT;
* ggml-cpu repack.cpp ``extra_buffer_type::supports_op`` takes MUL_MAT of a 2-D weight and
  MUL_MAT_ID of a 3-D one whose ``ggml_repack_get_optimal_repack_type`` exists: on x86 with
  AVX2, Q4_0, Q4_K, IQ4_NL and MXFP4 with ``ne[1] % 8 == 0``;
* without ``output.weight``, the loader creates the output head as ``token_embd`` with
  ``TENSOR_DUPLICATED``, placed as LLM_TENSOR_OUTPUT (MUL_MAT): a second, repacked copy.

Bytes come from gguf-py's block sizes. tests/test_llamacpp.py holds the same rule to the
CPU_REPACK size llama.cpp logged for a Q4_0 file.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import paramcount
from paramcount.memory import inference

from .gguf_files import llama_spec, name_map, write
from .test_quant_mix_moe import deepseek2

gguf = pytest.importorskip("gguf")
REPACKED = ("Q4_0", "Q4_K", "IQ4_NL", "MXFP4")
EXPERTS = re.compile(r"_exps\.weight$")


def nbytes(shape, qtype: str) -> int:
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
    return math.prod(shape) // block * size


def n_dims(shape) -> int:
    ne = list(reversed(shape))
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return len(ne)


def expected_repack(tensors: list[tuple[str, list[int], str]]) -> tuple[int, int]:
    """(tensors, bytes) CPU_REPACK holds for a file's tensors (name, PyTorch-order shape, type)."""
    names = {name for name, _, _ in tensors}
    count = total = 0
    for name, shape, qtype in tensors:
        ne1 = shape[-2] if len(shape) > 1 else 1
        if name == "token_embd.weight":  # GET_ROWS; the output head's copy when the file has none
            op_ok = "output.weight" not in names
        else:
            op_ok = n_dims(shape) == (3 if EXPERTS.search(name) else 2)
        if op_ok and qtype in REPACKED and ne1 % 8 == 0:
            count, total = count + 1, total + nbytes(shape, qtype)
    return count, total


def repack_term(model, scheme=None, pure=False):
    plan = inference(model, scheme, context=512, runtime="llama.cpp", device="cpu", pure=pure)
    return next((t for t in plan.terms if t.key == "repack"), None)


def _config(tied: bool) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 2048, "tie_word_embeddings": tied}  # fmt: skip


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_config_and_gguf_file_repack_the_same_tensors(tmp_path, tied):
    """A Q4_0 file as llama-quantize writes it (q4_0: the output Q6_K; tied: the token embedding
    is the output, Q6_K) and the same shape's config planned at q4_0: one CPU_REPACK size, with
    the token embedding only as the output head's copy."""
    spec = llama_spec("llama-q4_0", 4, 256, 4, 2, 512, 2048, ftype="Q4_0", tied=tied)
    spec["tensors"][0 if tied else -1][2] = "Q6_K"  # the output (or the tied embedding): Q6_K
    want_count, want_bytes = expected_repack(spec["tensors"])
    from_file = repack_term(paramcount.load(str(write(spec, tmp_path / "f.gguf"))))
    from_config = repack_term(paramcount.load(_config(tied)), "q4_0")
    assert from_file.bytes == from_config.bytes == want_bytes
    assert from_file.formula.startswith(f"{want_count} tensors") and from_config.formula.startswith(f"{want_count}")
    assert not from_file.estimate and not from_config.estimate


def test_a_tied_embedding_in_q4_0_is_repacked_as_the_output_head(tmp_path):
    """--pure q4_0 keeps the tied token embedding in Q4_0: llama.cpp reads it with GET_ROWS from
    the mapped file, and its output-head copy lands in CPU_REPACK."""
    spec = llama_spec("llama-pure", 4, 256, 4, 2, 512, 2048, ftype="Q4_0", tied=True)
    want_count, want_bytes = expected_repack(spec["tensors"])
    assert want_count == 4 * 7 + 1  # seven matrices a block, and the copy
    from_file = repack_term(paramcount.load(str(write(spec, tmp_path / "p.gguf"))))
    from_config = repack_term(paramcount.load(_config(True)), "q4_0", pure=True)
    assert from_file.bytes == from_config.bytes == want_bytes
    assert "output head" in from_config.assumption


def test_untied_token_embedding_is_never_repacked():
    """Llama 3.1 8B at q4_0: token_embd is Q4_0 (128,256 rows, a multiple of 8) but GET_ROWS."""
    m = paramcount.load("meta-llama/Llama-3.1-8B")
    term = repack_term(m, "q4_0")
    c = m.config
    h, kv, inter, layers = c["hidden_size"], c["num_key_value_heads"], c["intermediate_size"], c["num_hidden_layers"]
    d = h // c["num_attention_heads"]
    block = [(h, h), (kv * d, h), (kv * d, h), (h, h), (inter, h), (inter, h), (h, inter)]
    assert term.bytes == layers * sum(nbytes(s, "Q4_0") for s in block)  # the output is Q6_K


def test_mla_split_heads_and_experts_from_deepseek_v2_lite():
    """--pure q4_0: attn_k_b and attn_v_b are 3-D weights multiplied by MUL_MAT (per head), which
    the repack buffer does not take; the stacked experts (3-D, MUL_MAT_ID) and the 2-D
    matrices are repacked; token_embd is GET_ROWS. Names from gguf-py's mapping of the
    converter's tensors (DeepseekV2Model), types as --pure q4_0 writes them."""
    m = paramcount.load("deepseek-ai/DeepSeek-V2-Lite")
    tmap = name_map(gguf.MODEL_ARCH.DEEPSEEK2, m.config["num_hidden_layers"])
    tensors = []
    for hf, shape in deepseek2({**m.config}):
        name = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
        quantised = n_dims(shape) >= 2 and not name.endswith(("_norm.weight", "ffn_gate_inp.weight"))
        tensors.append((name, list(shape), "Q4_0" if quantised and shape[-1] % 32 == 0 else "F32"))
    assert any(n.endswith("attn_k_b.weight") and t == "Q4_0" for n, _, t in tensors)
    _, want = expected_repack(tensors)
    assert repack_term(m, "q4_0", pure=True).bytes == want


# ---- the CPU's features: --cpu-features ------------------------------------------------------
# ggml-cpu amx/amx.cpp extra_buffer_type::supports_op and amx/mmq.cpp get_row_size, restated: MUL_MAT
# of a 2-D weight, rows by 32, row length by 32 (Q4_0, Q4_1, Q8_0), 256 (K-quants, IQ4_XS) or 16
# (F16); packed bytes per block beyond the block (Q8_0's int32 compensation; Q4_K/Q5_K 4, IQ4_XS 2).
AMX_ROW = {"Q4_0": 32, "Q4_1": 32, "Q8_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "IQ4_XS": 256, "F16": 16}
AMX_MORE = {"Q8_0": 4, "Q4_K": 4, "Q5_K": 4, "IQ4_XS": 2}


def expected_amx(tensors: list[tuple[str, list[int], str]]) -> tuple[int, int, list[str]]:
    """(tensors, bytes, names) the AMX buffer holds for a file's tensors; the copy of a tied
    token_embd as the output head included."""
    names = {name for name, _, _ in tensors}
    count, total, taken = 0, 0, []
    for name, shape, qtype in tensors:
        matmul = n_dims(shape) == 2 and not EXPERTS.search(name)
        if name == "token_embd.weight":
            matmul = "output.weight" not in names
        if not matmul or qtype not in AMX_ROW or shape[-1] % AMX_ROW[qtype] or shape[-2] % 32:
            continue
        block, _ = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
        size = nbytes(shape, qtype) + math.prod(shape) // block * AMX_MORE.get(qtype, 0)
        count, total = count + 1, total + -(-size // 32) * 32
        taken.append(name)
    return count, total, taken


def cpu_terms(model, cpu: str, scheme=None) -> dict:
    plan = inference(model, scheme, context=512, runtime="llama.cpp", device="cpu", cpu=cpu)
    return {t.key: t for t in plan.terms} | {"notes": plan.notes}


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("ftype", ["Q8_0", "Q4_0"])
def test_amx_takes_the_2d_matrices_and_repack_the_rest(tmp_path, tied, ftype):
    """A Q8_0 or Q4_0 file with 8 experts (3-D: MUL_MAT_ID, which AMX does not take) on a CPU
    with AMX: the 2-D matrices packed in the AMX buffer, the Q4_0 experts in CPU_REPACK."""
    spec = llama_spec("amx", 4, 256, 4, 2, 512, 2048, ftype=ftype, tied=tied, experts=8, used=2)
    count, want, taken = expected_amx(spec["tensors"])
    t = cpu_terms(paramcount.load(str(write(spec, tmp_path / "a.gguf"))), "amx")
    assert t["amx"].bytes == want and t["amx"].formula.startswith(f"{count} tensors")
    rest = [[n, shape, "F32" if n in taken else q] for n, shape, q in spec["tensors"]]  # AMX's not repacked
    _, packed = expected_repack(rest)
    assert (t["repack"].bytes if "repack" in t else 0) == packed
    assert (packed > 0) == (ftype == "Q4_0")  # the stacked experts
    assert any("--cpu-features amx" in n for n in t["notes"])


def test_the_cpu_decides_the_extra_buffers(tmp_path):
    """Q2_K matrices: repacked with AVX-512, not with AVX2; NEON repacks Q8_0 by 4 rows; none
    repacks nothing. The plan says which CPU it assumed."""
    q2 = llama_spec("q2", 2, 256, 4, 2, 512, 2048, ftype="Q2_K")
    q8 = llama_spec("q8", 2, 256, 4, 2, 512, 2048, ftype="Q8_0")
    m2, m8 = (paramcount.load(str(write(s, tmp_path / f"{s['name']}.gguf"))) for s in (q2, q8))
    matrices = [x for x in q2["tensors"] if n_dims(x[1]) == 2 and x[0] != "token_embd.weight" and x[2] == "Q2_K"]
    assert "repack" not in cpu_terms(m2, "avx2")
    assert cpu_terms(m2, "avx512")["repack"].bytes == sum(nbytes(s, q) for _, s, q in matrices)
    q8_mats = [x for x in q8["tensors"] if n_dims(x[1]) == 2 and x[0] != "token_embd.weight" and x[2] == "Q8_0"]
    assert cpu_terms(m8, "neon")["repack"].bytes == sum(nbytes(s, q) for _, s, q in q8_mats)
    none = cpu_terms(m8, "none")
    assert "repack" not in none and "amx" not in none
    assert any("--cpu-features none" in n for n in none["notes"])


def test_cpu_features_flag_is_checked_and_listed(capsys):
    from paramcount.cli import main

    assert main(["memory", "gpt2", "--runtime", "llama.cpp", "--device", "cpu", "--cpu-features", "sse"]) == 2
    assert "--cpu-features" in capsys.readouterr().err
    assert main(["memory", "--help"]) == 0
    assert "--cpu-features {avx2,avx512,amx,neon,none}" in capsys.readouterr().out
    with pytest.raises(paramcount.ParamcountError, match="CPU features are avx2"):
        cpu_terms(paramcount.load("gpt2"), "sse")


# ---- measured on a CPU with AMX ------------------------------------------------------------------
AMX_RUN = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_amx.json").read_text())


@pytest.mark.parametrize("case", AMX_RUN["cases"], ids=lambda c: c["ftype"])
def test_amx_buffers_equal_what_llama_cpp_logged_on_an_amx_cpu(tmp_path, case):
    """tools/record_amx.py: llama.cpp built on an Intel Xeon with AMX logged its AMX and
    CPU_Mapped model buffers (MiB, two decimals) for files of each type the AMX buffer takes."""
    spec = llama_spec(f"amx-{case['ftype'].lower()}", 2, 512, 8, 2, 1536, case["vocab"], ftype=case["ftype"])
    t = cpu_terms(paramcount.load(str(write(spec, tmp_path / "a.gguf"))), "amx")
    logged = case["buffers_mib"]
    assert round(t["amx"].bytes / 2**20, 2) == logged["AMX"]
    assert round(t["weights"].bytes / 2**20, 2) == logged["CPU_Mapped"]
    assert t["amx"].bytes == expected_amx(spec["tensors"])[1]
