"""llama.cpp mixes from a config for families whose converter writes other tensors than the
transformers model has (MLA, MoE with score-correction biases, MTP layers, fused experts).

The expected side is written here from llama.cpp's converter (conversion/*.py of
llama-cpp-python 0.3.36's llama.cpp), independently of paramcount's trees: for each family,
the tensors its class hands to gguf-py (after its own merges and splits), with their shapes
read from the config, mapped to GGUF names by gguf-py's ``TensorNameMap``; the converter's F32
rule (``ModelBase.prepare_tensors``); and llama-quantize's choice for each (``src/llama-quant.cpp``
``tensor_allows_quantization``, ``tensor_get_category``, ``llama_tensor_get_type_impl`` and
``tensor_type_fallback``, for q4_k_m, q4_0 and iq4_xs without an importance matrix), with the
counters in llama.cpp's order (by block, then name). The plan's rows are mapped through gguf-py
too, and the two are compared tensor by tensor: name, shape and type; then the bytes, from
gguf-py's own block sizes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.weights.schemes import weights

from .gguf_files import name_map

gguf = pytest.importorskip("gguf")
T = gguf.MODEL_TENSOR
Shape = tuple[int, ...]
Tensors = Iterator[tuple[str, Shape]]


# --- what each converter class hands to gguf-py, from the config -----------------------------


def _attention(p: str, h: int, a: int, kv: int, d: int, bias: bool = False, out_bias: bool = False) -> Tensors:
    for name, rows in (("q", a * d), ("k", kv * d), ("v", kv * d)):
        yield f"{p}self_attn.{name}_proj.weight", (rows, h)
        if bias:
            yield f"{p}self_attn.{name}_proj.bias", (rows,)
    yield f"{p}self_attn.o_proj.weight", (h, a * d)
    if out_bias:
        yield f"{p}self_attn.o_proj.bias", (h,)


def _mlp(p: str, h: int, inter: int) -> Tensors:
    yield f"{p}gate_proj.weight", (inter, h)
    yield f"{p}up_proj.weight", (inter, h)
    yield f"{p}down_proj.weight", (h, inter)


def _stacked(p: str, e: int, h: int, inter: int, names=("gate_proj", "up_proj", "down_proj")) -> Tensors:
    """torch.stack of the experts' nn.Linear weights, one tensor per projection."""
    gate, up, down = names
    yield f"{p}{gate}.weight", (e, inter, h)
    yield f"{p}{up}.weight", (e, inter, h)
    yield f"{p}{down}.weight", (e, h, inter)


def _norms(p: str, h: int, *names: str, bias: bool = False) -> Tensors:
    for n in names:
        yield f"{p}{n}.weight", (h,)
        if bias:
            yield f"{p}{n}.bias", (h,)


def deepseek2(c: dict) -> Tensors:
    """deepseek.py DeepseekV2Model: layers past num_hidden_layers (MTP) skipped; experts merged;
    kv_b_proj viewed (n_head_kv, qk_nope + v, rank), split, k_b transposed; the router's
    e_score_correction_bias renamed e_score_correction.bias (ModelBase.filter_tensors)."""
    h, a, vocab = c["hidden_size"], c["num_attention_heads"], c["vocab_size"]
    nope, rope, v, r = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
    ql, e, ie = c.get("q_lora_rank"), c["n_routed_experts"], c["moe_intermediate_size"]
    v3 = c["model_type"] == "deepseek_v3"
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        if ql:
            yield from ((f"{p}self_attn.q_a_proj.weight", (ql, h)), (f"{p}self_attn.q_a_layernorm.weight", (ql,)))
            yield f"{p}self_attn.q_b_proj.weight", (a * (nope + rope), ql)
        else:
            yield f"{p}self_attn.q_proj.weight", (a * (nope + rope), h)
        yield f"{p}self_attn.kv_a_proj_with_mqa.weight", (r + rope, h)
        yield f"{p}self_attn.kv_a_layernorm.weight", (r,)
        yield f"{p}self_attn.k_b_proj.weight", (a, r, nope)
        yield f"{p}self_attn.v_b_proj.weight", (a, v, r)
        yield f"{p}self_attn.o_proj.weight", (h, a * v)
        if i < c["first_k_dense_replace"]:
            yield from _mlp(f"{p}mlp.", h, c["intermediate_size"])
        else:
            yield f"{p}mlp.gate.weight", (e, h)
            if v3:
                yield f"{p}mlp.gate.e_score_correction.bias", (e,)
            yield from _stacked(f"{p}mlp.experts.", e, h, ie)
            yield from _mlp(f"{p}mlp.shared_experts.", h, ie * c["n_shared_experts"])
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def dsa(c: dict) -> Tensors:
    """deepseek.py DeepseekV32Model and glm.py GlmMoeDsaModel (DeepseekV2Model with skip_mtp
    False): every layer's DSA indexer; the MTP layers kept as blocks, with their own embedding
    and output head copies where the checkpoint holds them: DeepSeek's layout does
    (model.layers.61.embed_tokens, shared_head.head), GLM-5's does not (vllm-ascend#6754)."""
    copies = c["model_type"] == "deepseek_v32"
    h, vocab, n = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    heads, d = c["index_n_heads"], c["index_head_dim"]
    mtp = c.get("num_nextn_predict_layers", 0)
    main = deepseek2({**c, "model_type": "deepseek_v3", "num_hidden_layers": n + mtp})
    for name, shape in main:
        yield name, shape
        m = re.match(r"(model\.layers\.(\d+)\.)self_attn\.o_proj\.weight", name)
        if m:
            p = f"{m[1]}self_attn.indexer."
            yield f"{p}wq_b.weight", (heads * d, c["q_lora_rank"])
            yield f"{p}wk.weight", (d, h)
            yield from _norms(p, d, "k_norm", bias=True)
            yield f"{p}weights_proj.weight", (heads, h)
        m = re.match(r"(model\.layers\.(\d+)\.)post_attention_layernorm\.weight", name)
        if m and int(m[2]) >= n:
            yield f"{m[1]}eh_proj.weight", (h, 2 * h)
            yield from _norms(m[1], h, "enorm", "hnorm", "shared_head.norm")
            if copies:
                yield f"{m[1]}embed_tokens.weight", (vocab, h)
                yield f"{m[1]}shared_head.head.weight", (vocab, h)


def glm4_moe(c: dict) -> Tensors:
    """glm.py Glm4MoeModel: block_count = num_hidden_layers + num_nextn_predict_layers; the MTP
    layer as GLM-4.5 and GLM-4.5-Air's checkpoints hold it (own embed_tokens, shared_head.head)."""
    h, a, kv, d, vocab = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "vocab_size"))  # fmt: skip
    e, ie, n = c["n_routed_experts"], c["moe_intermediate_size"], c["num_hidden_layers"]
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(n + c["num_nextn_predict_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d, bias=c["attention_bias"])
        if c["use_qk_norm"]:
            yield from _norms(f"{p}self_attn.", d, "q_norm", "k_norm")
        if i < c["first_k_dense_replace"]:
            yield from _mlp(f"{p}mlp.", h, c["intermediate_size"])
        else:
            yield f"{p}mlp.gate.weight", (e, h)
            yield f"{p}mlp.gate.e_score_correction.bias", (e,)
            yield from _stacked(f"{p}mlp.experts.", e, h, ie)
            yield from _mlp(f"{p}mlp.shared_experts.", h, ie * c["n_shared_experts"])
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
        if i >= n:
            yield f"{p}eh_proj.weight", (h, 2 * h)
            yield from _norms(p, h, "enorm", "hnorm", "shared_head.norm")
            yield f"{p}embed_tokens.weight", (vocab, h)
            yield f"{p}shared_head.head.weight", (vocab, h)
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def glm4_moe_lite(c: dict) -> Tensors:
    """glm.py Glm4MoeLiteModel(DeepseekV2Model) with skip_mtp False: DeepseekV2Model's file, the
    MTP layers kept as blocks with their own embedding and output head copies (GLM-4.7-Flash's
    checkpoint holds them)."""
    h, vocab, n = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    mtp = c.get("num_nextn_predict_layers", 0)
    for name, shape in deepseek2({**c, "model_type": "deepseek_v3", "num_hidden_layers": n + mtp}):
        yield name, shape
        m = re.match(r"(model\.layers\.(\d+)\.)post_attention_layernorm\.weight", name)
        if m and int(m[2]) >= n:
            yield f"{m[1]}eh_proj.weight", (h, 2 * h)
            yield from _norms(m[1], h, "enorm", "hnorm", "shared_head.norm")
            yield f"{m[1]}embed_tokens.weight", (vocab, h)
            yield f"{m[1]}shared_head.head.weight", (vocab, h)


def hunyuan_dense(c: dict) -> Tensors:
    """hunyuan.py HunYuanModel: the checkpoint's tensors, lm_head.weight skipped when tied."""
    h, a, kv, d, vocab = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "vocab_size"))  # fmt: skip
    bias = c["attention_bias"]
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d, bias=bias, out_bias=bias)
        yield from _norms(f"{p}self_attn.", d, "query_layernorm", "key_layernorm")
        yield from _mlp(f"{p}mlp.", h, c["intermediate_size"])
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield "model.norm.weight", (h,)
    if not c["tie_word_embeddings"]:
        yield "lm_head.weight", (vocab, h)


def gpt_oss(c: dict) -> Tensors:
    """gpt_oss.py GptOssModel: MXFP4 expert blocks repacked as (E, rows, row length), gate_up
    de-interleaved into gate and up, the biases alike; ``sinks`` gets ``.weight``."""
    h, a, kv, d, vocab = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "vocab_size"))  # fmt: skip
    e, inter = c["num_local_experts"], c["intermediate_size"]
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d, bias=True, out_bias=True)
        yield f"{p}self_attn.sinks.weight", (a,)
        yield from ((f"{p}mlp.router.weight", (e, h)), (f"{p}mlp.router.bias", (e,)))
        yield from _stacked(f"{p}mlp.experts.", e, h, inter)
        yield from ((f"{p}mlp.experts.gate_proj.bias", (e, inter)), (f"{p}mlp.experts.up_proj.bias", (e, inter)))
        yield f"{p}mlp.experts.down_proj.bias", (e, h)
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def minimax_m2(c: dict) -> Tensors:
    """minimax.py MiniMaxM2Model: block_sparse_moe.experts.N.w1/w2/w3 merged per projection; the
    block's e_score_correction_bias → e_score_correction.bias."""
    h, a, kv, d, vocab = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "vocab_size"))  # fmt: skip
    e = c["num_local_experts"]
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d)
        yield from ((f"{p}self_attn.q_norm.weight", (a * d,)), (f"{p}self_attn.k_norm.weight", (kv * d,)))
        yield f"{p}block_sparse_moe.gate.weight", (e, h)
        yield f"{p}block_sparse_moe.e_score_correction.bias", (e,)
        yield from _stacked(f"{p}block_sparse_moe.experts.", e, h, c["intermediate_size"], ("w1", "w3", "w2"))
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def _llama3_rope(c: dict) -> Tensors:
    """LlamaModel.generate_extra_tensors: rope_freqs over torch.arange(0, head_dim, 2)."""
    rope = c.get("rope_scaling") or {}
    if rope.get("rope_type", rope.get("type")) == "llama3":
        d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        yield "rope_freqs.weight", (len(range(0, d, 2)),)


def llama4_text(c: dict) -> Tensors:
    """llama.py Llama4Model: gate_up_proj (E, h, 2I) transposed and split in halves, down_proj
    transposed; dense layers are MLPs of intermediate_size_mlp."""
    h, a, kv, d, vocab = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "vocab_size"))  # fmt: skip
    e, step, n = c["num_local_experts"], c.get("interleave_moe_layer_step", 1), c["num_hidden_layers"]
    moe = set(c.get("moe_layers") or range(step - 1, n, step))
    yield from _llama3_rope(c)
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(n):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d)
        if i in moe:
            yield f"{p}feed_forward.router.weight", (e, h)
            yield from _stacked(f"{p}feed_forward.experts.", e, h, c["intermediate_size"])
            yield from _mlp(f"{p}feed_forward.shared_expert.", h, c["intermediate_size"])
        else:
            yield from _mlp(f"{p}feed_forward.", h, c["intermediate_size_mlp"])
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm")
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def phimoe(c: dict) -> Tensors:
    """phi.py PhiMoeModel(Phi3MiniModel): experts merged per projection; long-rope factors as tensors."""
    h, a, kv, vocab = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]
    rope = c.get("rope_scaling") or {}
    if rope.get("long_factor"):
        yield "rope_factors_long.weight", (len(rope["long_factor"]),)
        yield "rope_factors_short.weight", (len(rope["short_factor"]),)
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, h // a, bias=True, out_bias=True)
        yield f"{p}block_sparse_moe.gate.weight", (c["num_local_experts"], h)
        yield from _stacked(f"{p}block_sparse_moe.experts.", c["num_local_experts"], h, c["intermediate_size"],
                            ("w1", "w3", "w2"))  # fmt: skip
        yield from _norms(p, h, "input_layernorm", "post_attention_layernorm", bias=True)
    yield from _norms("model.", h, "norm", bias=True)
    yield from (("lm_head.weight", (vocab, h)), ("lm_head.bias", (vocab,)))


def apertus(c: dict) -> Tensors:
    """llama.py ApertusModel: act_fn.alpha_n/alpha_p/beta/eps go to metadata."""
    h, a, kv, vocab = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]
    d = h // a
    yield from _llama3_rope(c)
    yield "model.embed_tokens.weight", (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield from _attention(p, h, a, kv, d)
        yield from _norms(f"{p}self_attn.", d, "q_norm", "k_norm")
        yield from ((f"{p}mlp.up_proj.weight", (c["intermediate_size"], h)), (f"{p}mlp.down_proj.weight",
                                                                              (h, c["intermediate_size"])))  # fmt: skip
        yield from _norms(p, h, "attention_layernorm", "feedforward_layernorm")
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (vocab, h)


def mpt(c: dict) -> Tensors:
    """mpt.py MPTModel: the checkpoint's names; no lm_head (the output is the token embedding)."""
    h, n = c["d_model"], c["n_layers"]
    yield "transformer.wte.weight", (c["vocab_size"], h)
    for i in range(n):
        p = f"transformer.blocks.{i}."
        yield from ((f"{p}norm_1.weight", (h,)), (f"{p}attn.Wqkv.weight", (3 * h, h)))
        yield from ((f"{p}attn.out_proj.weight", (h, h)), (f"{p}norm_2.weight", (h,)))
        ff = c["expansion_ratio"] * h
        yield from ((f"{p}ffn.up_proj.weight", (ff, h)), (f"{p}ffn.down_proj.weight", (h, ff)))
    yield "transformer.norm_f.weight", (h,)


def gpt_bigcode(c: dict) -> Tensors:
    """starcoder.py StarCoderModel: the checkpoint's names (multi-query c_attn); no lm_head."""
    h, a = c["n_embd"], c["n_head"]
    inner = c.get("n_inner") or 4 * h
    yield from (("transformer.wte.weight", (c["vocab_size"], h)), ("transformer.wpe.weight", (c["n_positions"], h)))
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        for name, shape in (("attn.c_attn", (h + 2 * (h // a), h)), ("attn.c_proj", (h, h)),
                            ("mlp.c_fc", (inner, h)), ("mlp.c_proj", (h, inner))):  # fmt: skip
            yield from ((f"{p}{name}.weight", shape), (f"{p}{name}.bias", shape[:1]))
        yield from _norms(p, h, "ln_1", "ln_2", bias=True)
    yield from _norms("transformer.", h, "ln_f", bias=True)


# --- llama-quantize, from src/llama-quant.cpp ----------------------------------------------------

DEFAULT = {"q4_k_m": "Q4_K", "q4_0": "Q4_0", "iq4_xs": "IQ4_XS"}
FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}
CONVERTER_F32 = {T.FFN_GATE_INP, T.FFN_GATE_INP_SHEXP, T.POS_EMBD, T.TOKEN_TYPES, T.INDEXER_PROJ}


def block(t: str) -> int:
    return gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t]][0]


def n_dims(shape: Shape) -> int:
    ne = list(reversed(shape))
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return len(ne)


def allows_quantization(name: str, shape: Shape) -> bool:
    """tensor_allows_quantization, for the names these families have."""
    never = ("_norm.weight", "ffn_gate_inp.weight")
    exact = ("position_embd.weight", "token_types.weight")
    return n_dims(shape) >= 2 and name.endswith("weight") and name not in exact and not any(x in name for x in never)


def category(name: str) -> str:
    if name in ("output.weight", "token_embd.weight"):
        return name.split(".")[0]
    parts = ("attn_qkv.weight", "attn_kv_b.weight", "attn_v.weight", "attn_k.weight", "attn_q.weight",
             "attn_output.weight", "ffn_up", "ffn_gate", "ffn_down")  # fmt: skip
    return next((p.split(".")[0] for p in parts if p in name), "other")


def more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def quantize_type(ftype: str, name: str, ne0: int, wv: tuple[int, int], model: dict) -> str:
    """llama_tensor_get_type_impl for q4_k_m, q4_0 and iq4_xs (no imatrix, no Falcon, no 70B),
    then tensor_type_fallback. ``wv``: (i_attention_wv, n_attention_wv)."""
    t, cat, n_expert = DEFAULT[ftype], category(name), model["n_expert"]
    layer = int(name.split(".")[1]) if name.startswith("blk.") else 0
    v_like = cat in ("attn_qkv", "attn_kv_b", "attn_v")
    if cat == "output" or (model["tied"] and cat == "token_embd"):
        t = "Q8_0" if ne0 % block(t) else "Q6_K"
    elif v_like:
        if ftype == "iq4_xs" and model["n_gqa"] >= 4:
            t = "Q5_K"
        elif ftype == "q4_k_m" and more_bits(*wv):
            t = "Q6_K"
        t = "Q8_0" if n_expert == 8 else t
    elif cat == "attn_k" and n_expert == 8:
        t = "Q8_0"
    elif cat == "ffn_down":  # layer_info: the block of the name (dense files here: one ffn_down a block)
        n = model["n_layer"]
        if ftype == "q4_k_m" and more_bits(layer, n):
            t = "Q6_K"
        elif ftype == "iq4_xs" and layer < n // 8:
            t = "Q5_K"
    elif cat == "attn_output" and n_expert == 8 and ftype in ("q4_k_m", "iq4_xs"):
        t = "Q5_K"
    if ne0 % block(t):
        t = FALLBACK.get(t, t)
        t = t if ne0 % block(t) == 0 else "F16"
    return t


def expected(arch, tensors: list[tuple[str, Shape]], ftype: str, model: dict) -> dict[str, tuple[Shape, str]]:
    """The file's tensors: gguf-py's names, the converter's F32 rule, llama-quantize's types."""
    tmap = name_map(arch, model["n_layer"])
    found = {}
    for hf, shape in tensors:
        key, name = tmap.get_type_and_name(hf, try_suffixes=(".weight", ".bias"))
        f32 = n_dims(shape) <= 1 or name.endswith("_norm.weight") or key in CONVERTER_F32
        found[name] = (shape, "F32" if f32 or not name.endswith(".weight") else "BF16")
    order = sorted(found, key=lambda n: (int(n.split(".")[1]) if n.startswith("blk.") else -1, n))
    v_like = [n for n in order if category(n) in ("attn_qkv", "attn_kv_b", "attn_v")]
    model = {**model, "tied": "output.weight" not in found}
    out = {}
    for name in order:
        shape, t = found[name]
        if allows_quantization(name, shape):
            wv = (v_like.index(name) if name in v_like else 0, len(v_like))
            t = quantize_type(ftype, name, shape[-1], wv, model)
        out[name] = (shape, t)
    return out


# --- the plan, mapped through gguf-py -------------------------------------------------------------


def _converter_name(name: str) -> str:
    """ModelBase.filter_tensors' rename, and GptOssModel's ``sinks`` → ``sinks.weight``."""
    name = name.replace("e_score_correction_bias", "e_score_correction.bias")
    return name + ".weight" if name.endswith(".sinks") else name


def planned(arch, w, n_layer: int) -> dict[str, tuple[Shape, str]]:
    tmap = name_map(arch, n_layer)
    out = {}
    for r in w.rows:
        if r.role == "tied":  # no output tensor: llama.cpp uses the token embedding
            continue
        m = re.search(r"\.(\d+)(?:–(\d+))?\.", r.name)
        layers = range(int(m[1]), int(m[2] or m[1]) + 1) if m else [None]
        assert r.count == len(layers), r.name  # one tensor per block: experts stacked
        for i in layers:
            hf = _converter_name(r.name if i is None else r.name.replace(m[0], f".{i}.", 1))
            name = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
            assert name is not None and name not in out, hf
            out[name] = (r.shape, r.format)
    return out


def file_bytes(tensors: dict[str, tuple[Shape, str]]) -> int:
    total = 0
    for shape, t in tensors.values():
        size, per = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t]]
        total += math.prod(shape) // size * per
    return total


KIMI_K2 = {  # moonshotai/Kimi-K2-Instruct's config.json (DeepseekV3ForCausalLM), as a deepseek_v3 config
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 64,
    "num_key_value_heads": 64, "n_shared_experts": 1, "n_routed_experts": 384, "num_experts_per_tok": 8,
    "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 163840, "num_nextn_predict_layers": 0,
    "tie_word_embeddings": False, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
}  # fmt: skip
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}  # fmt: skip
LONGROPE = {"type": "longrope", "long_factor": [1.0] * 64, "short_factor": [1.0] * 64}  # Phi-3.5-MoE: 128/2 each

# (source, overrides, expected tensors, llama.cpp architecture, head_count_kv as the converter
# writes it (None: the config's), n_expert as llama.cpp reads it)
CASES = {
    "DeepSeek-V3": ("deepseek-ai/DeepSeek-V3", {}, deepseek2, "DEEPSEEK2", 1, "n_routed_experts"),
    "DeepSeek-V2": ("deepseek-ai/DeepSeek-V2", {}, deepseek2, "DEEPSEEK2", 1, "n_routed_experts"),
    "DeepSeek-V2-Lite": ("deepseek-ai/DeepSeek-V2-Lite", {}, deepseek2, "DEEPSEEK2", 1, "n_routed_experts"),
    "Kimi-K2 (deepseek_v3)": (KIMI_K2, {}, deepseek2, "DEEPSEEK2", 1, "n_routed_experts"),
    "DeepSeek-V3.2-Exp": ("deepseek-ai/DeepSeek-V3.2-Exp", {}, dsa, "DEEPSEEK32", 1, "n_routed_experts"),
    "GLM-5": ("zai-org/GLM-5", {}, dsa, "GLM_DSA", 1, "n_routed_experts"),
    "GLM-4.5-Air": ("zai-org/GLM-4.5-Air", {}, glm4_moe, "GLM4_MOE", None, "n_routed_experts"),
    "GLM-4.5": ("zai-org/GLM-4.5", {}, glm4_moe, "GLM4_MOE", None, "n_routed_experts"),
    "GLM-4.7-Flash": ("zai-org/GLM-4.7-Flash", {}, glm4_moe_lite, "DEEPSEEK2+NEXTN", 1, "n_routed_experts"),
    "Hunyuan-7B (tied)": ("tencent/Hunyuan-7B-Instruct", {}, hunyuan_dense, "HUNYUAN_DENSE", None, None),
    "Hunyuan-7B (untied, biased)": ("tencent/Hunyuan-7B-Instruct", {"tie_word_embeddings": False,
                                    "attention_bias": True}, hunyuan_dense, "HUNYUAN_DENSE", None, None),
    "gpt-oss-20b": ("openai/gpt-oss-20b", {}, gpt_oss, "GPT_OSS", None, "num_local_experts"),
    "gpt-oss-120b": ("openai/gpt-oss-120b", {}, gpt_oss, "GPT_OSS", None, "num_local_experts"),
    "MiniMax-M2": ("MiniMaxAI/MiniMax-M2", {}, minimax_m2, "MINIMAXM2", None, "num_local_experts"),
    "Llama-4-Scout": ("meta-llama/Llama-4-Scout-17B-16E", {"rope_scaling": LLAMA3_ROPE}, llama4_text, "LLAMA4",
                      None, "num_local_experts"),
    "Llama-4 (MoE every 2nd layer)": ("meta-llama/Llama-4-Scout-17B-16E", {"interleave_moe_layer_step": 2},
                                      llama4_text, "LLAMA4", None, "num_local_experts"),
    "Phi-3.5-MoE": ("microsoft/Phi-3.5-MoE-instruct", {"rope_scaling": LONGROPE}, phimoe, "PHIMOE", None,
                    "num_local_experts"),
    "Apertus-8B": ("swiss-ai/Apertus-8B-2509", {}, apertus, "APERTUS", None, None),
    "MPT-7B": ("mosaicml/mpt-7b", {}, mpt, "MPT", None, None),
    "SantaCoder (gpt_bigcode)": ("bigcode/gpt_bigcode-santacoder", {}, gpt_bigcode, "STARCODER", 1, None),
}  # fmt: skip


# Architectures newer than the gguf package on PyPI (0.19.0), named through one whose tensor set
# holds theirs: in llama-cpp-python 0.3.36's gguf-py, MODEL_TENSORS[DEEPSEEK32] is
# MODEL_TENSORS[GLM_DSA] less ATTN_KV_B (the converter splits kv_b there too), and the name map
# only picks which of tensor_mapping's names an architecture has.
# MODEL_TENSORS[DEEPSEEK2] there also holds the NEXTN_* tensors (GLM-4.7-Flash's MTP layer), which
# gguf 0.19.0's lacks: GLM_DSA's set holds both (less ATTN_K and ATTN_V, which MLA files have not).
NAMED_AS = {"DEEPSEEK32": "GLM_DSA", "DEEPSEEK2+NEXTN": "GLM_DSA"}


def _load(source, overrides: dict):
    m = paramcount.load(source)
    return paramcount.load({**m.config, **overrides}) if overrides else m


@pytest.mark.parametrize("ftype", ["q4_k_m", "q4_0", "iq4_xs"])
@pytest.mark.parametrize("case", list(CASES))
def test_mix_from_a_config_is_the_converted_file_quantised(case, ftype):
    source, overrides, convert, arch_name, kv_file, experts_field = CASES[case]
    m = _load(source, overrides)
    c = {**m.config}
    tensors = list(convert(c))
    arch = getattr(gguf.MODEL_ARCH, arch_name, None) or getattr(gguf.MODEL_ARCH, NAMED_AS[arch_name])
    n_layer = max((int(n.split(".")[2]) + 1 for n, _ in tensors if re.match(r"\w+\.(layers|blocks|h)\.\d", n)))
    heads = c.get("num_attention_heads") or c.get("n_heads") or c.get("n_head")
    kv = kv_file or c.get("num_key_value_heads") or heads
    facts = {"n_layer": n_layer, "n_gqa": heads // kv, "n_expert": c[experts_field] if experts_field else 0}
    want = expected(arch, tensors, ftype, facts)
    w = weights(m, ftype)
    got = planned(arch, w, n_layer)
    assert set(got) == set(want)
    assert {k: v for k, v in got.items() if v != want[k]} == {}
    assert w.bytes == file_bytes(want)
    assert "llama.cpp's converter writes it" in w.term().assumption or case.startswith(("MPT", "SantaCoder", "Hunyuan"))


def test_mla_keeps_its_parameters_split_in_two_and_rows_of_qk_nope_fall_back():
    """attn_k_b holds rows of qk_nope (128) values: no whole 256-block, so Q4_K falls back to Q5_0
    (tensor_type_fallback); attn_v_b's rows are kv_lora_rank (512) long. Neither is attn_v-like."""
    m = paramcount.load("deepseek-ai/DeepSeek-V3")
    w = weights(m, "q4_k_m")
    fmt = {r.name.rsplit(".", 2)[-2]: r.format for r in w.rows if "_b_proj" in r.name}
    assert fmt == {"k_b_proj": "Q5_0", "v_b_proj": "Q4_K", "q_b_proj": "Q4_K"}
    kv_b = next(r for r in weights(m, "bf16").rows if r.name.endswith("kv_b_proj.weight"))
    split = [r for r in w.rows if r.name.endswith(("k_b_proj.weight", "v_b_proj.weight")) and "0–2" in r.name]
    assert sum(math.prod(r.shape) for r in split) == math.prod(kv_b.shape)
    # the routers' correction biases are the file's, not the model's: 58 MoE layers × 256 values
    assert w.parameters - m.total == 58 * 256 and not w.term().estimate


def test_mla_query_projections_take_their_file_roles():
    """q_proj is llama.cpp's attn_q (IQ3_XS files: IQ3_XXS); the query bottleneck's q_a_proj and
    q_b_proj are attn_q_a and attn_q_b, role "other" (the default IQ3_S); attn_k_b is "other" too."""
    lite = {r.name.rsplit(".", 2)[-2]: r.format for r in weights(paramcount.load("deepseek-ai/DeepSeek-V2-Lite"),
                                                                    "iq3_xs").rows}  # fmt: skip
    v3 = {
        r.name.rsplit(".", 2)[-2]: r.format for r in weights(paramcount.load("deepseek-ai/DeepSeek-V3"), "iq3_xs").rows
    }
    assert lite["q_proj"] == "IQ3_XXS" and v3["q_a_proj"] == v3["q_b_proj"] == "IQ3_S"
    assert lite["k_b_proj"] == v3["k_b_proj"] == "IQ4_NL"  # IQ3_S rows of 128 values: the 32-block fallback


def test_glm45_plans_its_mtp_layer_as_an_upper_bound():
    m = paramcount.load("zai-org/GLM-4.5-Air")
    w = weights(m, "q4_k_m")
    term = w.term()
    assert term.estimate and "upper bound" in term.assumption and "GLM-4.6" in term.assumption
    mtp = [r for r in w.rows if ".layers.46." in r.name]
    assert {r.name.rsplit(".", 2)[-2] for r in mtp} >= {"eh_proj", "enorm", "hnorm", "embed_tokens", "head"}
    extra = w.parameters - m.total
    h, vocab = 4096, 151552
    mtp_note = next(n for n in m.notes if "multi-token-prediction" in n)  # the count's own note: shared head
    shared = int(re.search(r"([\d,]+) parameters", mtp_note)[1].replace(",", ""))
    assert extra == shared + 2 * vocab * h + 46 * 128  # its own embed/head copies; 45 + 1 correction biases
    no_mtp = weights(paramcount.load({**m.config, "num_nextn_predict_layers": 0}), "q4_k_m")
    assert not no_mtp.term().estimate and no_mtp.parameters == m.total + 45 * 128


def test_glm45_air_q8_0_is_the_size_of_a_published_file():
    """ubergarm/GLM-4.5-Air-GGUF (README, quantised from zai-org/GLM-4.5-Air with the MTP layer
    and its own embedding/head copies): "Q8_0 109.381 GiB (8.505 BPW)". Q8_0 has no position
    rule, so any llama.cpp version gives it; the file's parameters are the BF16 line's 205.811 GiB
    at 16.004 BPW (110.47 billion), which only the MTP layer with its copies reaches."""
    w = weights(paramcount.load("zai-org/GLM-4.5-Air"), "q8_0")
    assert round(w.bytes / 2**30, 3) == 109.381 and round(w.bytes * 8 / w.parameters, 3) == 8.505
    assert round(205.811 * 2**30 * 8 / 16.004 / 1e9, 2) == round(w.parameters / 1e9, 2) == 110.47


def test_gpt_oss_experts_are_requantised_to_the_mix():
    """The file keeps the checkpoint's MXFP4 experts; llama-quantize requantises them (its target
    is never MXFP4 for these file types): 2880-value rows fill no 256-block, so Q4_K → Q5_0."""
    w = weights(paramcount.load("openai/gpt-oss-20b"), "q4_k_m")
    experts = {r.format for r in w.rows if ".experts." in r.name and r.name.endswith(".weight")}
    assert experts == {"Q5_0", "Q8_0"} and "MXFP4" in w.term().assumption


def test_pure_uses_the_file_tensors_too():
    w = weights(paramcount.load("deepseek-ai/DeepSeek-V2-Lite"), "q4_k_m", pure=True)
    fmt = {r.name.rsplit(".", 2)[-2]: r.format for r in w.rows if "_b_proj" in r.name}
    assert fmt == {"k_b_proj": "Q5_0", "v_b_proj": "Q4_K"} and w.options == "pure"


@pytest.mark.parametrize(
    "source,words",
    [
        ("EleutherAI/gpt-neo-1.3B", "no class for GPTNeoForCausalLM"),
        ("meituan-longcat/LongCat-Flash-Chat", "no class for LongcatFlashForCausalLM"),
    ],
    ids=["gpt_neo", "longcat_flash"],
)
def test_families_refused_with_the_converters_reason(source, words):
    with pytest.raises(ParamcountError, match="use a single GGUF type such as q4_k") as e:
        weights(paramcount.load(source), "q4_k_m")
    assert words in str(e.value) and "\n" not in str(e.value)
    assert weights(paramcount.load(source), "q4_k").bytes > 0  # a single type still plans


def test_mistral_small_4_mix_is_refused_naming_its_converter_class():
    """Mistral Small 4's language model (mistral4) is converted by Mistral4Model, not the
    Ministral3Model whose file the mistral3 composite's mixes state."""
    m = paramcount.load("mistralai/Mistral-Small-4-119B-2603")
    with pytest.raises(ParamcountError, match="use a single GGUF type such as q4_k") as e:
        weights(m, "q4_k_m")
    assert "Mistral4Model(DeepseekV2Model)" in str(e.value) and "\n" not in str(e.value)
    assert weights(m, "q4_k").bytes > 0  # a single type still plans


def test_a_refusal_is_one_line_at_the_cli(capsys):
    assert main(["memory", "EleutherAI/gpt-neo-1.3B", "--dtype", "q4_k_m", "--runtime", "llama.cpp"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no class for GPTNeoForCausalLM" in err and "\n" not in err


def test_mla_with_other_kv_heads_is_refused():
    c = {**paramcount.load("deepseek-ai/DeepSeek-V2-Lite").config, "num_key_value_heads": 1}
    with pytest.raises(ParamcountError, match="splits kv_b_proj by num_key_value_heads"):
        weights(paramcount.load(c), "q4_k_m")
