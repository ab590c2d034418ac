"""The ``mxfp4_moe`` file type (LLAMA_FTYPE_MOSTLY_MXFP4_MOE), from a config and from a GGUF file.

Restated from src/llama-quant.cpp (llama-cpp-python 0.3.36), ``llama_tensor_get_type_impl``:
the output head (or a tied token embedding) is Q8_0; otherwise a tensor with ``ne[2] > 1``
("MoE tensors") is MXFP4 and every other one, the token embedding included, Q8_0 (on
bailingmoe3 only the ffn roles count as MoE); ``tensor_type_fallback`` then turns a row that
does not fill 32-value blocks into F16. ``--pure`` gives every quantisable tensor MXFP4
(``llama_ftype_get_default_type``). The converter's tensors, their GGUF names and the F32 rule
are tests/test_quant_mix_moe.py's.
"""

from __future__ import annotations

import pytest

import paramcount
from paramcount.memory.weights.schemes import weights

from .gguf_files import llama_spec, name_map, write
from .test_quant_mix_moe import (
    CONVERTER_F32,
    allows_quantization,
    category,
    deepseek2,
    file_bytes,
    glm4_moe,
    gpt_oss,
    n_dims,
    planned,
)

gguf = pytest.importorskip("gguf")


def mxfp4_moe(name: str, shape: tuple[int, ...], tied: bool) -> str:
    ne = tuple(reversed(shape))
    if category(name) == "output" or (tied and name == "token_embd.weight"):
        t = "Q8_0"
    else:
        t = "MXFP4" if len(ne) > 2 and ne[2] > 1 else "Q8_0"
    return t if ne[0] % 32 == 0 else "F16"


def expected(arch, tensors, n_layer: int) -> dict[str, tuple[tuple[int, ...], str]]:
    tmap = name_map(arch, n_layer)
    found = {}
    for hf, shape in tensors:
        key, name = tmap.get_type_and_name(hf, try_suffixes=(".weight", ".bias"))
        found[name] = (shape, key)
    tied = "output.weight" not in found
    out = {}
    for name, (shape, key) in found.items():
        f32 = n_dims(shape) <= 1 or name.endswith("_norm.weight") or key in CONVERTER_F32 or not name.endswith("weight")
        out[name] = (
            shape,
            mxfp4_moe(name, shape, tied) if allows_quantization(name, shape) else "F32" if f32 else "BF16",
        )
    return out


CASES = {
    "gpt-oss-20b": ("openai/gpt-oss-20b", gpt_oss, "GPT_OSS"),
    "DeepSeek-V2-Lite": ("deepseek-ai/DeepSeek-V2-Lite", deepseek2, "DEEPSEEK2"),
    "GLM-4.5-Air": ("zai-org/GLM-4.5-Air", glm4_moe, "GLM4_MOE"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mxfp4_moe_from_a_config_is_the_converted_file_quantised(case):
    source, convert, arch_name = CASES[case]
    m = paramcount.load(source)
    c = {**m.config}
    tensors = list(convert(c))
    arch = gguf.MODEL_ARCH[arch_name]
    n_layer = c["num_hidden_layers"] + c.get("num_nextn_predict_layers", 0)
    want = expected(arch, tensors, n_layer)
    w = weights(m, "mxfp4_moe")
    got = planned(arch, w, n_layer)
    assert {k: v for k, v in got.items() if v != want.get(k)} == {}
    assert set(got) == set(want) and w.bytes == file_bytes(want)


def test_mla_heads_are_mxfp4_too():
    """attn_k_b (n_head × kv_lora_rank × qk_nope) has ne[2] = n_head > 1: llama.cpp's rule
    treats it as a MoE tensor (it special-cases only bailingmoe3)."""
    w = weights(paramcount.load("deepseek-ai/DeepSeek-V2-Lite"), "mxfp4_moe")
    fmt = {r.name.rsplit(".", 2)[-2]: r.format for r in w.rows if r.name.endswith("_proj.weight")}
    assert fmt["k_b_proj"] == fmt["v_b_proj"] == "MXFP4" and fmt["q_proj"] == "Q8_0"
    assert next(r.format for r in w.rows if r.name == "model.embed_tokens.weight") == "Q8_0"


def test_a_gguf_file_and_its_config_agree(tmp_path):
    """An F16 Mixtral-style file (eight experts of 256 × 256) requantised to mxfp4_moe, and the
    same shape's mixtral config: experts MXFP4, every other matrix Q8_0."""
    spec = llama_spec("moe-f16", 4, 256, 8, 2, 256, 1024, experts=8, used=2)
    g = weights(paramcount.load(str(write(spec, tmp_path / "moe.gguf"))), "mxfp4_moe")
    want = {}
    for name, shape, _ in spec["tensors"]:
        quantised = allows_quantization(name, tuple(shape))
        want[name] = mxfp4_moe(name, tuple(shape), False) if quantised else "F32"
    got = {}
    for r in g.rows:
        got.setdefault(r.format, 0)
        got[r.format] += r.count
    counts = {}
    for t in want.values():
        counts[t] = counts.get(t, 0) + 1
    assert got == counts and counts["MXFP4"] == 4 * 3
    config = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 256,
              "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
              "vocab_size": 1024, "num_local_experts": 8, "num_experts_per_tok": 2,
              "tie_word_embeddings": False}  # fmt: skip
    assert weights(paramcount.load(config), "mxfp4_moe").bytes == g.bytes


def test_pure_mxfp4_moe_is_mxfp4_everywhere():
    w = weights(paramcount.load("openai/gpt-oss-20b"), "mxfp4_moe", pure=True)
    assert {r.format for r in w.rows if r.role == "quantised"} == {"MXFP4"}
