"""GGUF quantisation mixes equal llama.cpp's quantiser's, tensor by tensor.

Oracle: tests/fixtures/llamacpp_quant.json, recorded by tools/record_llamacpp.py with
llama-cpp-python 0.3.36's ``llama_model_quantize`` (dry run: every tensor's type as the
quantiser chooses it) on F16 GGUF files of five shapes (GQA and MHA, tied and untied, Gemma 3's
640-wide rows, eight experts, 80 layers) for 27 file types and three ``--pure`` runs. The
plan is made once from the GGUF file and once from the transformers config of the same shape.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.dtypes import DTYPES
from paramcount.gguf import mix as qm
from paramcount.memory.weights.schemes import weights

from .gguf_files import gemma3_spec, llama_spec, write

pytest.importorskip("gguf")
QUANT = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_quant.json").read_text())

# The transformers configs of the fixture's shapes.
CONFIGS = {
    "llama-gqa": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
                  "intermediate_size": 512, "num_hidden_layers": 16, "num_attention_heads": 8,
                  "num_key_value_heads": 2, "vocab_size": 2048, "tie_word_embeddings": False},
    "llama-mha-tied": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
                       "intermediate_size": 768, "num_hidden_layers": 8, "num_attention_heads": 8,
                       "num_key_value_heads": 8, "vocab_size": 2048, "tie_word_embeddings": True},
    "gemma3-640": {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 640,
                   "intermediate_size": 2048, "num_hidden_layers": 6, "num_attention_heads": 4,
                   "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 4096, "sliding_window": 512},
    "moe-8": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 256,
              "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
              "vocab_size": 1024, "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": False},
    "llama-80": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
                 "intermediate_size": 256, "num_hidden_layers": 80, "num_attention_heads": 8,
                 "num_key_value_heads": 2, "vocab_size": 512, "tie_word_embeddings": False},
}  # fmt: skip
# transformers names -> llama.cpp's (convert_hf_to_gguf.py); the fused experts are split in two
_RENAME = [
    (r"model\.embed_tokens\.weight", ["token_embd.weight"]),
    (r"lm_head\.weight", ["output.weight"]),
    (r"model\.norm\.weight", ["output_norm.weight"]),
    (r"self_attn\.(q|k|v)_proj\.weight", ["attn_{0}.weight"]),
    (r"self_attn\.o_proj\.weight", ["attn_output.weight"]),
    (r"self_attn\.(q|k)_norm\.weight", ["attn_{0}_norm.weight"]),
    (r"mlp\.(gate|up|down)_proj\.weight", ["ffn_{0}.weight"]),
    (r"mlp\.experts\.gate_up_proj", ["ffn_gate_exps.weight", "ffn_up_exps.weight"]),
    (r"mlp\.experts\.down_proj", ["ffn_down_exps.weight"]),
    (r"mlp\.gate\.weight", ["ffn_gate_inp.weight"]),
    (r"input_layernorm\.weight", ["attn_norm.weight"]),
    (r"pre_feedforward_layernorm\.weight", ["ffn_norm.weight"]),  # Gemma 3
    (r"post_feedforward_layernorm\.weight", ["post_ffw_norm.weight"]),
]
_POST_ATTENTION = {"gemma3-640": "post_attention_norm.weight"}  # else llama's ffn_norm


def gguf_names(name: str, model: str) -> list[str]:
    """The GGUF names of one transformers tensor (layer ranges expanded)."""
    m = re.match(r"model\.layers\.(\d+)(?:–(\d+))?\.(.*)", name)
    layers, rest = (range(int(m[1]), int(m[2] or m[1]) + 1), m[3]) if m else ([None], name)
    post = (r"post_attention_layernorm\.weight", [_POST_ATTENTION.get(model, "ffn_norm.weight")])
    for pattern, targets in [*_RENAME, post]:
        hit = re.fullmatch(pattern, rest)
        if hit:
            names = [t.format(*hit.groups()) for t in targets]
            return [n if i is None else f"blk.{i}.{n}" for i in layers for n in names]
    return []


def per_tensor(w, rename=lambda n: [n]) -> dict[str, str]:
    out = {}
    for r in w.rows:
        m = re.match(r"blk\.(\d+)(?:–(\d+))?\.(.*)", r.name)
        if m:  # a GGUF row over a run of layers
            out.update({f"blk.{i}.{m[3]}": r.format for i in range(int(m[1]), int(m[2] or m[1]) + 1)})
        else:
            out.update(dict.fromkeys(rename(r.name), r.format))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quant")
    return {name: paramcount.load(str(write(spec, folder / f"{name}.gguf"))) for name, spec in QUANT["models"].items()}


def case_id(c: dict) -> str:
    return f"{c['model']}-{c['ftype']}{'-pure' * c['pure']}"


@pytest.mark.parametrize("case", QUANT["cases"], ids=case_id)
def test_mix_from_a_gguf_file_equals_llama_quantize(files, case):
    spec = QUANT["models"][case["model"]]
    want = {t[0]: typ for t, typ in zip(spec["tensors"], case["types"], strict=True)}
    got = per_tensor(weights(files[case["model"]], case["ftype"].lower(), pure=case["pure"]))
    assert got == want


@pytest.mark.parametrize("case", QUANT["cases"], ids=case_id)
def test_mix_from_a_config_equals_llama_quantize(case):
    spec = QUANT["models"][case["model"]]
    want = {t[0]: typ for t, typ in zip(spec["tensors"], case["types"], strict=True)}
    w = weights(paramcount.load(CONFIGS[case["model"]]), case["ftype"].lower(), pure=case["pure"])
    got = per_tensor(w, lambda name: gguf_names(name, case["model"]))
    tied_output = {"output.weight"} if spec["tensors"][-1][0] != "output.weight" else set()
    assert set(got) - tied_output == set(want)  # a tied head: one table, typed as token_embd
    assert {k: v for k, v in got.items() if k in want} == want


def test_roles_and_what_is_quantised():
    assert [qm.role(n) for n in ("output.weight", "token_embd.weight", "blk.3.attn_qkv.weight")] == [
        "output",
        "token_embd",
        "attn_qkv",
    ]
    assert qm.role("blk.0.ffn_down_exps.weight") == "ffn_down" and qm.role("blk.0.ffn_gate_inp.weight") == "ffn_gate"
    assert not qm.allows_quantization("blk.0.ffn_gate_inp.weight", 2)  # the router stays F32
    assert not qm.allows_quantization("blk.0.attn_norm.weight", 1)
    assert qm.allows_quantization("blk.0.ffn_up_exps.weight", 3)


def test_fallbacks_for_rows_that_do_not_fill_blocks():
    """tensor_type_fallback: 640 = 2.5 blocks of 256; 72 values fit no 32-block either."""
    assert [qm.fallback(t, 640) for t in ("Q4_K", "Q5_K", "Q6_K", "Q2_K", "IQ4_XS")] == [
        "Q5_0", "Q5_1", "Q8_0", "Q4_0", "IQ4_NL"
    ]  # fmt: skip
    assert qm.fallback("Q4_K", 72) == "F16" and qm.fallback("Q4_0", 72) == "F16"


def test_q4_0_file_keeps_the_output_in_q6_k_and_pure_does_not():
    """The issue's −2.9% on an 8B file: llama.cpp's Q4_0 writes output.weight in Q6_K."""
    m = paramcount.load("meta-llama/Llama-3.1-8B")
    mix, pure = weights(m, "q4_0"), weights(m, "q4_0", pure=True)
    head = {r.name: r.format for r in mix.rows}["lm_head.weight"]
    assert head == "Q6_K" and {r.format for r in pure.rows if r.role == "quantised"} == {"Q4_0"}
    assert mix.bytes > pure.bytes and pure.options == "pure"


def test_gemma3_gguf_has_a_mix_now(tmp_path):
    """Gemma 3 270M's 640-wide rows: Q4_K → Q5_0, Q6_K → Q8_0; the tied table takes the
    output rule (Q6_K, but 640 is no multiple of 256: Q8_0); ffn_down's rows are 2,048 wide."""
    path = write(gemma3_spec("g", 6, 640, 4, 1, 256, 2048, 4096), tmp_path / "g.gguf")
    fmt = per_tensor(weights(paramcount.load(str(path)), "q4_k_m"))
    assert fmt["token_embd.weight"] == "Q8_0" and fmt["blk.0.attn_q.weight"] == "Q5_0"
    assert fmt["blk.2.attn_v.weight"] == "Q8_0" and fmt["blk.2.ffn_down.weight"] == "Q6_K"
    assert fmt["blk.1.attn_v.weight"] == "Q5_0" and fmt["blk.1.ffn_down.weight"] == "Q4_K"


def test_cli_pure_and_its_errors(capsys, tmp_path):
    path = write(llama_spec("l", 2, 256, 4, 2, 512, 512), tmp_path / "l.gguf")
    assert main(["memory", str(path), "--dtype", "q4_0", "--pure", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["key"] for p in doc["terms"][0]["parts"]} - {"weights.padding"} == {"weights.Q4_0", "weights.F32"}
    assert main(["memory", "gpt2", "--dtype", "int4", "--pure"]) == 2
    assert "--pure" in capsys.readouterr().err
    with pytest.raises(ParamcountError, match=r"not a llama\.cpp file type"):
        qm.tensor_type("q4_k", qm.Tensor("attn_v", 256), qm.Facts("llama", 1))


# Families whose config path follows llama.cpp's converter (conversion/*.py of llama-cpp-python
# 0.3.36's llama.cpp): each tensor keeps its transformers shape and role. (catalog id, FFN
# matrices per layer as transformers holds them: GLM-4's gate_up_proj is llama.cpp's one
# ffn_up of n_ff*2 rows; OLMoE's fused experts.gate_up_proj is the ffn_gate_exps and
# ffn_up_exps llama.cpp stacks, each half the rows, the row length (ne0) the same.)
FAMILIES = {
    "ibm-granite/granite-3.3-8b-instruct": 3, "allenai/OLMo-2-1124-7B": 3, "allenai/Olmo-3-1025-7B": 3,
    "HuggingFaceTB/SmolLM3-3B": 3, "ByteDance-Seed/Seed-OSS-36B-Instruct": 3, "baidu/ERNIE-4.5-0.3B-PT": 3,
    "LGAI-EXAONE/EXAONE-4.0-32B": 3, "CohereForAI/c4ai-command-r-v01": 3,
    "CohereForAI/c4ai-command-r7b-12-2024": 3, "THUDM/GLM-4-9B-0414": 2,
    "stabilityai/stablelm-2-1_6b": 3,
    "ministral3 (Ministral-3-3B's text config)": 3,
    "allenai/OLMoE-1B-7B-0924": {"gate_up_proj": 16, "down_proj": 16, "router": 16},
    # MoE layouts, FFN matrices counted by module over the model (transformers' names), and the
    # routers, F32: GraniteMoE's router → ffn_gate_inp; ERNIE 4.5's gate → ffn_gate_inp and its
    # moe_statics.e_score_correction_bias → exp_probs_b.bias; Qwen1.5-MoE's (1, 2048)
    # shared_expert_gate → ffn_gate_inp_shexp (one ggml dimension: llama-quantize leaves it).
    # ERNIE: layer 0 dense; experts.down_proj, shared_experts.down_proj and the dense one share
    # the module name down_proj (llama.cpp's ffn_down_exps, ffn_down_shexp, ffn_down).
    "ibm-granite/granite-3.1-3b-a800m-instruct": {"gate_up_proj": 32, "down_proj": 32, "router": 32},
    "baidu/ERNIE-4.5-21B-A3B-PT": {"gate_up_proj": 27, "down_proj": 1 + 27 + 27, "gate_proj": 28,
                                   "up_proj": 28, "router": 27 + 27},
    "Qwen/Qwen1.5-MoE-A2.7B": {"gate_up_proj": 24, "down_proj": 48, "gate_proj": 24, "up_proj": 24,
                               "router": 48},
}  # fmt: skip
# llama.cpp's tensor_type_fallback for rows that are not whole 256-blocks (all fit 32-blocks here)
_QUANTISED = {
    "embed_tokens",
    "lm_head",
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    "gate_up_proj",
}
_NOT_256 = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}


def _more_bits(i: int, n: int) -> bool:  # llama.cpp's use_more_bits
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _want(ftype: str, module: str, i: int, n: int, gqa: int, tied: bool) -> str:
    """The type llama-quantize gives a dense-rule tensor (no 8-expert, 70B or Falcon rule applies)."""
    default = {"q4_k_m": "Q4_K", "q4_0": "Q4_0", "iq4_xs": "IQ4_XS"}[ftype]
    if module == "lm_head" or (module == "embed_tokens" and tied):
        return "Q6_K"  # the output rule; a tied table takes it
    if module == "v_proj":
        if ftype == "q4_k_m":
            return "Q6_K" if _more_bits(i, n) else default
        return "Q5_K" if ftype == "iq4_xs" and gqa >= 4 else default
    if module == "down_proj":
        if ftype == "q4_k_m":
            return "Q6_K" if _more_bits(i, n) else default
        return "Q5_K" if ftype == "iq4_xs" and i < n // 8 else default
    return default


def _per_layer(w) -> list[tuple[object, int | None, int]]:
    """(row, layer, tensors of the row at that layer) for each row of the plan, layer ranges expanded."""
    out = []
    for r in w.rows:
        m = re.search(r"\.layers\.(\d+)(?:–(\d+))?\.", r.name)
        layers = range(int(m[1]), int(m[2] or m[1]) + 1) if m else [None]
        out.extend((r, i, r.count // len(layers)) for i in layers)
    return out


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0", "iq4_xs"])
@pytest.mark.parametrize("model_id", list(FAMILIES))
def test_mix_for_the_converter_mapped_families(model_id, ftype):
    source = model_id
    if model_id.startswith("ministral3 "):  # Ministral3ForCausalLM: the composite's text model
        text = paramcount.load("mistralai/Ministral-3-3B-Reasoning-2512").config["text_config"]
        source = {**text, "architectures": ["Ministral3ForCausalLM"]}
    m = paramcount.load(source)
    c = m.config
    n, heads = c["num_hidden_layers"], c["num_attention_heads"]
    gqa = heads // (c.get("num_key_value_heads") or heads)
    w = weights(m, ftype)
    tied = any(r.role == "tied" for r in w.rows)
    assert tied == bool(c.get("tie_word_embeddings", False))
    total, counts, routers = 0, {}, 0
    for r, i, per in _per_layer(w):
        module = re.sub(r"\.(weight|bias)$", "", r.name).rsplit(".", 1)[-1]  # experts.down_proj: down_proj
        elements = math.prod(r.shape)
        if r.role == "tied":
            assert module == "lm_head" and r.format == "tied"
            continue
        if r.role != "quantised":  # norms, biases, routers, 1-D tensors: F32 as the converter writes them
            assert r.format == "F32" and (len(r.shape) == 1 or r.kind in ("norms", "router")), r.name
            routers += per * (r.kind == "router")
            total += per * elements * 4
            continue
        assert module in _QUANTISED, r.name  # nothing else is: no norm, bias or router
        want = _want(ftype, module, i or 0, n, gqa, tied)
        want = _NOT_256.get(want, want) if r.shape[-1] % 256 else want  # ne0: the row length
        assert r.format == want, (r.name, i)
        counts[module] = counts.get(module, 0) + per
        total += per * elements // DTYPES[want].elements * DTYPES[want].bytes
    assert w.bytes == total
    # llama.cpp's tensor list: token_embd (+ output), and per layer attn_q/k/v/output and the FFN
    assert counts.pop("embed_tokens") == 1 and counts.pop("lm_head", 0) == (0 if tied else 1)
    assert counts.pop("q_proj") == counts.pop("k_proj") == counts.pop("v_proj") == counts.pop("o_proj") == n
    want = FAMILIES[model_id]
    if isinstance(want, dict):
        assert {**counts, "router": routers} == want
    else:
        assert sum(counts.values()) == want * n and all(v == n for v in counts.values()) and routers == 0


def test_a_family_not_mapped_still_refuses_in_one_line(capsys):
    assert main(["memory", "google-t5/t5-small", "--dtype", "q4_k_m", "--runtime", "llama.cpp"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not 't5'" in err and "\n" not in err
    with pytest.raises(ParamcountError, match="not 'bert'"):
        weights(paramcount.load("google-bert/bert-base-uncased"), "q4_k_m")


def test_stablelm_with_per_head_qk_norms_is_refused(capsys):
    """llama.cpp's StableLMModel.modify_tensors ``return``s the stacked q/k norms from a
    generator: they are never written, and prepare_tensors stops with 'Unprocessed norms'."""
    config = {"architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "hidden_size": 256,
              "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
              "num_key_value_heads": 2, "vocab_size": 1024, "qk_layernorm": True}  # fmt: skip
    with pytest.raises(ParamcountError, match="fails on StableLM's per-head q/k norms"):
        weights(paramcount.load(config), "q4_k_m")
    w = weights(paramcount.load({**config, "qk_layernorm": False}), "q4_k_m")
    assert {r.format for r in w.rows if r.name == "lm_head.weight"} == {"Q6_K"}  # the mix's output rule


# Gemma3ForConditionalGeneration (gemma.py in llama.cpp's converter): the language-model file is
# Gemma3Model's (``language_model.`` stripped, vision tower and projector dropped, no lm_head),
# the vision tower and projector are Gemma3VisionModel's mmproj file, which llama-quantize never
# touches: ``.embeddings.`` tensors F32, the input projection F16, 1-D tensors F32, the other 2-D
# weights in the default --outtype auto (the checkpoint's bf16).
_GEMMA3_MMPROJ = {
    "embeddings.patch_embedding.weight": "F32", "embeddings.patch_embedding.bias": "F32",
    "embeddings.position_embedding.weight": "F32", "post_layernorm.weight": "F32", "post_layernorm.bias": "F32",
    **{f"self_attn.{p}_proj.weight": "BF16" for p in ("q", "k", "v", "out")},
    **{f"self_attn.{p}_proj.bias": "F32" for p in ("q", "k", "v", "out")},
    "mlp.fc1.weight": "BF16", "mlp.fc2.weight": "BF16", "mlp.fc1.bias": "F32", "mlp.fc2.bias": "F32",
    **{f"layer_norm{i}.{p}": "F32" for i in (1, 2) for p in ("weight", "bias")},
    "mm_input_projection_weight": "F16", "mm_soft_emb_norm.weight": "F32",
}  # fmt: skip


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0"])
def test_gemma3_composite_is_two_files(ftype):
    m = paramcount.load("google/gemma-3-4b-it")
    w = weights(m, ftype)
    vision = [r for r in w.rows if r.name.startswith(("model.vision_tower.", "model.multi_modal_projector."))]
    lm = [r for r in w.rows if r not in vision]
    # the mmproj file, tensor by tensor (27 SigLIP layers), in the converter's types
    seen = {}
    for r in vision:
        key = re.sub(r"^model\.(vision_tower\.(encoder\.layers\.[0-9–]+\.)?|multi_modal_projector\.)", "", r.name)
        assert r.role == "not quantised" and r.format == _GEMMA3_MMPROJ[key], r.name
        seen[key] = seen.get(key, 0) + r.count
    assert set(seen) == set(_GEMMA3_MMPROJ)
    assert all(n == (1 if k.startswith(("embeddings.", "post_", "mm_")) else 27) for k, n in seen.items())
    mmproj = sum(r.count * math.prod(r.shape) * DTYPES[r.format].bytes for r in vision)
    # the language-model file: exactly gemma3_text's mix for the same text config
    text = paramcount.load({**m.config["text_config"], "architectures": ["Gemma3ForCausalLM"]})
    tw = weights(text, ftype)
    strip = lambda n: n.replace("model.language_model.", "model.")  # noqa: E731
    assert [(strip(r.name), r.count, r.format, r.bytes) for r in lm] == [
        (r.name, r.count, r.format, r.bytes) for r in tw.rows
    ]
    lm_bytes = sum(r.bytes for r in lm)
    assert {r.format for r in lm if "v_proj" in r.name} == ({"Q4_K", "Q6_K"} if ftype == "q4_k_m" else {"Q4_0"})
    assert [r.format for r in lm if r.name.endswith("embed_tokens.weight")] == ["Q6_K"]  # tied: the output rule
    assert w.bytes == lm_bytes + mmproj == tw.bytes + mmproj
    assert (
        "encoder towers (vision, and audio where the model has one) and projector as the mmproj file's"
        in w.term().assumption
    )
    f16 = weights(paramcount.load({**m.config, "torch_dtype": "float16"}), ftype)  # --outtype auto: F16
    assert {r.format for r in f16.rows if r.name.endswith("mlp.fc1.weight")} == {"F16"} and f16.bytes == w.bytes


def test_composite_not_verified_still_refuses_in_one_line(capsys):
    config = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
              "text_config": {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
                              "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1024},
              "vision_config": {"model_type": "clip_vision_model", "hidden_size": 128, "intermediate_size": 256,
                                "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 224,
                                "patch_size": 14}}  # fmt: skip
    with pytest.raises(ParamcountError, match=r"'llava' config: vision_config\.model_type 'clip_vision_model'") as e:
        weights(paramcount.load(config), "q4_k_m")
    assert "\n" not in str(e.value)


def test_gemma3_from_a_config_is_an_upper_bound():
    """llama.cpp's converter drops the token embedding's rows past the tokenizer's vocabulary for
    Gemma 3 (Gemma3Model.modify_tensors), which a config does not give: the config's plan says
    it is an upper bound; other families' plans from a config stay exact."""
    from paramcount.memory.weights.schemes import weights

    for name in ("google/gemma-3-1b-pt", "google/gemma-3-4b-it"):
        term = weights(paramcount.load(name), "q4_k_m").term()
        assert term.estimate and "tokenizer's rows" in term.assumption
    assert not weights(paramcount.load("Qwen/Qwen2.5-0.5B"), "q4_k_m").term().estimate
    assert not weights(paramcount.load("google/gemma-3-1b-pt"), "bf16").term().estimate
