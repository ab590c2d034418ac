"""Weight memory per scheme, against real oracles: torch byte sizes, transformers +
bitsandbytes on CPU, GPTQ/AWQ checkpoints read back by the quantised-checkpoint reader, GGUF
files written and read by the gguf package."""

from __future__ import annotations

import contextlib
import json
import re

import pytest

import paramcount
from paramcount.dtypes import DTYPES, GGML_IDS, GGML_TYPES, nbytes
from paramcount.errors import ParamcountError
from paramcount.gguf.meta import FILE_TYPES
from paramcount.gguf.reader import DEFAULT_ALIGNMENT
from paramcount.memory.core.terms import GB, GIB
from paramcount.memory.weights.base import SCHEMES, scheme
from paramcount.memory.weights.schemes import weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}
GPT2 = {  # tied head, Conv1D layers stored [in, out], biases everywhere
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "vocab_size": 100,
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "n_positions": 32,
}
MIXTRAL = {  # fused 3-D experts, a router
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "tie_word_embeddings": False,
}
QWEN2_MOE = {  # a dense first layer, shared experts, and a Linear(h, 1) shared-expert gate
    "model_type": "qwen2_moe",
    "architectures": ["Qwen2MoeForCausalLM"],
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
    "mlp_only_layers": [0],
    "tie_word_embeddings": False,
}
BERT = {  # encoder with a tied masked-LM head
    "model_type": "bert",
    "architectures": ["BertForMaskedLM"],
    "vocab_size": 120,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "max_position_embeddings": 64,
}
OLMO = {  # tied, no norm weights: its last parameter is the last layer's down_proj
    "model_type": "olmo",
    "architectures": ["OlmoForCausalLM"],
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "tie_word_embeddings": True,
}
T5 = {  # transformers keeps T5's `wo` in fp32 under fp16 and never quantises it
    "model_type": "t5",
    "architectures": ["T5ForConditionalGeneration"],
    "vocab_size": 128,
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 128,
    "num_layers": 2,
    "num_heads": 4,
}
DEEPSEEK = {  # MLA, a dense first layer, routed and shared experts
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
}
FAMILIES = {"llama": LLAMA, "gpt2": GPT2, "mixtral": MIXTRAL, "qwen2_moe": QWEN2_MOE, "bert": BERT}
BNB_FAMILIES = {**FAMILIES, "olmo": OLMO, "t5": T5}


def build(raw: dict, device: str = "cpu", tie: bool = True):
    """A real transformers model for a config dict (random weights, tiny); ``tie=False``
    leaves tied weights apart, as ``from_pretrained`` has them while it plans quantisation."""
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "architectures")}
    config = transformers.AutoConfig.for_model(raw["model_type"], **kwargs)
    from transformers.initialization import no_tie_weights  # a submodule the lazy top level may not expose

    torch.manual_seed(0)
    with torch.device(device), contextlib.nullcontext() if tie else no_tie_weights():
        return getattr(transformers, raw["architectures"][0])(config)


def unique(tensors):
    """Tensors by storage, each once (a tied weight is one tensor under two names)."""
    seen = {}
    for t in tensors:
        if t is not None and t.numel():
            seen.setdefault((t.data_ptr(), t.dtype, tuple(t.shape)), t)
    return list(seen.values())


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in unique(tensors))


# ---- the integer tables ----------------------------------------------------------------------


def test_ggml_rows_equal_gguf_packages_table():
    gguf = pytest.importorskip("gguf")
    sizes = {k.name: tuple(v) for k, v in gguf.constants.GGML_QUANT_SIZES.items()}
    assert {t: tuple(DTYPES[t]) for t in GGML_TYPES} == {t: sizes[t] for t in GGML_TYPES}
    # every type llama.cpp stores in files is in the table (Q8_1 is only a dot-product operand)
    assert set(sizes) - set(GGML_TYPES) <= {"Q8_1"}
    # and the GGUF reader's own type ids (it needs no gguf package) are gguf-py's
    assert {k.name: int(k) for k in gguf.GGMLQuantizationType if k.name in GGML_TYPES} == GGML_IDS
    assert gguf.GGUF_DEFAULT_ALIGNMENT == DEFAULT_ALIGNMENT
    names = {int(k): k.name.removeprefix("MOSTLY_").removeprefix("ALL_") for k in gguf.LlamaFileType}
    assert names == {**FILE_TYPES, 1024: "GUESSED"}


def test_element_types_equal_torch_element_sizes():
    for name, dt in {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn"}.items():
        assert DTYPES[name] == (1, torch.empty(0, dtype=getattr(torch, dt)).element_size())
    for name, dt in {"fp8_e5m2": "float8_e5m2", "int8": "int8", "uint8": "uint8", "int32": "int32"}.items():
        assert DTYPES[name] == (1, torch.empty(0, dtype=getattr(torch, dt)).element_size())
    assert DTYPES["int4"] == (2, 1)


def test_nbytes_rejects_counts_that_do_not_fill_blocks():
    assert nbytes("q4_k", 512) == 288 and nbytes("Q8_0", 64) == 68 and nbytes("int4", 6) == 3
    with pytest.raises(ParamcountError, match=r"300 values do not fill whole Q4_K blocks of 256 \(1 blocks leave 44"):
        nbytes("Q4_K", 300)
    with pytest.raises(ParamcountError, match="do not fill whole int4 blocks of 2"):
        nbytes("int4", 7)
    with pytest.raises(ParamcountError, match="unknown dtype 'q9_z'"):
        nbytes("q9_z", 32)


# ---- plain element types: torch byte sizes -------------------------------------------------

CASTS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8": "float8_e4m3fn", "int8": "int8"}


@pytest.mark.parametrize("family", FAMILIES)
def test_cast_bytes_equal_torch_tensors_cast_to_that_dtype(family):
    raw = FAMILIES[family]
    real = build(raw, "meta")
    model = paramcount.load(raw)
    for name, dt in CASTS.items():
        cast = [p.to(getattr(torch, dt)) for p in real.parameters()]  # parameters(): ties once
        w = weights(model, name)
        assert w.bytes == sum(t.numel() * t.element_size() for t in cast), name
        assert w.parameters == sum(p.numel() for p in real.parameters())


@pytest.mark.parametrize(
    "raw,dtype", [(T5, "float16"), (DEEPSEEK, "bfloat16"), (DEEPSEEK, "float16"), (LLAMA, "float16")]
)
def test_half_precision_equals_from_pretrained(tmp_path, raw, dtype):
    """fp16/bf16 as transformers loads them: its keep-in-fp32 modules stay fp32."""
    build(raw).save_pretrained(tmp_path)
    loaded = getattr(transformers, raw["architectures"][0]).from_pretrained(tmp_path, dtype=getattr(torch, dtype))
    w = weights(paramcount.load(raw), "fp16" if dtype == "float16" else "bf16")
    assert w.bytes == tensor_bytes(loaded.parameters())
    assert ("fp32" in w.by_dtype) == (raw is T5)


def test_seed_rule_bytes_per_parameter_with_gb_and_gib():
    """The seed article's rule: 4, 2, 1 and ½ byte per parameter, nothing else."""
    m = paramcount.load("meta-llama/Llama-2-7b-hf")
    n = m.total
    for name, num, den in (("fp32", 4, 1), ("fp16", 2, 1), ("bf16", 2, 1), ("int8", 1, 1), ("int4", 1, 2)):
        w = weights(m, name)
        assert w.bytes * den == n * num
        t = w.term()
        assert t.bytes == w.bytes and t.gb == w.bytes / GB and t.gib == w.bytes / GIB and t.estimate is False
    t = weights(m, "int4").term()
    assert t.formula == f"{n:,} / 2 × 1 B (int4) = {n // 2:,} B"
    assert "--dtype" in t.assumption and "--keep" in t.assumption


def test_ties_are_stored_once():
    m = paramcount.load(GPT2)
    w = weights(m, "bf16")
    assert w.bytes == 2 * m.total < 2 * m.total_with_ties
    tied = [r for r in w.rows if r.role == "tied"]
    assert [(r.name, r.bytes, r.parameters) for r in tied] == [("lm_head.weight", 0, 0)]


def test_repeats_are_grouped_not_unrolled():
    m = paramcount.load("deepseek-ai/DeepSeek-V3")
    w = weights(m, "nf4", double_quant=True)
    assert len(w.rows) < 60 and w.parameters == m.total
    experts = next(r for r in w.rows if r.name.endswith("experts.gate_up_proj"))
    assert experts.count == 58 and experts.role == "not quantised"  # fused 3-D: not nn.Linear
    assert sum(r.bytes for r in w.rows) == w.bytes == sum(w.by_dtype.values()) == sum(w.by_format().values())


# ---- bitsandbytes on CPU: transformers' own conversion ---------------------------------------


def bnb_config(kind: str):
    if kind == "int8":
        return transformers.BitsAndBytesConfig(load_in_8bit=True)
    quant, dq = kind.split("-") if "-" in kind else (kind, "")
    return transformers.BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type=quant, bnb_4bit_use_double_quant=dq == "dq"
    )


def resident(model) -> int:
    """Bytes of every parameter and of every quantisation state tensor bitsandbytes holds."""
    tensors = []
    for p in model.parameters():
        tensors.append(p.data)
        qs = getattr(p, "quant_state", None)
        if qs is not None:
            tensors += [qs.absmax, qs.code]
            if qs.nested:
                tensors += [qs.offset, qs.state2.absmax, qs.state2.code]
        tensors.append(getattr(p, "SCB", None))
    return tensor_bytes(tensors)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = {}
    for name, raw in BNB_FAMILIES.items():
        path = tmp_path_factory.mktemp(name)
        build(raw).save_pretrained(path)
        out[name] = path
    return out


def load_bnb(path, raw, kind):
    cls = getattr(transformers, raw["architectures"][0])
    return cls.from_pretrained(path, quantization_config=bnb_config(kind), device_map="cpu", dtype=torch.bfloat16)


BNB_CASES = [(f, k) for f in ("llama", "gpt2", "mixtral", "qwen2_moe") for k in ("nf4", "nf4-dq", "int8")]
BNB_CASES += [("llama", "fp4"), ("llama", "fp4-dq"), ("bert", "nf4"), ("olmo", "nf4-dq"), ("t5", "int8")]


@pytest.mark.parametrize("family,kind", BNB_CASES)
def test_bitsandbytes_equals_a_model_quantised_by_transformers(saved, family, kind):
    raw = BNB_FAMILIES[family]
    q = load_bnb(saved[family], raw, kind)
    quant = {"int8": "bnb-int8"}.get(kind, kind.split("-")[0])
    dq = kind.endswith("-dq") if quant != "bnb-int8" else None
    w = weights(paramcount.load(raw), quant, double_quant=dq)
    assert w.bytes == resident(q)
    # the state dict: the same tensors, less the offset (kept inside the JSON blob), plus
    # bitsandbytes' serialisation-only entries
    sd = q.state_dict()
    serial = [k for k in sd if "quant_state.bitsandbytes__" in k or k.endswith("weight_format")]
    stored = tensor_bytes(v for k, v in sd.items() if k not in serial)
    offsets = sum(r.count * p.bytes for r in w.rows for p in r.parts if p.what == "nested offset")
    assert stored == w.bytes - offsets
    assert all(sd[k].numel() < 256 for k in serial)
    names = {r.name for r in w.rows if r.role == "quantised"}
    assert len(serial) == sum(r.count for r in w.rows if r.role == "quantised")
    assert not any(n.startswith(("lm_head", "model.embed_tokens")) for n in names)


def test_bnb_4bit_parts_equal_quantize_4bit_outputs():
    """Odd sizes: packing rounds up, a partial last block still gets an absmax."""
    F = pytest.importorskip("bitsandbytes.functional")
    from paramcount.memory.weights.layouts import bnb4

    for shape in ((3, 5), (10, 70), (300, 1000)):
        for dq in (False, True):
            packed, qs = F.quantize_4bit(torch.randn(*shape, dtype=torch.bfloat16), compress_statistics=dq)
            real = [packed, qs.absmax, qs.code] + ([qs.state2.absmax, qs.state2.code, qs.offset] if dq else [])
            parts = bnb4(shape[0] * shape[1], dq)
            assert [(p.bytes, p.dtype) for p in parts] == [(t.numel() * t.element_size(), _name(t)) for t in real]


def _name(t) -> str:
    return {torch.uint8: "uint8", torch.float32: "fp32"}[t.dtype]


def test_bnb_quantises_the_linear_layers_transformers_converts():
    """On the meta device, every class of several families: the set of quantised weights is
    what replace_with_bnb_linear converts after get_keys_to_not_convert (asked, as
    from_pretrained asks it, before the weights are tied)."""
    from transformers.pytorch_utils import Conv1D
    from transformers.quantizers.base import get_keys_to_not_convert
    from transformers.quantizers.quantizers_utils import should_convert_module

    from paramcount.arch import family

    for raw in (LLAMA, GPT2, MIXTRAL, QWEN2_MOE, BERT, OLMO, T5, DEEPSEEK):
        for cls in family(raw["model_type"]).classes:
            model = paramcount.load(raw, model_class=cls, num_labels=2)
            real = build({**raw, "architectures": [model.class_name], "num_labels": 2}, "meta", tie=False)
            skip = list(set(get_keys_to_not_convert(real)) | set(real._keep_in_fp32_modules or []))
            linear = (torch.nn.Linear, Conv1D)
            want = {
                n + ".weight"
                for n, mod in real.named_modules()
                if (type(mod) is linear[0] or isinstance(mod, linear[1])) and should_convert_module(n, skip)
            }
            got = {n for r in weights(model, "nf4").rows if r.role == "quantised" for n in unroll(r.name)}
            assert got == want, (cls, sorted(got ^ want)[:6])


def unroll(name: str) -> list[str]:
    m = re.search(r"\.(\d+)–(\d+)\.", name)
    if not m:
        return [name]
    return [n for i in range(int(m[1]), int(m[2]) + 1) for n in unroll(f"{name[: m.start()]}.{i}.{name[m.end() :]}")]


# ---- GPTQ / AWQ: the checkpoint layout, read back by the quantised-checkpoint reader ----------

QUANT_LLAMA = {**LLAMA, "hidden_size": 256, "intermediate_size": 512, "vocab_size": 128, "torch_dtype": "float16"}


def gptq_file(raw, bits, group):
    """AutoGPTQ QuantLinear's buffers for every linear layer inside the decoder layers."""
    st = pytest.importorskip("safetensors.torch")
    real = build(raw, "meta")
    out = {}
    for name, mod in real.named_modules():
        if isinstance(mod, torch.nn.Linear) and ".layers." in name:
            inp, o = mod.in_features, mod.out_features
            groups = 1 if group == -1 else -(-inp // group)
            out[f"{name}.qweight"] = torch.zeros(inp * bits // 32, o, dtype=torch.int32)
            out[f"{name}.qzeros"] = torch.zeros(groups, o * bits // 32, dtype=torch.int32)
            out[f"{name}.scales"] = torch.zeros(groups, o, dtype=torch.float16)
            out[f"{name}.g_idx"] = torch.zeros(inp, dtype=torch.int32)
    return st, real, out


def awq_file(raw, group):
    """AutoAWQ GEMM's buffers: packed along the output, a group every ``group`` inputs."""
    st = pytest.importorskip("safetensors.torch")
    real = build(raw, "meta")
    out = {}
    for name, mod in real.named_modules():
        if isinstance(mod, torch.nn.Linear) and ".layers." in name:
            inp, o = mod.in_features, mod.out_features
            out[f"{name}.qweight"] = torch.zeros(inp, o // 8, dtype=torch.int32)
            out[f"{name}.qzeros"] = torch.zeros(inp // group, o // 8, dtype=torch.int32)
            out[f"{name}.scales"] = torch.zeros(inp // group, o, dtype=torch.float16)
    return st, real, out


def write_checkpoint(tmp_path, raw, packed, real, qc):
    st = pytest.importorskip("safetensors.torch")
    quantised = {k.rsplit(".", 1)[0] for k in packed}
    plain = {n: torch.zeros(p.shape, dtype=torch.float16) for n, p in real.named_parameters()}
    plain = {n: t for n, t in plain.items() if n.rsplit(".", 1)[0] not in quantised or n.endswith("bias")}
    st.save_file({**plain, **packed}, str(tmp_path / "model.safetensors"), {"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps({**raw, "quantization_config": qc}))
    from paramcount.frontends.checkpoint import load_path

    return load_path(tmp_path)


@pytest.mark.parametrize("bits,group", [(4, 128), (4, 32), (4, -1), (8, 128)])
def test_gptq_equals_the_checkpoint_the_reader_reads(tmp_path, bits, group):
    _, real, packed = gptq_file(QUANT_LLAMA, bits, group)
    ck = write_checkpoint(
        tmp_path, QUANT_LLAMA, packed, real, {"quant_method": "gptq", "bits": bits, "group_size": group}
    )
    model = paramcount.load(QUANT_LLAMA)
    w = weights(model, f"gptq-int{bits}", group_size=group)
    assert ck.total == model.total  # the reader recovers the unquantised count
    assert w.bytes == ck.checkpoint.data_bytes
    assert w.by_dtype["int32"] == sum(t.nbytes for t in ck.checkpoint.stored() if t.dtype == "I32")


@pytest.mark.parametrize("group", [128, 64])
def test_awq_equals_the_checkpoint_the_reader_reads(tmp_path, group):
    _, real, packed = awq_file(QUANT_LLAMA, group)
    ck = write_checkpoint(tmp_path, QUANT_LLAMA, packed, real, {"quant_method": "awq", "bits": 4, "group_size": group})
    model = paramcount.load(QUANT_LLAMA)
    assert weights(model, "awq-int4", group_size=group).bytes == ck.checkpoint.data_bytes
    assert ck.total == model.total


def test_gptq_quantises_experts_one_by_one_and_leaves_routers():
    m = paramcount.load(MIXTRAL)
    w = weights(m, "gptq-int4")
    rows = {r.name: (r.role, r.count, r.format) for r in w.rows}
    assert rows["model.layers.0–1.block_sparse_moe.experts.0–3.w2.weight"] == ("quantised", 8, "GPTQ int4, group 128")
    assert rows["model.layers.0–1.block_sparse_moe.gate.weight"] == ("not quantised", 2, "fp16")
    assert rows["lm_head.weight"] == ("kept", 1, "fp16")  # a linear layer outside the decoder layers
    assert rows["model.embed_tokens.weight"] == ("not quantised", 1, "fp16")  # not a linear layer


# ---- GGUF: files written by the gguf package ----------------------------------------------------

GGUF_LLAMA = {**LLAMA, "hidden_size": 256, "intermediate_size": 512, "vocab_size": 64}


def gguf_bytes(tmp_path, tensors: dict, types: dict) -> dict[str, int]:
    """Write ``tensors`` (name -> float array) quantised by gguf-py to ``types``; read back
    each tensor's data bytes with GGUFReader."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for name, arr in tensors.items():
        q = gguf.GGMLQuantizationType[types[name]]
        if q == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, arr.astype(np.float32))
        elif q == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(arr, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {t.name: int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors}


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q5_1", "TQ2_0", "MXFP4"])
def test_gguf_single_type_equals_a_file_gguf_writes(tmp_path, qtype):
    """Every matrix quantised by gguf-py itself, 1-D tensors F32, as llama.cpp's rule says."""
    real = build(GGUF_LLAMA)
    tensors = {n: p.detach().float().numpy() for n, p in real.named_parameters()}
    types = {n: qtype if a.ndim >= 2 else "F32" for n, a in tensors.items()}
    on_disk = gguf_bytes(tmp_path, tensors, types)
    w = weights(paramcount.load(GGUF_LLAMA), qtype.lower(), pure=True)  # llama-quantize --pure
    assert w.bytes == sum(on_disk.values())
    assert w.by_dtype == {k: v for k, v in sorted_by_bytes(on_disk, types).items()}


def sorted_by_bytes(on_disk, types):
    acc: dict[str, int] = {}
    for n, b in on_disk.items():
        acc[types[n]] = acc.get(types[n], 0) + b
    return dict(sorted(acc.items(), key=lambda kv: (-kv[1], kv[0])))


def test_gguf_reader_and_planner_agree_on_a_k_quant_mix(tmp_path):
    """A Q4_K_M plan written as a file (raw blocks, sized from gguf-py's table), read back."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    from paramcount.gguf.reader import read_header

    m = paramcount.load({**GGUF_LLAMA, "num_hidden_layers": 8})
    w = weights(m, "q4_k_m")
    path = tmp_path / "mix.gguf"
    out = gguf.GGUFWriter(str(path), "llama")
    for r in w.rows:
        for name in unroll(r.name):
            block, size = gguf.constants.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[r.format]]
            rows = int(np.prod(r.shape[:-1])) if len(r.shape) > 1 else 1
            data = np.zeros((rows, r.shape[-1] // block * size), dtype=np.uint8)
            out.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType[r.format])
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    assert read_header(path).nbytes == w.bytes


def test_q4_k_m_puts_half_of_attn_v_and_ffn_down_in_q6_k():
    """llama.cpp's description of Q4_K_M: "Q6_K for half of the attention.wv and
    feed_forward.w2 tensors, else Q4_K" (and the output head in Q6_K)."""
    m = paramcount.load("meta-llama/Llama-2-13b-hf")
    rows = weights(m, "q4_k_m").rows
    for module in ("self_attn.v_proj", "mlp.down_proj"):
        six = sum(r.count for r in rows if module in r.name and r.format == "Q6_K")
        assert six * 2 == m.config["num_hidden_layers"] == sum(r.count for r in rows if module in r.name)
    assert {r.format for r in rows if module not in r.name and "v_proj" not in r.name} == {"Q4_K", "Q6_K", "F32"}
    assert next(r.format for r in rows if r.name == "lm_head.weight") == "Q6_K"


def test_eight_experts_bump_attn_k_and_attn_v_by_128_mib():
    """llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"."""
    m = paramcount.load("mistralai/Mixtral-8x7B-v0.1")
    kv = ("self_attn.k_proj", "self_attn.v_proj")
    mix = {r.name: r for r in weights(m, "q4_k_m").rows if any(k in r.name for k in kv)}
    pure = {r.name: r for r in weights(m, "q4_k").rows if r.name in mix}
    assert {r.format for r in mix.values()} == {"Q8_0"} and {r.format for r in pure.values()} == {"Q4_K"}
    assert sum(r.bytes for r in mix.values()) - sum(r.bytes for r in pure.values()) == 128 * 2**20


def test_bf16_equals_a_saved_bf16_checkpoint(tmp_path):
    """save_pretrained in bf16 writes exactly the planned bytes (ties once), and the planner
    reads the checkpoint model as well as the config."""
    for raw in (LLAMA, GPT2):
        build(raw).to(torch.bfloat16).save_pretrained(tmp_path / raw["model_type"])
        ck = paramcount.load(tmp_path / raw["model_type"])
        assert weights(paramcount.load(raw), "bf16").bytes == ck.checkpoint.data_bytes == weights(ck, "bf16").bytes


@pytest.mark.parametrize(("name", "published"), [("q4_0", 7.32), ("q4_1", 8.14), ("q5_0", 8.95), ("q4_k_m", 7.87)])
def test_published_llama_2_13b_file_sizes(name, published):
    """localmodels/Llama-2-13B-ggml lists its files to two decimals of a GB (q4_0/q4_1/q5_0
    from llama.cpp of May 2023, every matrix in one type; q4_K_M of June 2023, the rule that
    still holds for this model). The files add under 1 MB of vocabulary to the tensors."""
    pure = name != "q4_k_m"  # May 2023's files: every matrix in one type, as --pure does now
    gb = weights(paramcount.load("meta-llama/Llama-2-13b-hf"), name, pure=pure).bytes / GB
    assert published - 0.005 <= gb + 0.001 and gb <= published + 0.005


def test_gguf_rows_that_do_not_fill_blocks_fall_back_as_llama_cpp_does():
    m = paramcount.load(
        {**LLAMA, "hidden_size": 96, "intermediate_size": 160, "num_attention_heads": 3, "num_key_value_heads": 1}
    )
    fmt = {r.name: r.format for r in weights(m, "q4_k").rows}
    assert fmt["model.layers.0–1.mlp.down_proj.weight"] == "Q5_0"  # 160 values per row: Q4_K -> Q5_0
    assert fmt["model.layers.0–1.self_attn.q_proj.weight"] == "Q5_0"
    assert fmt["model.layers.0–1.input_layernorm.weight"] == "F32"
    odd = paramcount.load(
        {**LLAMA, "hidden_size": 72, "intermediate_size": 144, "num_attention_heads": 3, "num_key_value_heads": 1}
    )
    assert {r.format for r in weights(odd, "q4_k").rows if r.role == "quantised"} == {"F16"}  # 72 fits no block
    # a 32-block type has no smaller block to fall back to: F16 (llama-quant.cpp tensor_type_fallback)
    assert {r.format for r in weights(odd, "q4_0", pure=True).rows if r.role == "quantised"} == {"F16"}


# ---- keep, options and errors ---------------------------------------------------------------


def test_keep_moves_tensors_to_high_precision():
    m = paramcount.load(MIXTRAL)
    default = weights(m, "nf4")
    none = weights(m, "nf4", keep="none")
    assert none.bytes < default.bytes  # lm_head quantised too
    attention = weights(m, "nf4", keep="default,attention")
    kept = {r.name for r in attention.rows if r.role == "kept"}
    assert "model.layers.0–1.self_attn.q_proj.weight" in kept and "lm_head.weight" in kept
    by_glob = weights(m, "q4_k", keep=["lm_head", "model.layers.*.self_attn.v_proj.weight"])
    assert {r.name for r in by_glob.rows if r.role == "kept"} == {
        "lm_head.weight",
        "model.layers.0–1.self_attn.v_proj.weight",
    }
    assert {r.format for r in by_glob.rows if r.role == "kept"} == {"F16"}
    assert weights(m, "fp16", keep="norms").by_dtype["fp32"] == 4 * sum(
        r.parameters for r in none.rows if r.kind == "norms"
    )


def test_term_parts_sum_and_name_the_scheme():
    w = weights(paramcount.load(LLAMA), "nf4", double_quant=True)
    t = w.term()
    assert t.key == "weights" and "nf4" in t.label and "double quant" in t.label
    assert sum(p.bytes for p in t.parts) == t.bytes == w.bytes
    assert t.formula.endswith(f"= {w.bytes:,} B") and "(uint8)" in t.formula and "(fp32)" in t.formula
    assert "in bf16: embeddings, norms, output head" in t.assumption and "keep: output" in t.assumption


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: weights(m, "q4_k_xl"), r"unknown scheme 'q4_k_xl'; choose one of: fp32, fp16, bf16, .*q4_k_m"),
        (lambda m: weights(m, "bf16", group_size=64), "group_size applies to GPTQ and AWQ schemes, not bf16"),
        (lambda m: weights(m, "gptq-int4", double_quant=True), "double_quant applies to nf4 and fp4"),
        (lambda m: weights(m, ["bf16"]), r"unknown scheme \['bf16'\]"),
        (lambda m: weights(m, "awq-int4", group_size=-1), "group_size must be a positive integer, not -1"),
        (lambda m: weights(m, "gptq-int4", group_size=0), r"must be a positive integer or -1 \(one group per row\)"),
        (lambda m: weights(m, "nf4", keep="lm_haed"), "keep item 'lm_haed' names no component and matches no tensor"),
        (lambda m: weights(m, "awq-int4", group_size=48), "AWQ needs the input width 64 to be a multiple of group 48"),
    ],
)
def test_bad_options_are_clear_errors(call, message):
    with pytest.raises(ParamcountError, match=message):
        call(paramcount.load(LLAMA))


def test_mixes_refuse_families_they_are_not_stated_for():
    with pytest.raises(ParamcountError, match=r"mixes are stated here for .* not 'bert'; use a single GGUF type"):
        weights(paramcount.load(BERT), "q4_k_m")


def test_scheme_names():
    assert {"fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4", "fp4", "bnb-int8"} <= set(SCHEMES)
    assert {"gptq-int4", "gptq-int8", "awq-int4", "q4_0", "q8_0", "q4_k", "q6_k", "q4_k_m", "q5_k_m"} <= set(SCHEMES)
    assert (
        scheme("Q4_K_M").name == "q4_k_m"
        and scheme("llm.int8").name == "bnb-int8"
        and scheme("bfloat16").name == "bf16"
    )
