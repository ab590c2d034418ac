"""The llama.cpp runtime's plan held to llama.cpp's own figures.

Oracle: tests/fixtures/llamacpp_buffers.json, recorded by tools/record_llamacpp.py from
llama-cpp-python 0.3.36 (built from source) loading the GGUF files of tests/gguf_files.py and
creating contexts at several settings. llama.cpp logs sizes in MiB with two decimals (the
compute buffer with four), so "exact" here is: our bytes print as llama.cpp's figure, and the
cells, n_ctx and llama_model_size (bytes) are equal. The compute buffer is an estimate, held
within 5%. The rules restated from the source (src/llama-context.cpp, llama-kv-cache-iswa.cpp)
are tested on their own below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.arch.cache import LayerKind
from paramcount.cli import main
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.plan import Cells, options

from .gguf_files import gemma3_spec, write

pytest.importorskip("gguf")
FIXTURES = Path(__file__).parent / "fixtures"
BUFFERS = json.loads((FIXTURES / "llamacpp_buffers.json").read_text())


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, paramcount.Model]:
    folder = tmp_path_factory.mktemp("gguf")
    return {
        name: paramcount.load(str(write(spec, folder / f"{name}.gguf"))) for name, spec in BUFFERS["models"].items()
    }


def plan_of(model, case: dict, device: str = "cpu"):
    return inference(
        model,
        context=case["context"],
        batch=case["parallel"],
        runtime="llama.cpp",
        ubatch=case["ubatch"],
        flash_attn=case["flash_attn"],
        swa_full=case["swa_full"],
        kv_unified=case["kv_unified"],
        type_k=case["type_k"],
        type_v=case["type_v"],
        device=device,
        embeddings=case["embeddings"],
    )


def mib(n: int, places: int = 2) -> float:
    return round(n / 2**20, places)


def case_id(c: dict) -> str:
    flags = f"fa{c['flash_attn']}-swa{int(c['swa_full'])}-kvu{int(c['kv_unified'])}-{c['type_k']}"
    return f"{c['model']}-{c['context']}x{c['parallel']}-ub{c['ubatch']}-{flags}"


@pytest.mark.parametrize("case", BUFFERS["cases"], ids=case_id)
def test_buffers_equal_llama_cpps(files, case):
    plan = plan_of(files[case["model"]], case)
    terms = {t.key: t for t in plan.terms}
    assert terms["weights"].bytes == case["llama_model_size"]
    mapped = sum(float(v) for k, v in case["model_buffers_mib"].items() if k != "CPU_REPACK")
    assert mib(terms["weights"].bytes) == mapped
    # llama.cpp logs the full-attention cache first, then the sliding one
    kv = {p.key: p for p in terms["kv_cache"].parts or (terms["kv_cache"],)}
    ordered = [kv[k] for k in ("kv_cache.full", "kv_cache", "kv_cache.sliding") if k in kv]
    assert [mib(p.bytes) for p in ordered] == case["kv_buffers_mib"]
    assert plan.settings["n_ctx"] == case["n_ctx"]
    assert mib(terms["output"].bytes) == case["output_mib"]
    assert terms["compute"].bytes / 2**20 == pytest.approx(case["compute_mib"], rel=0.05)
    assert "overhead" not in terms  # a CPU: llama.cpp's buffers and nothing else
    if "CPU_REPACK" in case["model_buffers_mib"]:
        assert mib(terms["repack"].bytes) == float(case["model_buffers_mib"]["CPU_REPACK"])
    else:
        assert "repack" not in terms


CELLS = json.loads((FIXTURES / "llamacpp_cells.json").read_text())


@pytest.mark.parametrize("case", CELLS["cases"], ids=case_id)
def test_a_cache_no_longer_than_the_micro_batch(tmp_path, case):
    """Issue 20's case: a dense Llama with flash attention off and 512 cells (n_ctx = n_ubatch),
    and 256 and 1,024 beside it, recorded by ``tools/record_llamacpp.py cells`` on files the
    buffer cases never load there: the buffers equal llama.cpp's and the compute buffer is within
    1% (it was reported 11.8% under)."""
    model = paramcount.load(str(write(CELLS["models"][case["model"]], tmp_path / "m.gguf")))
    plan = plan_of(model, case)
    terms = {t.key: t for t in plan.terms}
    assert terms["weights"].bytes == case["llama_model_size"] and plan.settings["n_ctx"] == case["n_ctx"]
    assert [mib(terms["kv_cache"].bytes)] == case["kv_buffers_mib"]
    assert mib(terms["output"].bytes) == case["output_mib"]
    assert terms["compute"].bytes / 2**20 == pytest.approx(case["compute_mib"], rel=0.01)


def test_cells_follow_the_cases_llama_cpp_logged(files):
    """The cells per layer kind, as llama_kv_cache logs them (non-SWA first)."""
    for case in BUFFERS["cases"]:
        o = options(ubatch=case["ubatch"], swa_full=case["swa_full"], kv_unified=case["kv_unified"])
        cells = Cells.of(case["context"], case["parallel"], o)
        kinds = [LayerKind("full", 1, 1, 64, 64)]
        if len(case["kv_cells"]) == 2:
            kinds.append(LayerKind("sliding", 1, 1, 64, 64, window=512))
        assert [cells.layer(k, o) for k in kinds] == case["kv_cells"], case_id(case)


def test_flash_attention_auto_resolves_to_on(files):
    case = next(c for c in BUFFERS["cases"] if c["flash_attn"] == "auto")
    assert case["flash_attn_resolved"] == "on"
    plan = plan_of(files[case["model"]], case)
    assert plan.settings["flash_attn"] == "on (auto)"
    assert any("auto resolves to on" in n for n in plan.notes)


# ---- the rules restated from llama.cpp's source -------------------------------------------


def test_context_padding_streams_and_swa_cells():
    """llama_context: n_ctx = pad(T·P, 256); n_ctx_seq = pad(n_ctx / P, 256) per stream, or
    n_ctx in one stream when unified; llama_kv_cache_iswa: the SWA cache holds
    pad(min(n_ctx_seq, W·(P if unified) + n_ubatch), 256) cells, or n_ctx_seq with swa_full."""
    o = options()
    c = Cells.of(1000, 3, o)
    assert (c.n_ctx, c.n_ctx_seq, c.streams) == (3072, 1024, 3)
    u = Cells.of(1000, 3, options(kv_unified=True))
    assert (u.n_ctx, u.n_ctx_seq, u.streams) == (3072, 3072, 1)
    swa = LayerKind("sliding", 1, 1, 64, 64, window=4096)
    assert Cells.of(32768, 1, o).layer(swa, o) == 4608
    assert Cells.of(32768, 2, options(kv_unified=True)).layer(swa, options(kv_unified=True)) == 8704
    assert Cells.of(32768, 1, options(swa_full=True)).layer(swa, options(swa_full=True)) == 32768
    assert Cells.of(100, 1, o).n_tokens == 100  # the reserved prompt: min(n_ctx, n_ubatch) before padding


def test_kv_matches_the_transformers_runtimes_llama_cpp_cache(files):
    """Two restatements of one rule agree to the byte (f16, any number of sequences)."""
    model = files["gemma3-270m"]
    for context, parallel in ((4096, 1), (1000, 3), (40000, 2)):
        ours = inference(model, context=context, batch=parallel, runtime="llama.cpp").term("kv_cache").bytes
        theirs = inference(model, context=context, batch=parallel, runtime="transformers").term("kv_cache").bytes
        assert ours == theirs


def test_quantised_cache_rows_and_flash_attention_rule(files):
    model = files["llama-1b-q4_0"]
    f16 = inference(model, context=4096, runtime="llama.cpp").term("kv_cache").bytes
    q8 = inference(model, context=4096, runtime="llama.cpp", type_k="q8_0", type_v="q8_0").term("kv_cache").bytes
    assert q8 * 64 == f16 * 34  # 32 values: 64 B in f16, 34 B in q8_0
    with pytest.raises(ParamcountError, match="quantised V cache needs flash attention"):
        inference(model, runtime="llama.cpp", type_v="q4_0", flash_attn="off")


def test_overhead_on_a_gpu_only(files):
    model = files["moe-tiny"]
    gpu = inference(model, context=4096, runtime="llama.cpp")
    cpu = inference(model, context=4096, runtime="llama.cpp", device="cpu")
    assert gpu.term("overhead").bytes == 2**29 and "overhead" not in {t.key for t in cpu.terms}
    moved = cpu.term("compute").bytes - gpu.term("compute").bytes  # inp_embd: a graph input, on the CPU
    # n_embd × ubatch F32, and at the output's moment the GPU holds no token ids or positions
    assert moved == gpu.planner.shape.hidden * 512 * 4 + 2 * 512 * 4 > 0
    # on a GPU the input layer (and the CPU backend's compute buffer) is host memory, not in total
    assert gpu.total + gpu.term("host_weights").bytes + moved - cpu.total == 2**29
    assert [t.key for t in cpu.terms] == ["weights", "kv_cache", "compute", "output"]


def test_runtime_choice_and_its_errors(files, capsys):
    gguf_model = files["moe-tiny"]
    assert inference(gguf_model, context=512).settings["runtime"] == "llama.cpp"
    assert "runtime" not in inference(paramcount.load("gpt2"), context=512).settings  # transformers: today's plan
    assert inference(paramcount.load("gpt2"), context=512, runtime="llama.cpp").settings["runtime"] == "llama.cpp"
    for argv, message in (
        (["memory", "gpt2", "--runtime", "vllm", "--ubatch", "64"], "--ubatch is a llama.cpp setting"),
        (["memory", "gpt2", "--flash-attn", "on"], "--flash-attn is a llama.cpp setting"),
        (["memory", "gpt2", "--runtime", "llama.cpp", "--kv-cache", "static"], "--kv-cache is a transformers setting"),
        (["memory", "gpt2", "--parallel", "2", "--batch", "3"], "both set the number of sequences"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def test_cli_contract(files, capsys, tmp_path):
    path = write(gemma3_spec("g", 6, 640, 4, 1, 256, 2048, 4096), tmp_path / "g.gguf")
    argv = ["memory", str(path), "--runtime", "llama.cpp", "--context", "8192", "--flash-attn", "off"]
    assert main([*argv, "--ubatch", "256", "--swa-full", "--device", "cpu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["key"] for t in doc["terms"]] == ["weights", "kv_cache", "compute", "output"]
    assert doc["settings"]["ubatch"] == 256 and doc["settings"]["swa_full"] is True
    assert all(t["source"].startswith("llama.cpp") for t in doc["terms"])
    assert main([*argv, "-np", "2", "-ctk", "q8_0", "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert "compute buffer" in out and "output buffer" in out and "2 streams" in out
