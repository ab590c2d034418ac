"""Ollama's own plan (paramcount.memory.runtimes.ollama), held to Ollama v0.12.10's Go source.

Every expected figure is worked out here by hand from the Go code, never by the code under test:
the tensor bytes from the spec's shapes, the KV cache and graph from ``fs/ggml/ggml.go``
``GraphSize``, the placement from ``llm/memory.go`` ``estimateGPULayers`` (each step is commented
with the Go condition it follows).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import stores
from paramcount.gguf.reader import read_header
from paramcount.memory.core.gpus import gpu
from paramcount.memory.runtimes.ollama import Asked
from paramcount.memory.runtimes.ollama.ggml import OllamaGGUF, graph_size
from paramcount.memory.runtimes.ollama.layers import Device, estimate, sizes
from paramcount.memory.runtimes.ollama.plan import estimate_plan, full_fit
from paramcount.memory.runtimes.ollama.settings import env_bool, from_env, resolve
from paramcount.memory.runtimes.ollama_vs_llamacpp import plan

from .gguf_files import gemma3_spec, llama_spec, write, write_raw

MIB = 1 << 20
MINIMUM = 457 * MIB  # ml/device.go DeviceInfo.MinimumMemory (CUDA)

# The tiny Llama: 4 blocks, embedding 256, 8 heads of 32, 2 KV heads, FFN 512, 1,000 tokens, F16.
L, E, H, HKV, D, FF, V = 4, 256, 8, 2, 32, 512, 1000
SPEC = llama_spec("tiny", L, E, H, HKV, FF, V, context=8192)
# blk.N: two F32 norms, q and o (E×E), k and v (HKV·D×E), gate, up, down (FF×E), F16 matrices
BLOCK = 2 * E * 4 + 2 * (H * D * E * 2) + 2 * (HKV * D * E * 2) + 3 * (FF * E * 2)
OUTPUT = E * 4 + V * E * 2  # memoryLayerOutput: output_norm (F32) + output (F16)
assert BLOCK == 1_116_160 and OUTPUT == 513_024  # the arithmetic above, done once more by hand


def kv(context: int, num: int = 2, den: int = 1) -> int:
    """GraphSize's default cache for one layer: context·(key_length+value_length)·heads_kv·bytes."""
    return context * (D + D) * HKV * num // den


def llama_graph(c: int, b: int = 512) -> tuple[int, int]:
    """GraphSize's "llama" case (partial, full), Go's integer arithmetic left to right."""
    full = max(4 * b * (1 + 4 * E + c * (1 + H)), 4 * b * (E + V))
    partial = 4 * b * E + max(
        4 * b * (1 + E + max(c, E)) + E * E * 9 // 16 + 4 * c * (b * H + D * HKV),
        4 * b * (E + V) + E * V * 105 // 128,
    )
    return partial, full


LAYER = BLOCK + kv(4096)  # layerSize: blk.N and its cache at the default num_ctx 4096
PARTIAL, FULL = llama_graph(4096)
assert (PARTIAL, FULL) == (77_633_536, 77_596_672)  # 524,288 + 77,109,248; 2,048 · 37,889
G = max(PARTIAL, FULL)  # the graph reserved while placing


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return paramcount.load(str(write(SPEC, tmp_path_factory.mktemp("ollama") / "tiny.gguf")))


def on(model, free: int, **asked):
    return estimate_plan(model, gpu("rtx3060"), Asked(**asked), free=free)


# ---- GraphSize --------------------------------------------------------------------------------


def ggml(tmp_path, spec) -> OllamaGGUF:
    return OllamaGGUF(read_header(write(spec, tmp_path / "m.gguf")))


def test_graph_size_is_ollamas_llama_case(tiny):
    g = graph_size(OllamaGGUF(read_header(tiny.source)), 4096, 512, 1, "")
    assert g.kv == (1_048_576,) * L  # 4096 · 64 · 2 heads · 2 B
    assert (g.partial, g.full) == (PARTIAL, FULL)


def test_graph_size_multiplies_the_context_by_num_parallel_and_takes_the_kv_type(tiny):
    f = OllamaGGUF(read_header(tiny.source))
    g = graph_size(f, 4096, 512, 2, "q4_0")  # context *= numParallel; q4_0 is 0.5 B an element
    assert g.kv == (kv(8192, 1, 2),) * L == (524_288,) * L  # 8192 · 64 · 2 heads · ½ B
    assert (g.partial, g.full) == llama_graph(8192)


def test_graph_size_of_experts_in_one_tensor(tmp_path):
    f = ggml(tmp_path, llama_spec("moe", L, E, H, HKV, FF, V, experts=4, used=2))
    exps = 4 * FF * E * 2  # blk.0.ffn_gate_exps.weight, F16
    b, c = 512, 4096
    partial = max(
        3 * exps + 4 * b * (2 * FF + HKV + E + c + D * HKV),  # 3,145,728 + 11,145,216
        4 * (c * b * H + c * D * HKV + b * 1024 + D * HKV * b),  # 70,385,664
    )
    g = graph_size(f, c, b, 1, "")
    assert (g.partial, g.full) == (partial, FULL) == (70_385_664, 77_596_672)


def test_graph_size_of_qwen2(tmp_path):
    f = ggml(tmp_path, llama_spec("q", L, E, H, HKV, FF, V, arch="qwen2"))
    b, c = 512, 4096
    full = max(4 * b * (E + V), 4 * b * (1 + 2 * E + c + c * H))
    partial = max(4 * b * (E + V) + E * V * 105 // 128, 4 * (b * (1 + 2 * E + c * (1 + H)) + E * (1 + c)))
    assert (graph_size(f, c, b, 1, "").partial, graph_size(f, c, b, 1, "").full) == (partial, full)
    assert (partial, full) == (80_743_424, 76_548_096)


def test_without_a_graph_size_the_estimate_takes_a_sixth_of_the_cache_times_gqa(tmp_path):
    f = ggml(tmp_path, llama_spec("m", L, E, H, HKV, FF, V, arch="mistral"))  # no case in GraphSize
    g = graph_size(f, 4096, 512, 1, "")
    assert (g.partial, g.full) == (0, 0)
    at = sizes(f, g, 0, [Device("CUDA", 12 << 30)])
    partial = (H // HKV) * (L * kv(4096)) // 6  # gqa · kvTotal / 6; full = partial
    assert (at.partial, at.full) == (partial, partial) == (2_796_202, 2_796_202)


# ---- estimateGPULayers ------------------------------------------------------------------------

# The GPU is used when free ≥ overhead + projector + graph + MinimumMemory + 2·layerSize, and
# starts at MinimumMemory + layerSize (the buffer). Block k (last first) goes on when
# free > overhead + allocated + graph + layerSize; the output layer when
# free > overhead + allocated + graph + memoryLayerOutput.
KEEP = MINIMUM + G + 2 * LAYER  # the least free memory that keeps the GPU
FOUR = MINIMUM + 5 * LAYER + G + OUTPUT  # four blocks placed, the output layer not (not >)


@pytest.mark.parametrize(
    ("free", "num_gpu", "vram", "total"),
    [
        (KEEP, 0, 0, MINIMUM + LAYER + L * LAYER + OUTPUT),  # kept, but block 3 needs free > KEEP
        (KEEP + 1, 1, MINIMUM + 2 * LAYER + PARTIAL, MINIMUM + 2 * LAYER + PARTIAL + 3 * LAYER + OUTPUT),
        (FOUR, 4, MINIMUM + 5 * LAYER + PARTIAL, MINIMUM + 5 * LAYER + PARTIAL + OUTPUT),
        (FOUR + 1, 5, MINIMUM + 5 * LAYER + OUTPUT + FULL, MINIMUM + 5 * LAYER + OUTPUT + FULL),
        (KEEP - 1, 0, 0, L * LAYER + OUTPUT),  # no GPU: everything overflows
    ],
)
def test_layers_placed_at_each_threshold(tiny, free, num_gpu, vram, total):
    o = on(tiny, free)
    assert (o.num_gpu, o.estimate.vram, o.estimate.total) == (num_gpu, vram, total)
    assert o.plan.total == vram and o.plan.total + o.plan.host == total  # the terms add up to Ollama's sums


def test_a_requested_num_gpu_stops_the_placement(tiny):
    o = on(tiny, 12 << 30, num_gpu=2)  # blocks 3 and 2; then layerCount >= NumGPU: the rest overflows
    assert o.num_gpu == 2 and o.estimate.split == (2,)
    assert o.estimate.vram == MINIMUM + 3 * LAYER + PARTIAL
    assert o.estimate.total == o.estimate.vram + 2 * LAYER + OUTPUT
    assert on(tiny, 12 << 30, num_gpu=99).num_gpu == L + 1  # createGPULayers stops at the last layer
    assert on(tiny, 12 << 30, num_gpu=0).num_gpu == 0


def test_the_gpu_overhead_is_reserved_but_not_counted(tiny):
    o = on(tiny, KEEP + 1000 + 1, overhead=1000)
    assert o.num_gpu == 1 and o.estimate.vram == MINIMUM + 2 * LAYER + PARTIAL
    assert on(tiny, KEEP + 1000, overhead=1000).num_gpu == 0


def test_two_gpus_share_the_blocks_and_the_partial_graph(tiny):
    # one GPU cannot take everything (FOUR + 1 is needed); on two, "multigpu should always use the
    # partial graph size" (full = partial), blocks go to room[i % 2]: 3→GPU1, 2→GPU0, 1→GPU1, 0→GPU0,
    # then the output layer to room[4 % 2] = GPU0
    free = MINIMUM + 3 * LAYER + PARTIAL + OUTPUT + 1
    o = estimate_plan(tiny, gpu("rtx3060"), Asked(), count=2, free=free)
    assert o.gpus_used == 2 and o.estimate.split == (3, 2) and o.num_gpu == L + 1
    assert o.estimate.per_gpu == (MINIMUM + 3 * LAYER + OUTPUT + PARTIAL, MINIMUM + 3 * LAYER + PARTIAL)


def test_one_gpu_is_enough_when_it_holds_every_layer(tiny):
    o = estimate_plan(tiny, gpu("rtx3060"), Asked(), count=2)  # pickBestFullFitByLibrary tries 1 first
    assert o.gpus_used == 1 and o.estimate.vram == MINIMUM + 5 * LAYER + OUTPUT + FULL


def test_metal_reserves_more_and_has_no_partial_graph(tiny):
    o = estimate_plan(tiny, gpu("apple-16gb"), Asked())
    assert o.plan.settings["library"] == "Metal"
    assert o.estimate.vram == 512 * MIB + 5 * LAYER + OUTPUT + FULL


# ---- settings ---------------------------------------------------------------------------------


def test_a_quantised_cache_needs_flash_attention(tiny):
    off = on(tiny, 12 << 30, kv_type="q4_0")  # llama: flash attention off by default
    assert off.plan.term("kv_cache").bytes == L * kv(4096)
    assert any("needs flash attention" in note for note in off.plan.notes)
    fa = on(tiny, 12 << 30, kv_type="q4_0", flash=True)
    assert fa.plan.term("kv_cache").bytes == L * kv(4096, 1, 2)
    assert fa.plan.settings["kv_cache_type"] == "q4_0"
    assert on(tiny, 12 << 30, kv_type="q5_1", flash=True).plan.settings["kv_cache_type"] == "f16"


@pytest.mark.parametrize(
    ("asked", "context"),
    [({}, 4096), ({"context": 2}, 4), ({"context": 100_000}, 8192), ({"default_context": 1024}, 1024)],
)
def test_num_ctx_as_the_server_resolves_it(tiny, asked, context):
    assert on(tiny, 12 << 30, **asked).settings.context == context


def test_num_parallel_multiplies_the_cache(tiny):
    o = on(tiny, 12 << 30, parallel=2)
    assert o.plan.term("kv_cache").bytes == L * kv(8192)


def test_the_environment_as_envconfig_reads_it():
    env = {"OLLAMA_NUM_PARALLEL": "0", "OLLAMA_FLASH_ATTENTION": "yes", "OLLAMA_CONTEXT_LENGTH": "'2048'"}
    a = from_env(env)
    assert (a.parallel, a.flash, a.default_context) == (0, True, 2048)  # 0 kept; unreadable bool: true
    assert env_bool({"X": "False"}, "X") is False and env_bool({}, "X") is None
    assert from_env({"OLLAMA_GPU_OVERHEAD": "lots"}).overhead == 0  # unreadable: the default
    assert from_env({"OLLAMA_NUM_PARALLEL": "4"}, parallel=2).parallel == 2  # a flag wins


def test_num_parallel_0_is_automatic_before_0_11_5_and_1_after(tiny):
    """sched.go: ``*numParallel <= 0`` tries defaultParallel (4 in v0.5.7), then 1; v0.11.5 on
    ``numParallel < 1`` is 1. On a card that holds four streams the old release takes four."""
    zero = from_env({"OLLAMA_NUM_PARALLEL": "0"}, context=4096)
    old = estimate_plan(tiny, gpu("rtx3060"), replace(zero, version="0.5.7"))
    assert (
        old.settings.parallel
        == 4
        == estimate_plan(tiny, gpu("rtx3060"), Asked(context=4096, version="0.5.7")).settings.parallel
    )
    for version in ("0.11.5", "0.12.10"):
        assert estimate_plan(tiny, gpu("rtx3060"), replace(zero, version=version)).settings.parallel == 1


def test_before_0_11_5_the_fit_is_checked_before_the_trained_length_cut(tiny):
    """tiny was trained at 8,192. v0.11.4's scheduler asks pickBestFullFitByLibrary at num_ctx
    32,768, which one 800 MiB card does not hold: it takes both, though NewLlamaServer then cuts
    num_ctx to 8,192. From v0.11.5 llamaServer.Load checks the fit after the cut: one card."""
    for version, cards in (("0.11.4", 2), ("0.11.5", 1), ("0.12.10", 1)):
        o = estimate_plan(tiny, gpu("rtx3060"), Asked(context=32768, parallel=1, version=version), 2, 800 << 20)
        assert (o.gpus_used, o.settings.context, o.num_gpu) == (cards, 8192, L + 1)
        asked_at_trained = Asked(context=8192, parallel=1, version=version)
        assert estimate_plan(tiny, gpu("rtx3060"), asked_at_trained, 2, 800 << 20).gpus_used == 1


# ---- refusals ---------------------------------------------------------------------------------


def test_refused_inputs_say_why(tmp_path):
    engine = write(gemma3_spec("g", 2, 64, 2, 1, 32, 128, 256), tmp_path / "g.gguf")
    with pytest.raises(ParamcountError, match="runs gemma3 on its own engine"):
        estimate_plan(SimpleNamespace(source=str(engine), class_name="GGUF"), gpu("rtx3060"))
    bare = write_raw(llama_spec("t", 1, 32, 2, 1, 64, 16), tmp_path / "raw.gguf")  # no vocabulary
    with pytest.raises(ParamcountError, match=r"tokenizer\.ggml\.tokens"):
        estimate_plan(SimpleNamespace(source=str(bare), class_name="GGUF"), gpu("rtx3060"))
    tq = write(llama_spec("t", 1, 256, 2, 1, 256, 16, ftype="TQ1_0"), tmp_path / "tq.gguf")
    with pytest.raises(ParamcountError, match="sizes tensor type TQ1_0 as 0 bytes"):
        estimate_plan(SimpleNamespace(source=str(tq), class_name="GGUF"), gpu("rtx3060"))


# ---- beside llama.cpp -------------------------------------------------------------------------


def test_llama_cpp_plan_beside_it(tiny):
    o = plan(tiny, gpu("rtx3060"))
    rows = {r["term"]: r for r in o.compared}
    assert rows["weights"]["ollama"] == L * BLOCK + OUTPUT
    assert rows["kv_cache"]["ollama"] == L * kv(4096) and rows["compute"]["ollama"] == FULL
    assert rows["total"]["ollama"] == MINIMUM + 5 * LAYER + OUTPUT + FULL
    assert rows["total"]["llama_cpp"] == o.llama_cpp.total
    assert all(r["difference"] == r["ollama"] - r["llama_cpp"] for r in rows.values())
    s = o.llama_cpp.settings
    assert (s["n_ctx"], s["flash_attn"], s["kv_dtype"]) == (4096, "off", "f16")  # what Ollama's runner passes


# ---- the CLI ----------------------------------------------------------------------------------


@pytest.fixture
def clean(monkeypatch):
    for key in ("OLLAMA_NUM_PARALLEL", "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_GPU_OVERHEAD"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)


def test_memory_and_fit_answer_num_gpu(tiny, clean, capsys, monkeypatch):
    assert main(["memory", tiny.source, "--runtime", "ollama", "--gpu", "rtx3060", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ollama"]["num_gpu"] == L + 1 and doc["settings"]["runtime"] == "ollama" and doc["gpu"]["all_layers"]
    # 540 MiB: the third block needs free > MINIMUM + G + 4·LAYER (565,491,712), the fourth 5·LAYER
    assert MINIMUM + G + 4 * LAYER < 540 * MIB <= MINIMUM + G + 5 * LAYER
    assert main(["fit", tiny.source, "--runtime", "Ollama", "--gpu", "rtx3060", "--free-vram", "540MiB"]) == 1
    assert "num_gpu 3 (3 of 5 layers on the GPU)" in capsys.readouterr().out
    # memory says the same with its exit status: not every layer on the GPU
    assert main(["memory", tiny.source, "--runtime", "ollama", "--gpu", "rtx3060", "--free-vram", "540MiB"]) == 1
    assert "num_gpu 3" in capsys.readouterr().out
    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "2")
    assert main(["memory", tiny.source, "--runtime", "ollama", "--gpu", "12GiB", "--json", "-np", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["num_parallel"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runtime", "ollama"], "--gpu: Ollama's plan is the layers it offloads to a GPU"),
        (["--gpu", "rtx3060", "--num-gpu", "3"], "--num-gpu: an Ollama setting: add --runtime ollama"),
        (["--runtime", "ollama", "--gpu", "rtx3060", "--dtype", "q4_0"], "--dtype: not an Ollama setting"),
        (["--runtime", "ollama", "--gpu", "rtx3060", "--train"], "--train: not an Ollama setting"),
        (["--runtime", "ollama", "--gpu", "rtx3060", "-ctk", "q8_0", "-ctv", "f16"], "K and V in one type"),
        (["--runtime", "ollama", "--gpu", "rtx3060", "--free-vram", "lots"], "--free-vram: expected a size"),
        (["--runtime", "ollama", "--gpu", "rtx3060", "--num-gpu", "-2"], "expected an integer ≥ -1"),
        (["bert-base-uncased", "--runtime", "ollama", "--gpu", "rtx3060"], "Ollama runs GGUF files"),
    ],
)
def test_bad_input_is_one_line(tiny, clean, capsys, args, message):
    model = [] if args[0] == "bert-base-uncased" else [tiny.source]
    assert main(["memory", *model, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def store(tmp_path, monkeypatch, *blobs) -> None:
    """``ollama:tiny:1b`` as ``ollama pull`` leaves it: blobs by digest and a manifest naming them."""
    root = tmp_path / "ollama"
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    layers = []
    for media, data in blobs:
        digest = hashlib.sha256(data).hexdigest()
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "blobs" / f"sha256-{digest}").write_bytes(data)
        layers.append({"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)})
    folder = root / "manifests" / "registry.ollama.ai" / "library" / "tiny"
    folder.mkdir(parents=True)
    (folder / "1b").write_text(json.dumps({"schemaVersion": 2, "layers": layers}))


def test_an_ollama_name_brings_its_modelfile_options(tmp_path, clean, capsys, monkeypatch):
    model = write(SPEC, tmp_path / "m.gguf").read_bytes()
    store(tmp_path, monkeypatch, (stores.MODEL, model), (stores.PARAMS, b'{"num_ctx": 1024, "num_gpu": 3}'))
    assert main(["fit", "ollama:tiny:1b", "--runtime", "ollama", "--gpu", "rtx3060", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["ollama"]["num_gpu"], doc["settings"]["num_ctx"]) == (3, 1024)
    assert main(["fit", "ollama:tiny:1b", "--runtime", "ollama", "--gpu", "rtx3060", "--num-gpu", "-1"]) == 0


RECORDED = json.loads((Path(__file__).parent / "fixtures" / "ollama_estimate.json").read_text())
PROJECTOR = RECORDED["projector"]  # the one tools/record_ollama.py ran Ollama's code on


def test_a_projector_sits_on_the_first_gpu_and_raises_num_ctx(tmp_path, clean, capsys, monkeypatch):
    projector = 64 * 64 * 2 + 256 * 64 * 2 + 256 * 4  # projectorMemoryRequirements: every tensor
    model = write(SPEC, tmp_path / "m.gguf").read_bytes()
    store(
        tmp_path,
        monkeypatch,
        (stores.MODEL, model),
        (stores.PROJECTOR, write(PROJECTOR, tmp_path / "p.gguf").read_bytes()),
    )
    assert (
        main(["memory", "ollama:tiny:1b", "--runtime", "ollama", "--gpu", "rtx3060", "--context", "1024", "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["num_ctx"] == 2048  # a model that sees images: at least 2048 (sched.GetRunner)
    terms = {t["key"]: t["bytes"] for t in doc["terms"]}
    assert terms["projector"] == projector == 41_984
    layer = BLOCK + kv(2048)
    full = llama_graph(2048)[1]
    assert doc["ollama"]["vram"]["bytes"] == MINIMUM + layer + projector + L * layer + OUTPUT + full
    assert doc["ollama_now"]["fit_target_mib"] == -(-(projector + (1 << 30)) // MIB)


# ---- today's Ollama (v0.33.0-rc2): no estimate, but num_ctx, llama-server's arguments, a prediction


@pytest.mark.parametrize(
    ("card", "count", "overhead", "context"),
    [  # server/routes.go Serve: Σ(total − overhead) ≥ 47 GiB: 262,144; ≥ 23 GiB: 32,768; else 4,096
        ("rtx3060", 1, 0, 4096),
        ("rtx3090", 1, 0, 32768),
        ("rtx3090", 1, 2 << 30, 4096),
        ("h100", 1, 0, 262144),
        ("rtx3090", 2, 0, 262144),
    ],
)
def test_todays_default_num_ctx_follows_the_vram_tier(tiny, card, count, overhead, context):
    o = estimate_plan(tiny, gpu(card), Asked(overhead=overhead), count=count)
    assert o.current["num_ctx"] == context


def test_todays_launch_and_prediction(tiny):
    import os

    o = estimate_plan(tiny, gpu("rtx3090"), Asked(num_gpu=3))
    c = o.current
    assert c["llama_server_args"] == ["-c", "32768", "-np", "1", "-ngl", "3"]  # -c is not cut to the trained 8192
    # PredictServerVRAM: file size + 2 · layers · kv heads · (embedding / heads) · min(num_ctx, trained) · 2 B
    assert c["predicted_vram"] == os.path.getsize(tiny.source) + 2 * L * HKV * (E // H) * 8192 * 2
    assert estimate_plan(tiny, gpu("rtx3090"), Asked()).current["num_gpu"] == "chosen by llama.cpp's fit (-ngl auto)"


def test_todays_fit_target_for_a_projector():
    from paramcount.memory.runtimes.ollama.current import _fit_target

    assert _fit_target(100 * MIB, -1, 5, 12 << 30) == 100 + 1024  # ⌈(mmproj + 1 GiB) / MiB⌉
    assert _fit_target(100 * MIB + 1, -1, 5, 12 << 30) == 100 + 1024 + 1
    assert _fit_target(100 * MIB, 2, 5, 12 << 30) is None  # partial text offload: projector on the CPU
    assert _fit_target(100 * MIB, -1, 5, 1 << 30) is None  # less free than it needs
    assert _fit_target(0, -1, 5, 12 << 30) is None


def test_a_vision_tower_in_the_file_goes_with_the_output_layer(tmp_path):
    spec = {**SPEC, "meta": {**SPEC["meta"], "vision.block_count": 1}}
    spec["tensors"] = [*SPEC["tensors"], ["v.blk.0.attn_q.weight", [64, 64], "F16"], ["v.post_ln.weight", [64], "F32"]]
    model = paramcount.load(str(write(spec, tmp_path / "v.gguf")))
    vision = 64 * 64 * 2 + 64 * 4  # VisionGraphSize: the v.* weights (its graph: 0 for llama)
    o = estimate_plan(model, gpu("rtx3060"), Asked(context=4096))
    assert o.settings.context == 4096 and o.plan.term("weights").bytes == L * BLOCK + OUTPUT + vision
    assert o.estimate.vram == MINIMUM + 5 * LAYER + OUTPUT + vision + FULL


# ---- Ollama's own code: tools/record_ollama.py ran estimateGPULayers (v0.12.10) on these files


@pytest.fixture(scope="module")
def recorded_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recorded")
    files = {name: write(spec, folder / f"{name}.gguf") for name, spec in RECORDED["specs"].items()}
    return files, write(RECORDED["projector"], folder / "projector.gguf")


def ours(files, projector_file, case):
    """The same estimate from paramcount: the settings as the server resolves them from the
    case's options and environment, then GraphSize and estimateGPULayers."""
    f = OllamaGGUF(read_header(files[case["model"]]))
    given = {k: case[k] for k in ("parallel", "num_gpu")} | {"context": case["num_ctx"], "batch": case["num_batch"]}
    s = resolve(f, from_env(case["env"], **given), vision=False, flash_ok=True)
    graph = graph_size(f, s.context, s.batch, s.parallel, s.kv_type)
    projector = 0
    if case["projector"]:
        p = OllamaGGUF(read_header(projector_file))
        projector = sum(p.layer(g) for g in p.groups)
    devices = [Device(case["library"], free) for free in case["free"]]
    chosen = len(full_fit(f, graph, projector, devices, s))
    return estimate(sizes(f, graph, projector, devices), devices, s.overhead, s.num_gpu), graph, chosen


@pytest.mark.parametrize("case", RECORDED["cases"], ids=lambda c: f"{c['model']}-{c['free']}-{c['library']}")
def test_the_estimate_equals_ollamas_own(recorded_files, case):
    e, graph, chosen = ours(*recorded_files, case)
    go = case["ollama"]
    assert (e.layers, e.graph, e.vram, e.total) == (go["layers"], go["graph"], go["vram"], go["total"])
    assert list(e.split or ()) == (go["split"] if go["layers"] else []) and list(e.per_gpu) == (go["per_gpu"] or [])
    assert chosen == go["full_fit_gpus"]  # pickBestFullFitByLibrary: how many GPUs Load takes (0: all)
    if not case["env"]:  # the harness prints GraphSize at f16 without flash attention
        assert (list(graph.kv), graph.partial, graph.full) == (go["kv"], go["partial"], go["full"])


def test_no_rows_beside_a_llama_cpp_plan_of_weights_only(tmp_path):
    model = paramcount.load(str(write(llama_spec("m", L, E, H, HKV, FF, V, arch="mistral"), tmp_path / "m.gguf")))
    o = plan(model, gpu("rtx3060"))  # paramcount's llama.cpp planner has no KV layout for "mistral"
    assert o.compared == () and o.llama_cpp is None and o.num_gpu == L + 1
    assert any(n.startswith("llama.cpp's plan is not shown: it has the weights only") for n in o.plan.notes)


@pytest.mark.parametrize("command", ["fit", "memory"])
def test_the_text_output(tiny, clean, capsys, snapshot, command):
    args = [command, tiny.source, "--runtime", "ollama", "--gpu", "rtx3060", "--free-vram", "540MiB", "--width", "100"]
    main(args)
    snapshot(f"ollama-{command}-tiny-540mib.txt", capsys.readouterr().out)
