"""Memory plans of checkpoints read through the readers: weights as the files store them (the
``stored`` scheme), the KV cache of GGUF files (llama.cpp's layout), and the plans of models
without a KV-cache layout (weights and overhead only).

Oracles: the files themselves (safetensors header offsets parsed here, gguf-py's GGUFReader
tensor sizes), transformers' real caches after a forward pass (tests/test_kv_cache.py's
helpers), and llama.cpp's cache-size rule restated from its source (src/llama-context.cpp,
src/llama-kv-cache-iswa.cpp) independently of the library's code.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.arch.cache import NoLayout
from paramcount.cli import main
from paramcount.frontends.checkpoint import load_path
from paramcount.memory import fit, inference, kv_cache, train, weights
from paramcount.memory.context.kv_layout import attention_layout
from paramcount.memory.core.overhead import MEASURED
from paramcount.memory.runtimes.transformers.working_set import widths
from paramcount.memory.tree.widths import shape_widths

from .ckpt import TINY_LLAMA, build, save, state, torch, write_config
from .test_kv_cache import DEEPSEEK, cache_bytes, forward
from .test_kv_cache import build as build_cached
from .test_quantized import gptq
from .test_quantized import write as write_quantized

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")
Q = gguf.GGMLQuantizationType
ROOT = Path(__file__).parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny-llama.gguf"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("make_tiny_gguf", FIXTURE.with_name("make_tiny_gguf.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _script()
# transformers' equivalent of the fixture's metadata
FIXTURE_FIELDS = {
    "vocab_size": MAKE.V,
    "hidden_size": MAKE.H,
    "intermediate_size": MAKE.FF,
    "num_hidden_layers": MAKE.LAYERS,
    "num_attention_heads": MAKE.HEADS,
    "num_key_value_heads": MAKE.KV_HEADS,
    "max_position_embeddings": MAKE.CONTEXT,
}
FIXTURE_CONFIG = {"model_type": "llama", **FIXTURE_FIELDS}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_gguf(path: Path, arch: str, meta: dict[str, Any], tensors: list | None = None, split: int = 0) -> Path:
    """A GGUF file written by gguf-py: ``meta`` through its ``add_*`` methods, the tensors
    quantised by gguf-py itself (one F32 embedding when none are given); ``split`` tensors per
    shard makes gguf-py write NAME-0000i-of-0000n.gguf shards instead."""
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), arch, split_max_tensors=split)
    for key, value in meta.items():
        getattr(w, f"add_{key}")(value)
    for name, shape, q in tensors or [("token_embd.weight", (64, 32), Q.F32)]:
        values = rng.standard_normal(shape).astype(np.float32)
        w.add_tensor(name, values) if q == Q.F32 else w.add_tensor(name, gguf.quants.quantize(values, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def header_sizes(path: Path) -> dict[str, int]:
    """Each tensor's data bytes from a safetensors header's offsets, parsed here."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    head = json.loads(data[8 : 8 + n])
    return {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in head.items() if k != "__metadata__"}


def llama_cpp_cells(tokens: int, batch: int, window: int | None) -> int:
    """llama.cpp's cells per sequence, restated from its source: llama_context pads n_ctx to 256
    and gives each of the n_seq_max streams n_ctx / n_seq_max padded to 256; n_batch =
    min(n_ctx, 2048) before the padding and n_ubatch = min(n_batch, 512); llama_kv_cache_iswa
    gives SWA layers GGML_PAD(min(size_base, n_swa + n_ubatch), 256) (unified: false)."""

    def pad(n: int) -> int:
        return (n + 255) // 256 * 256

    n_ctx = pad(tokens * batch)
    n_ctx_seq = pad(n_ctx // batch)
    n_ubatch = min(min(tokens * batch, 2048), 512)
    return n_ctx_seq if window is None else pad(min(n_ctx_seq, window * 1 + n_ubatch))


# ---- weights as stored: GGUF ---------------------------------------------------------------------


def test_fixture_is_what_its_script_writes(tmp_path):
    assert MAKE.write(tmp_path / "again.gguf").read_bytes() == FIXTURE.read_bytes()
    assert FIXTURE.stat().st_size < 50_000


def test_gguf_stored_bytes_are_the_files_tensor_data():
    model = paramcount.load(FIXTURE)
    w = weights(model, "stored")
    reader = gguf.GGUFReader(str(FIXTURE))
    assert w.bytes == sum(int(t.n_bytes) for t in reader.tensors)
    by_type: dict[str, int] = {}
    for t in reader.tensors:
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + int(t.n_bytes)
    assert w.by_format() == dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0])))
    assert {"Q4_0", "Q8_0", "F32"} <= set(by_type)
    assert w.parameters == model.total == sum(int(t.n_elements) for t in reader.tensors)
    # the two identical layers are one row with two copies each, not unrolled
    assert sum(r.count for r in w.rows) == len(reader.tensors) > len(w.rows)
    term = w.term()
    assert term.bytes == sum(p.bytes for p in term.parts) and term.label == "weights (stored, Q4_0 GGUF file)"
    assert "/ 32 × 18 B (Q4_0)" in term.formula and "host memory" in term.assumption


def test_checkpoints_default_to_stored_with_their_compute_dtype():
    plan = inference(paramcount.load(FIXTURE))
    assert plan.settings["scheme"] == "stored" and plan.settings["stored_as"] == "Q4_0 GGUF file"
    assert plan.settings["runtime"] == "llama.cpp"  # a GGUF file's default runtime
    assert plan.settings["kv_dtype"] == "f16" and plan.settings["kv_cache"] == "llama.cpp"
    torch_plan = inference(paramcount.load(FIXTURE), runtime="transformers")
    assert torch_plan.settings["kv_dtype"] == "fp16" and torch_plan.settings["kv_cache"] == "llama.cpp"
    assert plan.settings["context"] == MAKE.CONTEXT  # the file's context_length, under the 4,096 cap
    # a plain config keeps bf16 and no stored_as
    config = inference(paramcount.load(FIXTURE_CONFIG))
    assert config.settings["scheme"] == "bf16" and "stored_as" not in config.settings
    with pytest.raises(ParamcountError, match=r"need a checkpoint .* pick a precision"):
        inference(paramcount.load(FIXTURE_CONFIG), "stored")


def test_gguf_activations_read_the_same_widths_as_the_config():
    config = paramcount.load(FIXTURE_CONFIG, model_class="LlamaForCausalLM")
    assert shape_widths(paramcount.load(FIXTURE)) == widths(config)


# ---- weights as stored: safetensors ----------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """tiny llama saved by transformers' save_pretrained in bf16 and in fp32."""
    out = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        folder = tmp_path_factory.mktemp(name)
        build({**TINY_LLAMA, "torch_dtype": None}, dtype=dtype).save_pretrained(folder)
        out[name] = folder
    return out


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_safetensors_stored_bytes_are_the_headers_sizes(saved, dtype):
    model = paramcount.load(saved[dtype])
    sizes = header_sizes(saved[dtype] / "model.safetensors")
    w = weights(model, "stored")
    assert w.bytes == sum(sizes.values()) and w.options == f"safetensors: {dtype.upper().replace('FP', 'F')}"
    assert w.parameters == model.total == paramcount.load(TINY_LLAMA).total
    plan = inference(model)
    assert plan.settings["compute_dtype"] == plan.settings["kv_dtype"] == dtype


def test_safetensors_plan_has_the_configs_cache_and_activations(saved):
    """A checkpoint with config.json plans like its config: the same KV cache and activations."""
    model = paramcount.load(saved["bf16"])
    mine, theirs = inference(model, context=100), inference(paramcount.load(TINY_LLAMA), context=100)
    for key in ("kv_cache", "activations"):
        assert mine.term(key).bytes == theirs.term(key).bytes > 0
    assert kv_cache(model, 100).bytes == kv_cache(paramcount.load(TINY_LLAMA), 100).bytes
    trained, theirs = train(model, context=100), train(paramcount.load(TINY_LLAMA), context=100)
    assert trained.term("activations").bytes == theirs.term("activations").bytes > 0


def test_buffers_and_tied_copies_are_not_counted(tmp_path):
    """The files hold a rotary buffer and a second copy of the tied head: loading drops the
    buffer (transformers builds its own) and shares the tied tensor, so neither is counted."""
    raw = {**TINY_LLAMA, "tie_word_embeddings": True}
    tensors = dict(state(build(raw)))
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(8)
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, raw)
    model = load_path(tmp_path)
    sizes = header_sizes(tmp_path / "model.safetensors")
    left_out = sizes["lm_head.weight"] + sizes["model.layers.0.self_attn.rotary_emb.inv_freq"]
    w = weights(model, "stored")
    assert w.bytes == sum(sizes.values()) - left_out
    assert "1 buffer(s) (32 B" in w.term().assumption and "1 stored copy(ies) of tied tensors" in w.term().assumption


def test_gptq_checkpoint_as_stored_is_the_gptq_scheme(tmp_path):
    """A GPTQ-layout checkpoint: qweight, qzeros, scales and g_idx on one row per linear layer,
    the whole equal to the file's data and to the gptq-int4 scheme computed from the shapes."""
    model = write_quantized(tmp_path, gptq(), {"quant_method": "gptq", "bits": 4, "group_size": 32})
    w = weights(model, "stored")
    assert w.bytes == sum(header_sizes(tmp_path / "model.safetensors").values())
    assert w.bytes == weights(paramcount.load(TINY_LLAMA), "gptq-int4", group_size=32).bytes
    packed = [r for r in w.rows if r.format == "int4 GPTQ (I32)"]
    assert {tuple(p.what for p in r.parts) for r in packed} == {("qweight", "GPTQ zeros", "GPTQ scales", "GPTQ g_idx")}
    assert inference(model).settings["kv_dtype"] == "fp16"


def test_stored_takes_no_options(saved):
    model = paramcount.load(saved["bf16"])
    with pytest.raises(ParamcountError, match="--keep applies to schemes computed from the shapes"):
        weights(model, "stored", keep="lm_head")
    with pytest.raises(ParamcountError, match="group_size applies to GPTQ and AWQ schemes, not stored"):
        weights(model, "stored", group_size=64)


# ---- KV cache of GGUF files ------------------------------------------------------------------------


def test_gguf_llama_cache_equals_transformers_cache():
    """The fixture's cache is the equivalent transformers Llama's, token for token (transformers'
    rule), and under llama.cpp's rule whole blocks of 256 cells: equal at 256 tokens."""
    model, real = paramcount.load(FIXTURE), build_cached("llama", FIXTURE_FIELDS, "LlamaForCausalLM")
    assert kv_cache(model, 9, batch=2, dtype="fp32", cache="dynamic").bytes == cache_bytes(forward(real, 9, batch=2))
    at_256 = cache_bytes(forward(real, 256, batch=1))
    assert kv_cache(model, 256, dtype="fp32").bytes == at_256
    assert kv_cache(model, 1, dtype="fp32").bytes == kv_cache(model, 256, dtype="fp32").bytes == at_256
    assert kv_cache(model, 257, dtype="fp32").bytes == 2 * at_256
    assert kv_cache(model, 100).dtype == "fp16"


GEMMA2 = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2}
GEMMA2_META = {
    "block_count": 3,
    "embedding_length": 32,
    "head_count": 4,
    "head_count_kv": 2,
    "key_length": 8,
    "value_length": 8,
    "sliding_window": 4,
    "context_length": 8192,
}


def test_gguf_gemma2_slides_the_layers_transformers_slides(tmp_path):
    model = paramcount.load(write_gguf(tmp_path / "g2.gguf", "gemma2", GEMMA2_META))
    layout = attention_layout(model)
    assert [(k.attention, k.layers, k.window, k.where) for k in layout.kinds] == [
        ("sliding", 2, 4, "0, 2"),
        ("full", 1, None, "1"),
    ]
    fields = {**GEMMA2, "vocab_size": 64, "intermediate_size": 40, "head_dim": 8, "sliding_window": 4}
    real = cache_bytes(forward(build_cached("gemma2", fields, "Gemma2ForCausalLM"), 9, batch=2))
    assert kv_cache(model, 9, batch=2, dtype="fp32", cache="dynamic").bytes == real


@pytest.mark.parametrize(("tokens", "batch"), [(9, 1), (1000, 1), (5000, 1), (5000, 3), (300, 2)])
def test_gguf_sliding_cache_follows_llama_cpps_rule(tmp_path, tokens, batch):
    model = paramcount.load(write_gguf(tmp_path / "g2.gguf", "gemma2", {**GEMMA2_META, "sliding_window": 700}))
    got = kv_cache(model, tokens, batch=batch)
    per_cell = 2 * 2 * 8 * 2  # K and V, 2 KV heads of 8, fp16
    full, swa = llama_cpp_cells(tokens, batch, None), llama_cpp_cells(tokens, batch, 700)
    assert got.bytes == batch * per_cell * (1 * full + 2 * swa)
    assert [r.tokens for r in got.layers] == [swa, full]
    assert "n_swa = min(n_ctx_seq, W + min(T·B, 512))" in got.term().assumption


def test_gguf_gemma3_phi3_falcon_layouts(tmp_path):
    base = {"block_count": 7, "embedding_length": 32, "head_count": 4, "head_count_kv": 2}
    g3 = paramcount.load(write_gguf(tmp_path / "g3.gguf", "gemma3", {**base, "sliding_window": 5}))
    assert [(k.attention, k.layers) for k in attention_layout(g3).kinds] == [("sliding", 6), ("full", 1)]
    fields = {**GEMMA2, "num_hidden_layers": 7, "vocab_size": 64, "intermediate_size": 40, "head_dim": 8}
    fields["sliding_window"] = 5
    real = cache_bytes(forward(build_cached("gemma3_text", fields, "Gemma3ForCausalLM"), 9, batch=2))
    assert kv_cache(g3, 9, batch=2, dtype="fp32", cache="dynamic").bytes == real
    # llama.cpp switches Phi-3's window off: every layer full, and the note says so
    phi3 = attention_layout(paramcount.load(write_gguf(tmp_path / "p3.gguf", "phi3", {**base, "sliding_window": 5})))
    assert [(k.attention, k.layers) for k in phi3.kinds] == [("full", 7)] and "Phi-3" in " ".join(phi3.notes)
    # Falcon's grouped KV heads stay grouped in llama.cpp
    falcon = attention_layout(paramcount.load(write_gguf(tmp_path / "f.gguf", "falcon", base)))
    assert falcon.kinds[0].kv_heads == 2 and falcon.per_token_elements == 7 * 2 * 2 * 8


def test_gguf_deepseek2_caches_the_mla_latent_as_transformers(tmp_path):
    """llama.cpp's MLA cache (one key_length-wide row per token, no V) is the latent transformers'
    DeepSeek-V3 caches: kv_lora_rank + the rotary key."""
    c = DEEPSEEK
    meta = {
        "block_count": c["num_hidden_layers"],
        "embedding_length": c["hidden_size"],
        "head_count": c["num_attention_heads"],
        "head_count_kv": 1,
        "key_length": c["kv_lora_rank"] + c["qk_rope_head_dim"],
        "value_length": c["kv_lora_rank"],
        "key_length_mla": c["qk_nope_head_dim"] + c["qk_rope_head_dim"],
        "value_length_mla": c["v_head_dim"],
        "kv_lora_rank": c["kv_lora_rank"],
        "rope_dimension_count": c["qk_rope_head_dim"],
    }
    model = paramcount.load(write_gguf(tmp_path / "ds.gguf", "deepseek2", meta))
    real = cache_bytes(forward(build_cached("deepseek_v3", DEEPSEEK, "DeepseekV3ForCausalLM"), 7, batch=2))
    assert kv_cache(model, 7, batch=2, dtype="fp32", cache="dynamic").bytes == real
    assert attention_layout(model).mla == "latent"
    with pytest.raises(ParamcountError, match=r"llama\.cpp caches the MLA latent"):
        kv_cache(model, 7, mla="expanded")
    # an older file without the MLA keys caches per-head keys and values, as its metadata says
    old = {k: v for k, v in meta.items() if not k.endswith("_mla")} | {"head_count_kv": 4, "key_length": 20}
    plain = attention_layout(paramcount.load(write_gguf(tmp_path / "old.gguf", "deepseek2", old)))
    assert plain.mla is None and plain.per_token_elements == 3 * 4 * (20 + 16)


def test_gguf_per_layer_kv_heads(tmp_path):
    """head_count_kv as one value per layer; a layer with none keeps no cache."""
    meta = {"block_count": 3, "embedding_length": 32, "head_count": 4, "head_count_kv": [2, 0, 1]}
    got = kv_cache(paramcount.load(write_gguf(tmp_path / "h.gguf", "llama", meta)), 256)
    assert [(r.kind.kv_heads, r.kind.where) for r in got.layers] == [(2, "0"), (1, "2")]
    assert got.bytes == 256 * 2 * 8 * 2 * (2 + 1)


def test_gguf_refusals(tmp_path):
    mamba = paramcount.load(write_gguf(tmp_path / "m.gguf", "mamba", {"block_count": 2, "embedding_length": 32}))
    with pytest.raises(NoLayout, match="no KV-cache layout for GGUF architecture 'mamba'"):
        kv_cache(mamba, 16)
    deep = paramcount.load(write_gguf(tmp_path / "d.gguf", "llama", {**GEMMA2_META, "block_count": 100_000}))
    with pytest.raises(NoLayout, match=r"block_count 100,000 is over llama\.cpp's 512"):
        kv_cache(deep, 16)
    with pytest.raises(ParamcountError, match=r"the llama\.cpp cache is for GGUF files"):
        kv_cache(paramcount.load(TINY_LLAMA), 16, cache="llama.cpp")


def test_header_bytes_alone_give_the_layout_the_file_gives(tmp_path):
    """A model from header bytes (the web page's upload) keeps every key the cache reads, so it
    gets the layout the file on disk gets; a key the file does not state is refused by name."""
    from paramcount.gguf.reader import parse, to_model

    path = write_gguf(tmp_path / "g3.gguf", "gemma3", {**GEMMA2_META, "block_count": 7})
    upload = to_model(parse(path.read_bytes(), "upload.gguf"))
    assert attention_layout(upload).kinds == attention_layout(paramcount.load(path)).kinds
    assert attention_layout(upload).kinds[0].window == 4
    headless = {k: v for k, v in GEMMA2_META.items() if k != "head_count"}
    bare = write_gguf(tmp_path / "bare.gguf", "gemma3", {**headless, "block_count": 7})
    with pytest.raises(NoLayout, match=r"gemma3\.attention\.head_count is needed .* does not state it"):
        attention_layout(paramcount.load(bare))


def test_a_split_file_is_read_whole_from_any_shard(tmp_path):
    """gguf-py's shards of the fixture's tensors: the stored bytes are all shards' tensor data,
    and the metadata (file type, sliding window) comes from the first shard's header."""
    meta = {**GEMMA2_META, "block_count": MAKE.LAYERS, "file_type": gguf.LlamaFileType.MOSTLY_Q4_0}
    write_gguf(tmp_path / "g3.gguf", "gemma3", meta, MAKE.tensors(), split=7)
    shards = sorted(tmp_path.glob("g3-*-of-*.gguf"))
    model = paramcount.load(shards[1])
    assert len(shards) == 3 and "*" in model.source
    tensors = [t for shard in shards for t in gguf.GGUFReader(str(shard)).tensors]
    w = weights(model, "stored")
    assert w.bytes == sum(int(t.n_bytes) for t in tensors) and w.options == "Q4_0 GGUF file"
    assert attention_layout(model).kinds[0].window == GEMMA2_META["sliding_window"]


# ---- models without a KV-cache layout: weights and overhead only --------------------------------------


def test_printouts_and_bare_checkpoints_plan_weights_and_overhead(tmp_path):
    printout = paramcount.load(ROOT / "tests" / "fixtures" / "bloom-1b4-zh.txt")
    save(tmp_path / "model.safetensors", state(build(TINY_LLAMA)))  # no config.json beside it
    bare = paramcount.load(tmp_path)
    for model, scheme in ((printout, "bf16"), (bare, "stored")):
        plan = inference(model)
        assert plan.settings["scheme"] == scheme and plan.partial and "transformers config" in plan.partial
        assert [t.key for t in plan.terms] == ["weights", "overhead"]
        w = plan.term("weights").bytes
        assert plan.term("overhead").bytes == MEASURED.split(w, 0) and plan.total == w + MEASURED.split(w, 0)
        assert plan.to_dict()["partial"] == plan.partial and plan.settings["context"] is None
    row = fit(bare, "rtx4090").rows[0]
    assert row.precision == "stored" and row.max_context is None and row.max_batch is None
    assert row.to_dict()["partial"] == row.plan.partial
    unmapped = paramcount.load(write_gguf(tmp_path / "m.gguf", "rwkv6", {"block_count": 2, "embedding_length": 32}))
    assert "'rwkv6'" in inference(unmapped).partial
    bare_mamba = paramcount.load(write_gguf(tmp_path / "s.gguf", "mamba", {"block_count": 2, "embedding_length": 32}))
    assert "mamba.ssm.conv_kernel" in inference(bare_mamba).partial  # llama.cpp requires it


# ---- the command line ---------------------------------------------------------------------------------


def test_cli_memory_and_fit_of_a_gguf_file(capsys):
    code, out, _ = run(capsys, "memory", str(FIXTURE), "--context", "1000", "--width", "120")
    assert code == 0
    assert "weights as stored (Q4_0 GGUF file) · KV cache f16 (llama.cpp) · 1,000 tokens × batch 1" in out
    assert "L · (row_k + row_v) · cells · streams = 2 · (32 + 32) B · 1,024 · 1 = 131,072 B" in out
    code, out, _ = run(
        capsys, "memory", str(FIXTURE), "--context", "1000", "--runtime", "transformers", "--width", "120"
    )
    assert "n_ctx_seq · B × 2 B = 2 · 2 · 2 · 8 · 1,024 · 1 × 2 B" in out
    code, out, _ = run(capsys, "fit", str(FIXTURE), "--gpu", "rtx4090", "--width", "120")
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines() if "│" in line]
    assert rows[0] == "stored" and "q4_k_m" in rows and "nf4" not in rows and "2,048 (model max)" in out
    code, out, _ = run(capsys, "memory", str(FIXTURE), "--dtype", "bf16", "--json")
    data = json.loads(out)
    assert data["settings"]["scheme"] == "bf16" and data["settings"]["kv_cache"] == "llama.cpp"
    padding = sum(p["bytes"] for p in data["terms"][0]["parts"] if p["key"] == "weights.padding")  # ggml-cuda's
    host = next(t["bytes"] for t in data["terms"] if t["key"] == "host_weights")  # token_embd, on the host
    every = data["terms"][0]["bytes"] - padding + host
    assert every == paramcount.load(FIXTURE).total * 2


def test_cli_plans_a_printout_and_a_bare_checkpoint(capsys, tmp_path):
    code, out, _ = run(capsys, "memory", "tests/fixtures/bloom-1b4-zh.txt", "--width", "120")
    assert code == 0 and "weights and overhead only (no KV cache)" in out and "put config.json beside" in out
    save(tmp_path / "model.safetensors", state(build(TINY_LLAMA)))
    code, out, _ = run(capsys, "fit", str(tmp_path), "--gpu", "rtx4090", "--width", "120")
    assert code == 0 and "n/a" in out and "every figure is weights + overhead only" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["memory", "gpt2", "--dtype", "stored"], "weights as stored need a checkpoint"),
        (["memory", "gpt2", "--kv-cache", "llama.cpp"], "the llama.cpp cache is for GGUF files"),
        (["memory", str(FIXTURE), "--keep", "lm_head"], "--keep applies to schemes computed from the shapes"),
        (["fit", str(FIXTURE), "--gpu", "rtx4090", "--dtype", "stored", "--kv-dtype", "fp7"], "cache types are"),
    ],
)
def test_cli_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
