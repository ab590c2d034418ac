"""The rope tables llama.cpp's converter computes and writes as tensors, in mixes planned from a
config, for the families whose converter does it with no other change to the model's tensors.

The expected side is the converter's (conversion/*.py of llama-cpp-python 0.3.36's llama.cpp),
written here from the config alone: the checkpoint's tensors as each class hands them to gguf-py
(LlamaModel, SmolLM3Model, Exaone4Model and Phi3MiniModel change no shapes), preceded by what
its ``generate_extra_tensors`` yields (``ModelBase.prepare_tensors`` chains them first):

* llama3 rope scaling: ``rope_freqs``, one F32 factor per ``torch.arange(0, head_dim, 2)``
  (LlamaModel; Exaone4Model has its own copy of the rule);
* a ``long_factor``: ``rope_factors_long`` and ``rope_factors_short``, one F32 value per factor
  given (Phi3MiniModel, which raises unless there are ``rope_dims / 2`` of them).

Names come from gguf-py's tensor mapping, types from llama-quantize's rules as
tests/test_quant_mix_moe.py restates them; a GGUF file with the same tensors plans the same.
"""

from __future__ import annotations

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.memory.weights.schemes import weights

from .gguf_files import llama_spec, write
from .test_quant_mix_moe import (
    LLAMA3_ROPE,
    Tensors,
    _attention,
    _llama3_rope,
    _mlp,
    _norms,
    expected,
    file_bytes,
    planned,
)

gguf = pytest.importorskip("gguf")
T = gguf.MODEL_TENSOR


def _head(c: dict) -> int:
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def _lm_head(c: dict, h: int) -> Tensors:
    yield "model.norm.weight", (h,)
    if not c.get("tie_word_embeddings"):
        yield "lm_head.weight", (c["vocab_size"], h)


def llama(c: dict) -> Tensors:
    """llama.py LlamaModel (and SmolLM3Model): the checkpoint's tensors, q/k permuted in place."""
    h, a, kv = c["hidden_size"], c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
    yield from _llama3_rope(c)
    yield "model.embed_tokens.weight", (c["vocab_size"], h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, _head(c))
        yield from _mlp(f"{p}mlp.", h, c["intermediate_size"])
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield from _lm_head(c, h)


def exaone4(c: dict) -> Tensors:
    """exaone.py Exaone4Model: post-norms and per-head q/k norms; its own llama3 rule."""
    h, a, kv, d = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], _head(c)
    yield from _llama3_rope(c)
    yield "model.embed_tokens.weight", (c["vocab_size"], h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d)
        yield from _norms(f"{p}self_attn.", d, "q_norm", "k_norm")
        yield from _mlp(f"{p}mlp.", h, c["intermediate_size"])
        yield from _norms(p, h, "post_attention_layernorm", "post_feedforward_layernorm")
    yield from _lm_head(c, h)


def phi3(c: dict) -> Tensors:
    """phi.py Phi3MiniModel: no modify_tensors (qkv_proj and gate_up_proj stay fused)."""
    h, a, kv, inter = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    d = _head(c)
    rope = c.get("rope_scaling") or {}
    if rope.get("long_factor"):
        yield "rope_factors_long.weight", (len(rope["long_factor"]),)
        yield "rope_factors_short.weight", (len(rope["short_factor"]),)
    yield "model.embed_tokens.weight", (c["vocab_size"], h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield f"{p}self_attn.qkv_proj.weight", ((a + 2 * kv) * d, h)
        yield f"{p}self_attn.o_proj.weight", (h, a * d)
        yield from ((f"{p}mlp.gate_up_proj.weight", (2 * inter, h)), (f"{p}mlp.down_proj.weight", (h, inter)))
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield from _lm_head(c, h)


EXAONE_ROPE = {**LLAMA3_ROPE, "factor": 16.0}  # EXAONE 4.0's published rope scaling
# Phi-3-mini-128k's kind of rope scaling: one factor per rotary pair (head 96: 48 each)
LONGROPE_96 = {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}

# (source, overrides, converter tensors, gguf-py architecture, what the converter adds)
CASES = {
    "Llama-3.1-8B": ("meta-llama/Llama-3.1-8B", {}, llama, "LLAMA", {"rope_freqs.weight": (64,)}),
    "Llama-3.2-1B (tied)": ("meta-llama/Llama-3.2-1B", {}, llama, "LLAMA", {"rope_freqs.weight": (32,)}),
    "Meta-Llama-3-8B (no scaling)": ("meta-llama/Meta-Llama-3-8B", {}, llama, "LLAMA", {}),
    "Mistral-7B, llama3 rope": ("mistralai/Mistral-7B-v0.3", {"rope_scaling": LLAMA3_ROPE}, llama, "LLAMA",
                                {"rope_freqs.weight": (64,)}),
    "SmolLM3-3B, llama3 rope": ("HuggingFaceTB/SmolLM3-3B", {"rope_scaling": LLAMA3_ROPE}, llama, "SMOLLM3",
                                {"rope_freqs.weight": (64,)}),
    "EXAONE-4.0-32B, llama3 rope": ("LGAI-EXAONE/EXAONE-4.0-32B", {"rope_scaling": EXAONE_ROPE}, exaone4, "EXAONE4",
                                    {"rope_freqs.weight": (64,)}),
    "Phi-3-mini, longrope": ("microsoft/Phi-3-mini-4k-instruct", {"rope_scaling": LONGROPE_96}, phi3, "PHI3",
                             {"rope_factors_long.weight": (48,), "rope_factors_short.weight": (48,)}),
    "Phi-3-mini-4k (no scaling)": ("microsoft/Phi-3-mini-4k-instruct", {}, phi3, "PHI3", {}),
}  # fmt: skip


def _load(source: str, overrides: dict):
    m = paramcount.load(source)
    return paramcount.load({**m.config, **overrides}) if overrides else m


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0", "iq4_xs"])
@pytest.mark.parametrize("case", list(CASES))
def test_rope_tables_are_in_the_planned_file(case, ftype):
    source, overrides, convert, arch_name, added = CASES[case]
    m = _load(source, overrides)
    c = {**m.config}
    tensors = list(convert(c))
    arch = gguf.MODEL_ARCH[arch_name]
    n_layer = c["num_hidden_layers"]
    facts = {"n_layer": n_layer, "n_gqa": c["num_attention_heads"] // c["num_key_value_heads"], "n_expert": 0}
    want = expected(arch, tensors, ftype, facts)
    w = weights(m, ftype)
    got = planned(arch, w, n_layer)
    assert set(got) == set(want)
    assert {k: v for k, v in got.items() if v != want[k]} == {}
    assert w.bytes == file_bytes(want)
    # what the converter computes, by gguf-py's own names: F32 tables outside the blocks
    tables = {gguf.TENSOR_NAMES[t] + ".weight" for t in (T.ROPE_FREQS, T.ROPE_FACTORS_LONG, T.ROPE_FACTORS_SHORT)}
    assert {k: v for k, v in got.items() if k in tables} == {k: (shape, "F32") for k, shape in added.items()}
    assert w.parameters - m.total == sum(n for (n,) in added.values())
    assert ("computed by the converter from the rope scaling" in w.term().assumption) == bool(added)


def test_llama_3_1_8b_is_256_bytes_more_than_its_model():
    """rope_freqs: head_dim 128 → 64 F32 values, 256 B, in every llama.cpp file type."""
    m = paramcount.load("meta-llama/Llama-3.1-8B")
    plain = paramcount.load({**m.config, "rope_scaling": None})
    for ftype in ("q4_k_m", "q8_0", "q2_k"):
        assert weights(m, ftype).bytes - weights(plain, ftype).bytes == 64 * 4
    assert weights(m, "q4_k").bytes == weights(plain, "q4_k").bytes  # a single type is not a converted file


def _llama3_pair() -> tuple[dict, dict]:
    """A small llama config with llama3 rope scaling, and the GGUF file's spec of the same shape."""
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
         "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
         "tie_word_embeddings": False, "rope_scaling": LLAMA3_ROPE}  # fmt: skip
    spec = llama_spec("llama3-rope", 4, 256, 4, 2, 512, 512)
    spec["tensors"].insert(0, ["rope_freqs.weight", [32], "F32"])
    return c, spec


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0", "q8_0"])
def test_gguf_and_config_agree_on_rope_freqs(tmp_path, ftype):
    """The file lists rope_freqs among its tensors: planned once, as the config's plan has it."""
    c, spec = _llama3_pair()
    g = paramcount.load(str(write(spec, tmp_path / "llama3.gguf")))
    from_file, from_config = weights(g, ftype), weights(paramcount.load(c), ftype)
    assert [r.name for r in from_file.rows].count("rope_freqs.weight") == 1
    assert from_file.bytes == from_config.bytes and from_file.parameters == from_config.parameters
    assert g.total == paramcount.load(c).total + 32  # the file's count holds the table once


@pytest.mark.parametrize(
    "source,overrides,words",
    [
        ("ibm-granite/granite-3.3-8b-instruct", {"rope_scaling": LLAMA3_ROPE}, "GraniteModel"),
        ("ibm-granite/granite-3.1-3b-a800m-instruct", {"rope_scaling": LLAMA3_ROPE}, "GraniteMoeModel"),
        (
            "microsoft/Phi-3-mini-4k-instruct",
            {"rope_scaling": {**LONGROPE_96, "long_factor": [1.0] * 64, "short_factor": [1.0] * 64}},
            "needs 48",
        ),
    ],
    ids=["granite", "granitemoe", "phi3-factors"],
)
def test_conversions_that_fail_are_refused(source, overrides, words):
    """gguf-py's GRANITE and GRANITE_MOE tensor lists lack ROPE_FREQS (format_tensor_name raises);
    Phi3MiniModel raises unless long_factor has rope_dims / 2 values."""
    arch = {"GraniteModel": "GRANITE", "GraniteMoeModel": "GRANITE_MOE"}.get(words)
    if arch:
        assert T.ROPE_FREQS not in gguf.MODEL_TENSORS[gguf.MODEL_ARCH[arch]]
    m = _load(source, overrides)
    with pytest.raises(ParamcountError, match="use a single GGUF type such as q4_k") as e:
        weights(m, "q4_k_m")
    assert words in str(e.value) and "\n" not in str(e.value)
    assert weights(m, "q4_k").bytes > 0
    plain = _load(source, {"rope_scaling": None})
    assert weights(plain, "q4_k_m").parameters == plain.total  # without the scaling: the model's own tensors
