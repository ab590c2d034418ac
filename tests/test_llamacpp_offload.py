"""llama.cpp on a GPU keeps its input layer in host memory (llama_model_base::load_tensors:
``dev_input = {cpu_dev, cpu_buft_list}``): the plan's total is the device's buffers only.

The expectations are read off the tensors themselves, by llama.cpp's rules: with every layer
offloaded, the tensors of LLM_TENSOR_LAYER_INPUT (llama-arch.cpp: token_embd, position_embd,
token_types, per_layer_token_embd) stay in the CPU_Mapped buffer, everything else goes to CUDA0,
and a file without output.weight gets token_embd a second time there as its output head
(create_tensor with TENSOR_DUPLICATED). A config's token embedding is found by its transformers
name here, a file's by its GGUF name; the CPU plan (``--device cpu``) is every tensor once. On the
GPU each tensor takes what ggml-cuda allocates for it (:func:`cuda_bytes`).
"""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.dtypes import DTYPES
from paramcount.errors import ParamcountError
from paramcount.memory import inference
from paramcount.memory.core.gpus import custom
from paramcount.memory.fit import fit
from paramcount.memory.runtimes.llamacpp.placement import EXPS, n_cpu_moe, overrides
from paramcount.memory.weights.schemes import weights

from .gguf_files import gemma3_spec, llama_spec, write

CONTEXT = 4096
INPUT_NAMES = ("token_embd.weight", "position_embd.weight", "token_types.weight", "per_layer_token_embd.weight")


def plans(model, scheme: str | None = None, context: int = CONTEXT):
    gpu = inference(model, scheme, context=context, runtime="llama.cpp")
    cpu = inference(model, scheme, context=context, runtime="llama.cpp", device="cpu")
    return gpu, cpu


def cuda_bytes(shape: tuple[int, ...], qtype: str, nbytes: int) -> int:
    """One tensor in a CUDA buffer: ggml-cuda's get_alloc_size (a quantised tensor whose rows are
    not a multiple of MATRIX_ROW_PADDING = 512 values gets one row of the missing values), padded
    to the buffer type's 128 B alignment by ggml_backend_alloc_ctx_tensors_from_buft."""
    b = DTYPES.get(qtype)
    if b is not None and b.elements > 1 and shape[-1] % 512:
        nbytes += (512 - shape[-1] % 512) // b.elements * b.bytes
    return -(-nbytes // 128) * 128


def on_gpu(rows) -> int:
    return sum(r.count * cuda_bytes(r.shape, r.format, r.bytes // r.count) for r in rows if r.count)


def row_bytes(model, scheme: str, name: str) -> tuple[int, int]:
    """(every tensor's bytes, the named tensor's bytes) in the planned file."""
    rows = weights(model, scheme).rows
    return sum(r.bytes for r in rows), sum(r.bytes for r in rows if r.name == name)


# ---- from a config ----------------------------------------------------------------------------


def test_an_untied_model_keeps_its_token_embedding_on_the_host():
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    assert not model.config.get("tie_word_embeddings")
    every, embd = row_bytes(model, "q4_k_m", "model.embed_tokens.weight")
    gpu, cpu = plans(model, "q4_k_m")
    assert embd > 0
    assert gpu.term("weights").bytes == every - embd
    assert gpu.term("host_weights").bytes == embd and gpu.term("host_weights").host
    assert gpu.host == embd + gpu.term("host_compute").bytes  # and the CPU backend's compute buffer
    assert gpu.total == sum(t.bytes for t in gpu.terms) - gpu.host
    host = gpu.term("host_weights")
    assert "CUDA0 model buffer" in gpu.term("weights").label and "CPU_Mapped model buffer" in host.label
    assert "load_tensors" in host.source and "LLM_TENSOR_LAYER_INPUT" in host.source
    assert cpu.term("weights").bytes == every and cpu.host == 0
    assert not any(t.host for t in cpu.terms) and cpu.total == sum(t.bytes for t in cpu.terms)


@pytest.mark.parametrize("hub", ["Qwen/Qwen2.5-0.5B", "google/gemma-3-1b-pt"])
def test_a_tied_model_loads_its_embedding_again_on_the_gpu(hub):
    """No output.weight: token_embd stays on the host and its copy, the output head, is on the
    GPU, so the device holds as many bytes as the file; the host the embedding again."""
    model = paramcount.load(hub)
    assert model.config.get("tie_word_embeddings", True)
    every, embd = row_bytes(model, "q4_k_m", "model.embed_tokens.weight")
    gpu, cpu = plans(model, "q4_k_m")
    weights_gpu = gpu.term("weights")
    rows = weights(model, "q4_k_m").rows
    embedding = [r for r in rows if r.name == "model.embed_tokens.weight"]
    assert weights_gpu.bytes == on_gpu(rows) > cpu.term("weights").bytes == every  # the copy, padded
    assert on_gpu(embedding) > embd  # rows of 896 (Qwen) and 1,152 (Gemma) values: padded to 512s
    assert gpu.term("host_weights").bytes == embd > 0
    assert f"+ {embd:,} B (token_embd again as the output head)" in weights_gpu.formula
    assert sum(p.bytes for p in weights_gpu.parts) == weights_gpu.bytes
    assert "TENSOR_DUPLICATED" in weights_gpu.assumption


def test_position_and_per_layer_tables_are_input_layer_tensors():
    """GPT-2's wpe is position_embd, Gemma 4's embed_tokens_per_layer per_layer_token_embd: both
    LLM_TENSOR_LAYER_INPUT; a composite's tower tables are the mmproj file's, not the input layer."""
    for hub, names in (
        ("openai-community/gpt2", ("transformer.wte.weight", "transformer.wpe.weight")),
        (
            "google/gemma-4-E2B-it",
            ("model.language_model.embed_tokens.weight", "model.language_model.embed_tokens_per_layer.weight"),
        ),
    ):
        model = paramcount.load(hub)
        rows = weights(model, "q4_k_m").rows
        gpu, _ = plans(model, "q4_k_m", context=1024)
        assert gpu.term("host_weights").bytes == sum(r.bytes for r in rows if r.name in names) > 0, hub
        assert "not mapped here" not in gpu.term("weights").assumption  # a composite: its language model's arch


# ---- from a GGUF file -------------------------------------------------------------------------


def spec_bytes(spec: dict) -> dict[str, int]:
    out = {}
    for name, shape, qtype in spec["tensors"]:
        n = 1
        for d in shape:
            n *= d
        b = DTYPES[qtype]
        out[name] = n // b.elements * b.bytes
    return out


@pytest.mark.parametrize("tied", [False, True])
def test_a_gguf_file_splits_by_its_own_tensor_names(tmp_path, tied):
    pytest.importorskip("gguf")
    spec = llama_spec("split", 2, 256, 4, 2, 512, 1000, ftype="Q8_0", tied=tied)
    sizes = spec_bytes(spec)
    model = paramcount.load(str(write(spec, tmp_path / "split.gguf")))
    gpu, cpu = plans(model)
    host = sum(v for k, v in sizes.items() if k in INPUT_NAMES)
    assert host == sizes["token_embd.weight"]
    assert gpu.term("host_weights").bytes == host
    shapes = {name: (shape, qtype) for name, shape, qtype in spec["tensors"]}
    device = [name for name in sizes if name not in INPUT_NAMES] + (["token_embd.weight"] if tied else [])
    assert gpu.term("weights").bytes == sum(cuda_bytes(*shapes[n], sizes[n]) for n in device)
    assert sum(cuda_bytes(*shapes[n], sizes[n]) for n in device) > sum(sizes[n] for n in device)  # rows of 256
    assert cpu.term("weights").bytes == sum(sizes.values()) and cpu.host == 0


def test_a_gemma3_file_without_output_weight(tmp_path):
    pytest.importorskip("gguf")
    spec = gemma3_spec("g3", 2, 256, 4, 1, 64, 512, 2048, ftype="F16")
    sizes = spec_bytes(spec)
    assert "output.weight" not in sizes
    gpu, _ = plans(paramcount.load(str(write(spec, tmp_path / "g3.gguf"))))
    shapes = {name: (shape, qtype) for name, shape, qtype in spec["tensors"]}
    device = sum(cuda_bytes(*shapes[n], b) for n, b in sizes.items())  # token_embd once more, as the output
    assert gpu.term("weights").bytes == device and gpu.term("host_weights").bytes == sizes["token_embd.weight"]


# ---- fit, JSON, the table ---------------------------------------------------------------------


def test_fit_compares_the_device_total_with_the_gpu():
    """A GPU with room for the device's buffers but not for the input layer too fits: the input
    layer is host memory."""
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    plan = inference(model, "q4_k_m", context=CONTEXT, runtime="llama.cpp")
    card = custom(f"{(plan.total + plan.host // 2) / 10**6:.6f}MB")  # to the byte
    row = fit(model, card, context=CONTEXT, runtime="llama.cpp", only=("q4_k_m",)).rows[0]
    assert row.plan.total == plan.total and row.fits and row.headroom == plan.host // 2
    assert row.max_context is not None and row.max_context >= CONTEXT
    assert row.plan.planner.total(row.max_context) <= card.usable
    doc = row.to_dict()
    held = {k: plan.term(k).bytes for k in ("host_weights", "host_compute")}
    assert doc["host"]["bytes"] == plan.host == sum(held.values()) and doc["host_terms"] == held
    assert sum(doc["terms"].values()) == doc["total"]["bytes"]


def test_json_marks_host_memory(capsys):
    argv = ["memory", "meta-llama/Llama-3.1-8B", "--runtime", "llama.cpp", "--dtype", "q4_k_m", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    host = [t for t in doc["terms"] if t.get("host")]
    assert [t["key"] for t in host] == ["host_weights", "host_compute"]
    assert doc["host"]["bytes"] == sum(t["bytes"] for t in host)
    assert doc["total"]["bytes"] == sum(t["bytes"] for t in doc["terms"] if not t.get("host"))
    assert main([*argv, "--device", "cpu"]) == 0
    cpu = json.loads(capsys.readouterr().out)
    assert "host" not in cpu and not any("host" in t for t in cpu["terms"])


def test_the_table_puts_host_memory_below_the_gpu_total(capsys):
    argv = ["memory", "Qwen/Qwen2.5-0.5B", "--runtime", "llama.cpp", "--dtype", "q4_k_m", "--width", "120"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    total = next(i for i, line in enumerate(lines) if line.lstrip().startswith("total on the GPU"))
    host = next(i for i, line in enumerate(lines) if "CPU_Mapped model buffer" in line)
    assert host == total + 1 and "host" in lines[host]


# ---- -ngl, -ot, --n-cpu-moe, -ts: the buffers per device --------------------------------------


def placed(model, scheme="q4_k_m", context=CONTEXT, **placement):
    return inference(model, scheme, context=context, runtime="llama.cpp", **placement)


def gguf_rows(spec):
    """Each tensor of a spec: (name, shape, type, bytes)."""
    sizes = spec_bytes(spec)
    return [(name, tuple(shape), qtype, sizes[name]) for name, shape, qtype in spec["tensors"]]


def layer_of(name: str, outside: int) -> int:
    """A GGUF tensor's block number; ``outside`` for the others (the output layer's index)."""
    return int(name.split(".")[1]) if name.startswith("blk.") else outside


@pytest.mark.parametrize("ngl", [0, 1, 2, 3, 5])
def test_a_gguf_files_layers_by_ngl(tmp_path, ngl):
    """blk.i goes to the GPU when i >= n_layer + 1 - ngl; output.weight and output_norm with the
    output layer (on the GPU for ngl >= 1); token_embd on the host."""
    pytest.importorskip("gguf")
    spec = llama_spec("ngl", 4, 256, 4, 2, 512, 1000, ftype="Q8_0")
    model = paramcount.load(str(write(spec, tmp_path / "ngl.gguf")))
    plan = placed(model, None, gpu_layers=ngl)
    start = 4 + 1 - ngl
    on = [r for r in gguf_rows(spec) if layer_of(r[0], 4) >= start and r[0] not in INPUT_NAMES]
    off = [r for r in gguf_rows(spec) if r not in on]
    assert plan.term("weights").bytes == sum(cuda_bytes(s, q, b) for _, s, q, b in on)
    assert plan.term("host_weights").bytes == sum(b for *_, b in off)
    full = placed(model, None, gpu_layers=99)
    per_layer = full.term("kv_cache").bytes // 4
    gpu_layers = max(0, min(4, 4 - start))
    assert plan.settings["n_gpu_layers"] == ngl and plan.settings["arguments"] == f"-ngl {ngl}"
    kv = plan.term("kv_cache").bytes if gpu_layers else 0
    assert kv == gpu_layers * per_layer
    assert sum(t.bytes for t in plan.terms if t.key == "host_kv") == (4 - gpu_layers) * per_layer
    assert "CUDA_Host" in plan.term("output").label if ngl else "CPU" in plan.term("output").label
    assert plan.term("output").host and plan.term("host_compute").host


def test_every_layer_given_is_the_default_plan_on_the_gpu():
    """-ngl 33 on a 32-layer model places what the default plan does; the output buffer and the
    CPU backend's compute buffer are then shown in host memory."""
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    default, given = placed(model), placed(model, gpu_layers=33)
    for key in ("weights", "kv_cache", "compute", "overhead"):
        assert given.term(key).bytes == default.term(key).bytes, key
    assert given.total == default.total - default.term("output").bytes
    assert given.term("host_weights").bytes == default.term("host_weights").bytes


def test_ngl_zero_peaks_at_the_output_op():
    """Every weight in host memory: the first GPU still runs a prompt's ops (offload_op), each
    split's copied weights freed after it, so its peak is the output op: the logits, the output
    weight copied in and one n_embd block (issue 35's measurement at -ngl 0)."""
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    every, none = placed(model, gpu_layers=33), placed(model, gpu_layers=0)
    head = next(r for r in weights(model, "q4_k_m").rows if r.name == "lm_head.weight")
    t, shape = 512, none.planner.shape
    assert none.term("weights").bytes == 0
    assert none.term("compute").bytes == shape.vocab * t * 4 + head.bytes + shape.hidden * t * 4
    assert "replayed as llama.cpp's scheduler splits" in none.term("compute").assumption  # splits.py
    assert none.term("host_kv").bytes == every.term("kv_cache").bytes
    assert none.term("host_weights").bytes == sum(r.bytes for r in weights(model, "q4_k_m").rows)


def test_n_cpu_moe_keeps_the_first_layers_experts_on_the_host():
    model = paramcount.load("Qwen/Qwen3-30B-A3B")
    rows = weights(model, "q4_k_m").rows
    full = placed(model)
    for n in (1, 10, 48):
        plan = placed(model, overrides=n_cpu_moe(n))
        experts = sum(r.bytes // r.count * sum(1 for i in layers(r.name) if i < n) for r in rows if r.kind == "experts")
        embd = sum(r.bytes for r in rows if r.name == "model.embed_tokens.weight")
        assert plan.term("host_weights").bytes == embd + experts, n
        assert plan.term("kv_cache").bytes == full.term("kv_cache").bytes  # -ot moves no cache
        assert plan.settings["arguments"] == f"--n-cpu-moe {n}"
    assert placed(model, overrides=((EXPS, "CPU"),)).term("weights").bytes == plan.term("weights").bytes


def test_an_override_can_put_the_input_layer_on_the_gpu():
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    plan = placed(model, overrides=overrides("token_embd=CUDA0"))
    assert all(t.key != "host_weights" for t in plan.terms)


def test_two_gpus_by_tensor_split():
    """-ts 3,1 on 33 offloaded layers: k / 33 < 3/4 for k <= 24: layers 0-24 on CUDA0, 25-31 and
    the output layer on CUDA1; each GPU's parts name it and sum to the term."""
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    plan = placed(model, tensor_split=(3.0, 1.0))
    one = placed(model, gpu_layers=33)
    kv = plan.term("kv_cache")
    assert [p.key for p in kv.parts] == ["kv_cache.CUDA0", "kv_cache.CUDA1"]
    assert [p.bytes for p in kv.parts] == [25 * kv.bytes // 32, 7 * kv.bytes // 32]
    for key in ("weights", "kv_cache", "compute"):
        t = plan.term(key)
        assert sum(p.bytes for p in t.parts) == t.bytes, key
    assert plan.term("weights").bytes == one.term("weights").bytes
    assert plan.term("overhead").bytes == 2 * one.term("overhead").bytes
    compute = {p.key: p.bytes for p in plan.term("compute").parts}
    # pipeline parallelism (every layer on 2 GPUs, -sm layer): the last GPU keeps 4 copies of its
    # split inputs (two n_embd blocks, positions, KV indices, masks, output ids), the host 3 more of
    # every graph input (tests/test_llamacpp_multidev.py holds both to llama.cpp)
    t, embd = 512, 4096 * 512 * 4
    masks = one.term("host_compute").bytes - 2 * t * 4 - 2 * embd - 2 * t * 8 - t * 4
    small = t * 4 + 2 * t * 8 + masks + t * 4
    assert compute["compute.CUDA1"] == one.term("compute").bytes + 4 * (2 * embd + small)
    assert compute["compute.CUDA0"] < one.term("compute").bytes
    host = plan.term("host_compute").bytes
    assert host == one.term("host_compute").bytes + 3 * (2 * t * 4 + masks + embd + 2 * t * 8 + t * 4)
    devices = plan.settings["devices"]
    assert devices["CUDA0"] + devices["CUDA1"] == plan.total and devices["host"] == plan.host
    assert devices["CUDA0"] == sum(p.bytes for t in plan.terms for p in t.parts if p.key.endswith(".CUDA0")) + (
        one.term("overhead").bytes
    )


def test_no_kv_offload_keeps_every_cache_on_the_host():
    model = paramcount.load("meta-llama/Llama-3.1-8B")
    plan, every = placed(model, kv_offload=False), placed(model, gpu_layers=33)
    assert all(t.key != "kv_cache" for t in plan.terms)
    assert plan.term("host_kv").bytes == every.term("kv_cache").bytes
    # the attention's ops on a prompt are offloaded: the CPU backend's buffer is the one without -nkvo
    assert plan.term("host_compute").bytes == every.term("host_compute").bytes


def test_placement_flags_need_a_gpu():
    model = paramcount.load("Qwen/Qwen2.5-0.5B")
    with pytest.raises(ParamcountError) as e:
        inference(model, "q4_k_m", context=CONTEXT, runtime="llama.cpp", device="cpu", gpu_layers=3)
    assert e.value.field == "--device"


def layers(name: str) -> range:
    """The layers of a config row's name (model.layers.0–47.…)."""
    import re

    m = re.search(r"\.(\d+)(?:–(\d+))?\.", name)
    return range(int(m[1]), int(m[2] or m[1]) + 1)


def test_the_mapped_span_holds_gpu_tensors_between_host_ones(tmp_path):
    """llama.cpp maps the file from the first host tensor to the end of the last: a layer sent to
    the GPU between them is in the span it logs, not in the host bytes."""
    pytest.importorskip("gguf")
    spec = llama_spec("span", 4, 256, 4, 2, 512, 1000, ftype="Q8_0")
    model = paramcount.load(str(write(spec, tmp_path / "span.gguf")))
    plan = placed(model, None, gpu_layers=0, overrides=overrides("blk\\.1\\.=CUDA0"))
    sizes = spec_bytes(spec)
    every = sum(-(-b // 32) * 32 for b in list(sizes.values())[:-1]) + list(sizes.values())[-1]
    layer1 = sum(b for n, b in sizes.items() if n.startswith("blk.1."))
    host = plan.term("host_weights")
    assert host.bytes == every > sum(sizes.values()) - layer1  # as llama.cpp logs it
    assert sum(p.bytes for p in host.parts) == sum(sizes.values()) - layer1


def test_which_layers_cache_decides_where_the_cache_goes():
    """Gemma 4 E2B caches in its first 15 of 35 layers (the rest reuse them): sliding 0–3, 5–8,
    10–13, full 4, 9, 14. -ngl 28 offloads layers 8.. (36 − 28): sliding 8, 10–13 and full 9, 14."""
    model = paramcount.load("google/gemma-4-E2B-it")
    whole = placed(model, context=1024).term("kv_cache")
    per = {p.key: p.bytes for p in whole.parts}
    sliding, full = per["kv_cache.sliding"] // 12, per["kv_cache.full"] // 3
    plan = placed(model, context=1024, gpu_layers=28)
    assert plan.term("kv_cache").bytes == 5 * sliding + 2 * full and not plan.term("kv_cache").estimate
    assert plan.term("host_kv").bytes == 7 * sliding + 1 * full
