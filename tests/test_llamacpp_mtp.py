"""Multi-token-prediction blocks in llama.cpp's runtime plan: not loaded, no KV cache.

Restated from llama.cpp's source (llama-cpp-python 0.3.36):

* ``llama_model::load_hparams`` reads ``nextn_predict_layers`` for every architecture, and
  ``llama_hparams::n_layer()`` is ``block_count − nextn_predict_layers``;
* each architecture's ``load_arch_tensors`` (src/models/glm4-moe.cpp, deepseek2.cpp,
  glm-dsa.cpp, …) creates the blocks from ``n_layer()`` on with TENSOR_SKIP unless
  ``load_mtp``, which ``llama_model_default_params`` sets false (common.cpp sets it only for
  ``--spec-type draft-mtp``); ``llama_model_loader::create_tensor`` then creates no tensor and
  takes its bytes out of the model's size;
* ``llama_model::create_memory`` keeps KV for ``il < n_layer()`` only (the filter it passes
  ``llama_kv_cache`` when ``n_layer_nextn > 0``).

The expected side is the file's tensors (a GGUF spec, or the converter's tensors of a config
as tests/test_quant_mix_moe.py writes them from glm.py Glm4MoeModel), less its last blocks,
in gguf-py's block sizes.
"""

from __future__ import annotations

import math

import pytest

import paramcount
from paramcount.memory import inference

from .gguf_files import write
from .test_quant_mix_moe import expected, glm4_moe

gguf = pytest.importorskip("gguf")


def nbytes(shape, qtype: str) -> int:
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
    return math.prod(shape) // block * size


def plan(model, scheme=None, context: int = 512):
    return inference(model, scheme, context=context, runtime="llama.cpp", device="cpu")


def terms(p) -> dict:
    return {t.key: t for t in p.terms}


H, HEADS, RANK, ROPE, NOPE, V, FF, VOCAB = 64, 4, 32, 16, 32, 32, 128, 256


def deepseek2_spec(layers: int, nextn: int) -> dict:
    """A small deepseek2 file with MLA, as Glm4MoeLiteModel writes GLM-4.7-Flash: its last
    ``nextn`` blocks are the MTP layers (nextn.eh_proj, enorm, hnorm, shared_head_norm)."""
    meta = {
        "context_length": 4096, "embedding_length": H, "block_count": layers + nextn, "feed_forward_length": FF,
        "attention.head_count": HEADS, "attention.head_count_kv": 1, "attention.key_length": RANK + ROPE,
        "attention.value_length": RANK, "attention.key_length_mla": NOPE + ROPE, "attention.value_length_mla": V,
        "attention.kv_lora_rank": RANK, "rope.dimension_count": ROPE, "attention.layer_norm_rms_epsilon": 1e-6,
        "nextn_predict_layers": nextn,
    }  # fmt: skip
    tensors = [["token_embd.weight", [VOCAB, H], "Q8_0"]]
    for i in range(layers + nextn):
        b = f"blk.{i}."
        tensors += [
            [b + "attn_norm.weight", [H], "F32"],
            [b + "attn_q.weight", [HEADS * (NOPE + ROPE), H], "Q8_0"],
            [b + "attn_kv_a_mqa.weight", [RANK + ROPE, H], "Q8_0"],
            [b + "attn_kv_a_norm.weight", [RANK], "F32"],
            [b + "attn_k_b.weight", [HEADS, RANK, NOPE], "Q8_0"],
            [b + "attn_v_b.weight", [HEADS, V, RANK], "Q8_0"],
            [b + "attn_output.weight", [H, HEADS * V], "Q8_0"],
            [b + "ffn_norm.weight", [H], "F32"],
            [b + "ffn_gate.weight", [FF, H], "Q8_0"],
            [b + "ffn_up.weight", [FF, H], "Q8_0"],
            [b + "ffn_down.weight", [H, FF], "Q8_0"],
        ]
        if i >= layers:
            tensors += [
                [b + "nextn.eh_proj.weight", [H, 2 * H], "Q8_0"],
                [b + "nextn.enorm.weight", [H], "F32"],
                [b + "nextn.hnorm.weight", [H], "F32"],
                [b + "nextn.shared_head_norm.weight", [H], "F32"],
            ]
    tensors += [["output_norm.weight", [H], "F32"], ["output.weight", [VOCAB, H], "Q8_0"]]
    return {"name": "ds2-mtp", "arch": "deepseek2", "meta": meta, "tensors": tensors, "vocab": VOCAB}


def test_gguf_mtp_block_has_no_kv_and_is_not_loaded(tmp_path):
    """The MTP block is not loaded; where the file holds it last it is outside the mapped span
    (llama_model_loader::get_mapping_range: from the first loaded tensor to the end of the last),
    where it lies before output_norm and output it is inside it, mapped with the file."""
    layers = 3
    spec = deepseek2_spec(layers, 1)
    mtp = [x for x in spec["tensors"] if x[0].startswith(f"blk.{layers}.")]
    last = {**spec, "tensors": [x for x in spec["tensors"] if x not in mtp] + mtp}
    trunk = [(s, q) for n, s, q in spec["tensors"] if not n.startswith(f"blk.{layers}.")]
    t = terms(plan(paramcount.load(str(write(last, tmp_path / "last.gguf")))))
    assert t["weights"].bytes == sum(nbytes(s, q) for s, q in trunk)
    p = plan(paramcount.load(str(write(spec, tmp_path / "mtp.gguf"))))
    t = terms(p)
    assert t["weights"].bytes == sum(nbytes(s, q) for _, s, q in spec["tensors"])
    assert "the tensors it skips among them" in t["weights"].assumption
    assert "not loaded" in t["weights"].assumption and not t["weights"].estimate
    # the MLA latent of the model's own layers: kv_lora_rank + rope per token, f16, 512 cells
    assert t["kv_cache"].bytes == layers * (RANK + ROPE) * 2 * 512
    assert any("no KV cache" in n for n in p.notes)


def test_gguf_without_mtp_is_unchanged(tmp_path):
    spec = deepseek2_spec(4, 0)
    spec["meta"].pop("nextn_predict_layers")
    t = terms(plan(paramcount.load(str(write(spec, tmp_path / "plain.gguf")))))
    assert t["weights"].bytes == sum(nbytes(s, q) for _, s, q in spec["tensors"])
    assert t["kv_cache"].bytes == 4 * (RANK + ROPE) * 2 * 512 and "not loaded" not in t["weights"].assumption


def test_glm45_air_config_loads_the_trunk_only():
    """GLM-4.5-Air at q4_k_m: the converted file's tensors (Glm4MoeModel, with the MTP layer and
    its copies) typed by llama-quantize over all 47 blocks, of which llama.cpp loads blocks 0–45
    and the tensors outside them; KV for 46 layers of 8 heads × 128, K and V in f16."""
    m = paramcount.load("zai-org/GLM-4.5-Air")
    c = {**m.config}
    n, kv, d = c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]
    tmap_arch = gguf.MODEL_ARCH.GLM4_MOE
    facts = {"n_layer": n + 1, "n_gqa": c["num_attention_heads"] // kv, "n_expert": c["n_routed_experts"]}
    file = expected(tmap_arch, list(glm4_moe(c)), "q4_k_m", facts)
    loaded = {k: v for k, v in file.items() if not k.startswith(f"blk.{n}.")}
    t = terms(plan(m, "q4_k_m", context=4096))
    assert t["weights"].bytes == sum(nbytes(s, q) for s, q in loaded.values())
    # on a CPU the file is mapped: its span holds block 46 where the converter writes it before the
    # last tensor kept (tests/fixtures/llamacpp_hybrid.json's glm4_moe: CPU_Mapped is the whole file),
    # which a config cannot place; on a GPU the loaded blocks are allocated, exactly
    assert t["weights"].estimate and "the mapped span holds them too" in t["weights"].assumption
    gpu = inference(m, "q4_k_m", context=4096, runtime="llama.cpp", device="gpu")
    assert not gpu.term("weights").estimate  # the copies GLM-4.6 lacks are in the block left out
    assert t["kv_cache"].bytes == n * 2 * kv * d * 2 * 4096


def test_qwen35_config_loads_the_trunk_only():
    """Qwen3.5-27B at q4_k_m: the converter writes the checkpoint's MTP layer as block 64 (its
    nextn.* tensors included: tests/test_quant_mix_hybrid.py's file); llama_model_qwen35's
    load_arch_tensors creates it with TENSOR_SKIP, so the loaded weights are the rest."""
    from .test_quant_mix_hybrid import _bytes, _facts, expected_file, expected_types

    m = paramcount.load("Qwen/Qwen3.5-27B")
    file = expected_file("qwen3_5_text", m)
    types = expected_types("q4_k_m", file, _facts("qwen3_5_text", m, file))
    n = m.config["num_hidden_layers"]
    trunk = sum(_bytes(types[k], math.prod(s)) for k, s in file.items() if not k.startswith(f"blk.{n}."))
    t = terms(plan(m, "q4_k_m"))
    assert t["weights"].bytes == trunk and "not loaded" in t["weights"].assumption
