"""Speed: what a token reads and computes, the bounds, the estimates and their calibration."""

from __future__ import annotations

from fractions import Fraction

import pytest

import paramcount
from paramcount.hardware import catalog
from paramcount.memory import speed
from paramcount.memory.core.gpus import gpu
from paramcount.memory.runtimes import planner
from paramcount.memory.speed.factors import fitted
from paramcount.memory.speed.lookups import lookups

BF16 = 2


def test_decode_bound_reads_the_embedding_rows_looked_up_not_the_table():
    p = planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bf16", "vllm")
    table, row = 128256 * 4096 * BF16, 4096 * BF16
    assert lookups(p.weights.rows).table == table and lookups(p.weights.rows).row == row
    assert speed.weights_read(p, 1) == p.stages[0].share.bytes - table + row
    assert speed.weights_read(p, 3) == p.stages[0].share.bytes - table + 3 * row
    d = speed.decode(p, gpu("h100"), 1, 1)
    assert 221 <= d.tokens_per_s <= 224  # 15.01 GB a step at 3.35 TB/s; 207 when it read the whole table


def test_a_tied_table_is_read_whole_by_the_head():
    p = planner(paramcount.load("meta-llama/Llama-3.2-1B"), "bf16", "vllm")
    assert lookups(p.weights.rows).table == 0
    assert speed.weights_read(p, 1) == p.stages[0].share.bytes


def test_positions_are_looked_up_too():
    found = lookups(planner(paramcount.load("gpt2"), "bf16", "vllm").weights.rows)  # wte tied, wpe not
    assert (found.table, found.row) == (1024 * 768 * BF16, 768 * BF16)
    assert found.read(5000) == found.table  # no more than the table


@pytest.mark.parametrize("context", [1, 4096])
def test_the_bound_is_memory_bound_for_one_sequence(context):
    p = planner(paramcount.load("meta-llama/Llama-3.1-8B"), "bf16", "vllm")
    assert speed.decode(p, gpu("h100"), context, 1).limit == "memory"


# ---- calibration ------------------------------------------------------------------------------


def _fit_module():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "speed_calibration" / "fit.py"
    spec = importlib.util.spec_from_file_location("speed_fit", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_committed_factors_are_what_the_script_fits_from_the_committed_data():
    from importlib import resources

    fit = _fit_module()
    rows, left = fit.read()
    assert len(rows) >= 90 and left > 0  # rows of cards not in the catalog stay in the data, unfitted
    committed = resources.files("paramcount.memory.speed").joinpath("factors.json").read_text(encoding="utf-8")
    assert committed == fit.text(fit.factors(rows)), (
        "factors.json is not what the data fits (a changed hardware figure?): run tools/speed_calibration/fit.py"
    )


def test_every_calibration_row_cites_its_source():
    import csv
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "tools" / "speed_calibration"
    for path in folder.glob("*.csv"):
        for row in csv.DictReader(path.open(encoding="utf-8")):
            if path.name == "vllm.csv":  # AIConfigurator's measured runs: the file at a commit, the row's id
                assert row["source"].startswith("https://github.com/ai-dynamo/aiconfigurator/blob/"), row
                assert row["commit"] in row["source"] and row["row_id"], row
                assert float(row["ttft_ms"]) > 0 and float(row["tpot_ms"]) > 0
                continue
            if path.name == "transformers.csv":  # model.generate runs: a report at a commit (test_speed_transformers)
                assert row["source"].startswith(("https://github.com/huggingface/optimum-benchmark/blob/",
                                                 "https://github.com/huggingface/optimum/blob/",
                                                 "https://github.com/h2oai/h2ogpt/blob/")), row  # fmt: skip
                assert row["via"] and float(row["decode_tokens_per_s"] or row["generate_s"]) > 0, row
                continue
            if path.name == "llamacpp_cpu.csv":  # CPU runs: mainline llama.cpp in a fork's PR, or an article;
                # a CPU's bandwidth is its populated channels': every row says what memory it assumes
                assert row["source"].startswith(("https://github.com/ikawrakow/ik_llama.cpp/pull/",
                                                 "https://ahelpme.com/")), row  # fmt: skip
                assert row["backend"] == "CPU" and "memory" in row["note"] and "llama.cpp" in row["via"], row
            elif path.name == "mlx.csv":  # mlx-lm's own output, in its repositories' threads or a results page
                mlx_pages = ("https://github.com/ml-explore/", "https://github.com/itsmostafa/inference-speed-tests/")
                assert row["source"].startswith(mlx_pages), row
                assert row["runtime"] == "mlx" and row["backend"] == "Metal" and row["dtype"], row
                if row["test"].startswith("tg"):  # generation follows the prompt: the mean depth is stated
                    assert int(row["depth"]) >= int(row["test"][2:]) // 2 and "depth" in row["note"], row
            else:
                assert row["source"].startswith(("https://github.com/ggml-org/llama.cpp/discussions/",
                                                 "https://github.com/ggml-org/llama.cpp/pull/")), row  # fmt: skip
            assert row["via"], row  # what was transcribed: a scoreboard's copy, or whose comment in a PR
            assert float(row["tokens_per_s"]) > 0


# ---- what a token reads and computes ------------------------------------------------------------

Q4_0 = (32, 18)  # values and bytes per block
Q6_K = (256, 210)


def _q(n: int, fmt: tuple[int, int]) -> int:
    return n // fmt[0] * fmt[1]


def _llama_work(name: str, dtype: str, **given):
    from paramcount.memory.speed.work import llamacpp

    return llamacpp(planner(paramcount.load(name), dtype, "llama.cpp", **given))


def test_a_dense_token_reads_every_weight_but_the_embedding_table():
    w = _llama_work("meta-llama/Llama-2-7b-hf", "q4_0")
    h, f, layers, vocab = 4096, 11008, 32, 32000
    per_layer = _q(4 * h * h, Q4_0) + _q(3 * h * f, Q4_0) + 2 * h * 4  # q k v o, gate up down, two f32 norms
    head = _q(vocab * h, Q6_K) + h * 4  # llama.cpp keeps the output in Q6_K; the final norm in f32
    assert dict(w.weights) == {0: layers * per_layer + head}
    assert w.lookup == _q(h, Q4_0)  # one row of token_embd, not its 73,728,000 B
    assert w.matmul_params == layers * (4 * h * h + 3 * h * f) + vocab * h


def test_a_mixture_of_experts_token_reads_k_of_e_experts_and_the_shared_parts():
    p = planner(paramcount.load("Qwen/Qwen3-30B-A3B"), "q4_0", "llama.cpp")
    from paramcount.memory.speed.work import llamacpp

    w = llamacpp(p)
    h, layers, experts, k, inter = 2048, 48, 128, 8, 768
    routed = sum(r.bytes for r in p.loaded.rows if r.kind == "experts")
    assert routed == layers * _q(experts * 3 * inter * h, Q4_0)  # gate, up and down of 128 experts a layer
    shared = sum(r.bytes for r in p.loaded.rows if r.kind not in ("experts", "embeddings"))
    assert w.active == Fraction(k, experts)
    assert w.weights[0] == shared + routed * k // experts
    table = next(r for r in p.loaded.rows if r.kind == "embeddings")
    assert w.lookup == table.bytes // table.shape[0]  # one row of the token embedding


def test_kv_is_read_at_the_context_depth():
    w = _llama_work("meta-llama/Llama-2-7b-hf", "q4_0")
    cell = 32 * 2 * 4096 * 2  # layers × (K + V) × width × f16
    assert w.kv(1000) == {0: 1000 * cell}
    q8 = _llama_work("meta-llama/Llama-2-7b-hf", "q4_0", type_k="q8_0", type_v="q8_0")
    assert q8.kv(1000) == {0: 1000 * 32 * 2 * _q(4096, (32, 34))}


def test_a_sliding_window_layer_reads_at_most_its_window():
    w = _llama_work("google/gemma-2-2b", "q8_0")
    assert w.kv(100_000)[0] < w.kv(4096)[0] * 100_000 / 4096  # the local layers stop at 4,096


def test_offloaded_layers_are_read_from_host_memory():
    w = _llama_work("meta-llama/Llama-2-7b-hf", "q4_0", gpu_layers=20)
    assert dict(w.layers) == {None: 13, 0: 19}  # -ngl 20: the output layer and the last 19
    assert w.weights[None] + w.weights[0] == _llama_work("meta-llama/Llama-2-7b-hf", "q4_0").weights[0]


# ---- the estimates ------------------------------------------------------------------------------


def _speed(name: str = "meta-llama/Llama-2-7b-hf", gpus=("RTX 4090",), runtime="llama.cpp", dtype="q4_0", **kw):
    from paramcount.memory.speed.estimate import speed as run

    return run(paramcount.load(name), list(gpus), runtime, dtype, **kw)


def test_llama_bench_on_a_4090_is_predicted_within_its_expected_error():
    s = _speed(context=64, prompt=512)  # tg128 from an empty context, pp512: #15013's run of this card
    assert s.decode.tokens_per_s == pytest.approx(186.21, rel=0.1)
    assert s.prefill.tokens_per_s == pytest.approx(11992.70, rel=0.15)
    assert s.decode.error["median"] < 0.1 and s.decode.error["rows"] >= 10
    assert s.decode.bound_tokens_per_s > s.decode.tokens_per_s  # an estimate under its bound


def test_decode_slows_as_the_context_fills():
    rates = [_speed(context=c).decode.tokens_per_s for c in (1, 4096, 32768, 131072)]
    assert rates == sorted(rates, reverse=True) and rates[-1] < rates[0] / 2


def test_offloading_more_layers_to_the_host_slows_decode():
    rates = [_speed(gpu_layers=n, cpu="EPYC 9124").decode for n in (33, 24, 16, 8)]
    assert [f.tokens_per_s for f in rates] == sorted((f.tokens_per_s for f in rates), reverse=True)
    assert rates[-1].bound_by.startswith("host memory")  # the host's share binds
    assert rates[-1].error is None and "split across cpu and nvidia-geforce" in rates[-1].why  # no such run measured


def test_the_bound_that_binds():
    assert _speed().decode.bound_by.startswith("memory bandwidth")
    assert _speed(concurrency=4096, context=64).decode.bound_by.startswith("compute")
    assert _speed().prefill.bound_by.startswith("compute")
    assert _speed(prompt=32).prefill.bound_by.startswith("memory bandwidth")  # the weights read for 32 tokens
    tiny = _speed("Qwen/Qwen2.5-0.5B", dtype="q4_0", gpus=("RTX 5090",), context=1)
    assert tiny.decode.bound_by.startswith("per-layer launch/sync overhead")


@pytest.mark.parametrize(
    ("runtime", "gpus", "dtype", "calibrated"),
    [("llama.cpp", ("RTX 3090",), "q4_k_m", True), ("ollama", ("RTX 3090",), "q4_k_m", True),
     ("vllm", ("H100 SXM",), "bf16", True), ("vllm", ("RTX 4090",), "bf16", False),
     ("mlx", ("Apple M4 Max 128GB",), "bf16", True),
     ("transformers", ("A100 SXM 80GB",), "bf16", True), ("transformers", ("RTX 4090",), "bf16", None),
     ("llama.cpp", ("EPYC 9124",), "q4_0", True)],
)  # fmt: skip
def test_every_runtime_answers_for_a_catalog_model(runtime, gpus, dtype, calibrated):
    s = _speed("Qwen/Qwen2.5-7B", gpus, runtime, dtype).to_dict()
    assert s["decode"]["upper_bound"]["label"] == "upper bound" and s["decode"]["upper_bound"]["tokens_per_s"] > 0
    if calibrated is None:  # bounds only: the estimate is absent, and the figure says why
        assert s["decode_tokens_per_s"] is None and s["decode"]["note"]
        return
    assert s["decode"]["estimate"]["label"] == "estimate" and s["decode_tokens_per_s"] > 0
    assert (s["decode"]["estimate"]["expected_error"] is not None) == calibrated
    if gpus == ("EPYC 9124",):  # a CPU alone: the cpu family's factors, and the bound at its derived peaks
        assert s["prefill"]["estimate"]["expected_error"]["family"] == "cpu"
        assert s["prefill"]["upper_bound"]["tokens_per_s"] > s["prefill_tokens_per_s"]
    assert s["prefill_tokens_per_s"] > 0 and s["ttft_s"] > 0


CPUS = [h.key for h in catalog() if h.kind == "cpu"]


@pytest.mark.parametrize("cpu", CPUS)
def test_every_cpu_of_the_catalog_answers_decode_prefill_and_ttft(cpu):
    s = _speed("meta-llama/Llama-3.1-8B", (cpu,), dtype="q4_k_m").to_dict()
    assert s["decode_tokens_per_s"] > 0 and s["prefill_tokens_per_s"] > 0 and s["ttft_s"] > 0, cpu
    assert s["prefill"]["upper_bound"]["tokens_per_s"] >= s["prefill_tokens_per_s"]


def test_a_cpu_prompt_runs_at_the_rate_of_the_units_its_weight_type_uses():
    """ggml-cpu: a quantised type's dot products in int8 (VNNI, or AMX tiles on Sapphire Rapids for
    the types ggml-cpu/amx has kernels for), F16 in fp32, BF16 on AVX-512 BF16 where present."""
    from paramcount.hardware import lookup
    from paramcount.memory.speed.llamacpp import ceiling, cpu_peak

    zen4, spr, zen3 = lookup("EPYC 9654"), lookup("Xeon Platinum 8480+"), lookup("Ryzen 9 5950X")
    a = pytest.approx
    assert cpu_peak(zen4, "q4_k_m") == zen4.flops["int8"] == a(96 * 128 * 3.7e9)  # vpdpbusd ymm, 2 a cycle
    assert cpu_peak(zen4, "fp16") == a(96 * 32 * 3.7e9) and cpu_peak(zen4, "bf16") == a(96 * 64 * 3.7e9)
    assert cpu_peak(zen3, "bf16") == cpu_peak(zen3, "fp16") == a(16 * 32 * 4.9e9)  # no AVX-512 BF16: fp32
    assert ceiling(spr, "q4_k_m") == a(56 * 2048 * 3.8e9)  # the bound: AMX tdpbusd
    assert cpu_peak(spr, "q4_k_m") == a(56 * 256 * 3.8e9)  # the estimate: the vector units the share was fitted on
    assert ceiling(spr, "q3_k_m") == cpu_peak(spr, "q3_k_m") == a(56 * 256 * 3.8e9)  # no AMX kernel: VNNI
    assert cpu_peak(spr, "bf16") == a(56 * 128 * 3.8e9)  # vdpbf16ps, not AMX: ggml's BF16 matmul is not on tiles
    pre = _speed("meta-llama/Llama-3.1-8B", ("EPYC 9654",), dtype="q4_k_m", prompt=512).prefill
    assert pre.bound_seconds == pytest.approx(pre.parts[0].flops / ceiling(zen4, "q4_k_m"))
    f = fitted("llama.cpp", "cpu")  # the family's share of the kernel's units
    assert pre.seconds == pytest.approx(pre.parts[0].flops / (cpu_peak(zen4, "q4_k_m") * f.get("compute")))
    assert pre.parts[0].flops == pre.terms["flops"]


def test_the_offloads_host_part_runs_at_the_cpus_figures():
    from paramcount.hardware import lookup
    from paramcount.memory.speed.llamacpp import ceiling

    epyc, rate = lookup("EPYC 9124"), ceiling(lookup("EPYC 9124"), "q4_0")
    s = _speed("meta-llama/Llama-2-7b-hf", dtype="q4_0", gpu_layers=16, cpu="EPYC 9124", prompt=16)
    host = next(p for p in s.prefill.parts if p.host)  # under 32 tokens the host's layers stay on the CPU
    assert host.flops > 0 and host.bound_seconds >= host.flops / rate
    step = next(p for p in s.decode.parts if p.host)
    assert step.bound_seconds == pytest.approx(max(step.bytes / epyc.bandwidth_bytes_per_s, step.flops / rate))


def test_vllm_splits_over_tensor_parallel_ranks_and_queues_prompts():
    one = _speed("meta-llama/Llama-3.1-70B", ("H100 SXM",) * 4, "vllm", "bf16")
    two = _speed("meta-llama/Llama-3.1-70B", ("H100 SXM",) * 8, "vllm", "bf16")
    assert two.decode.tokens_per_s > one.decode.tokens_per_s and one.settings["tp"] == 4
    busy = _speed("meta-llama/Llama-3.1-8B", ("H100 SXM",), "vllm", "bf16", concurrency=8)
    alone = _speed("meta-llama/Llama-3.1-8B", ("H100 SXM",), "vllm", "bf16")
    t = fitted("vllm", "nvidia-pro").terms  # fitted on AIConfigurator's runs: t0 + g·P·(1 + q·(N − 1))
    at_peak = alone.prefill.bound_seconds
    assert alone.ttft.seconds == pytest.approx(t["request_s"] + at_peak / t["compute"])
    assert busy.ttft.seconds == pytest.approx(t["request_s"] + at_peak / t["compute"] * (1 + 7 * t["queue"]))
    geforce = _speed("meta-llama/Llama-3.1-8B", ("RTX 4090",), "vllm", "bf16", concurrency=8)  # borrowed factors
    assert geforce.ttft.seconds == pytest.approx(geforce.prefill.seconds * 4.5)  # the mean wait of 8 queued prompts


def test_the_headline_names_every_tensor_parallel_card_and_each_bound_its_side(capsys):
    from paramcount.cli import main

    argv = ["speed", "meta-llama/Llama-3.1-70B", "--gpu", "H100 SXM,H100 SXM", "--runtime", "vllm", "--width", "200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "on 2 × NVIDIA H100 SXM5 80GB (tensor parallel 2)" in out
    ttft = next(line for line in out.splitlines() if line.startswith(" time to first token"))
    assert "≥ " in ttft and "≤ " not in ttft  # a time's bound is the shortest it can take
    assert _speed().ttft.to_dict()["upper_bound"]["label"] == "upper bound on speed: the shortest time"


def test_vllm_lists_every_card_named_and_says_the_slowest_binds(capsys):
    """--gpu A,B under vLLM: both ranks in the JSON's hardware, in the order named, and the binding
    card the slower (A100's 2.0 TB/s against H100's 3.35): its time is every step's, so the figures
    are those of two A100s; the headline names both cards and which sets the step."""
    from paramcount.cli import main

    mixed = _speed("meta-llama/Llama-3.1-8B", ("H100 SXM", "A100 SXM 80GB"), "vllm", "bf16")
    d = mixed.to_dict()
    assert [h["key"] for h in d["hardware"]] == ["h100-sxm", "a100-sxm-80gb"]
    assert d["binding"] == {"key": "a100-sxm-80gb", "name": "NVIDIA A100 SXM4 80GB"}
    slow = _speed("meta-llama/Llama-3.1-8B", ("A100 SXM 80GB",) * 2, "vllm", "bf16")
    assert mixed.decode.seconds == slow.decode.seconds and mixed.prefill.seconds == slow.prefill.seconds
    assert [h["key"] for h in slow.to_dict()["hardware"]] == ["a100-sxm-80gb"] * 2  # each rank, not one card
    assert _speed().to_dict()["binding"] is None  # llama.cpp: every device's part summed, none alone binds
    argv = ["speed", "meta-llama/Llama-3.1-8B", "--gpu", "H100 SXM,A100 SXM 80GB", "--runtime", "vllm"]
    argv += ["--width", "240"]
    assert main(argv) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith(
        "on NVIDIA H100 SXM5 80GB + NVIDIA A100 SXM4 80GB (tensor parallel 2; NVIDIA A100 SXM4 80GB, the slowest, "
        "sets each step)"
    ), head


def test_vllm_decode_step_is_the_fitted_sum_of_its_terms():
    """a·bytes/bandwidth + b·FLOPs/peak + (c + d)·layers on each rank; d (the all-reduces) only over
    several. fp8 weights multiply at the fp8 rate; attention over a bf16 cache at the bf16 rate."""
    t = fitted("vllm", "nvidia-pro").terms
    one = _speed("meta-llama/Llama-3.1-8B", ("H200",), "vllm", "fp8", concurrency=16, context=1536)
    four = _speed("meta-llama/Llama-3.1-70B", ("H200",) * 4, "vllm", "fp8", concurrency=16, context=1536)
    for s, ranks, width in ((one, 1, 32 * 32 * 128), (four, 4, 80 * 64 * 128 // 4)):  # layers × heads × dim
        read, flops = s.decode.terms["bytes_read_per_step"], s.decode.parts[0].flops
        memory = sum(read.values()) / s.hardware[0].bandwidth_bytes_per_s / t["bandwidth"]
        attention = 16 * 4 * 1536 * width  # QKᵀ and AV of 16 streams at 1,536 cells, on one rank
        rates = s.hardware[0].flops
        compute = ((flops - attention) / rates["fp8"] + attention / rates["bf16"]) / t["decode_compute"]
        layers = s.decode.terms["layers"] * (t["layer_s"] + (t["allreduce_s"] if ranks > 1 else 0))
        assert s.decode.seconds == pytest.approx(memory + compute + layers) and s.settings["tp"] == ranks
    # AIConfigurator measured 10.94 ms a token for Llama-3.1-70B fp8 on 4 H200s, 16 streams of 1,024 + 1,024
    # (the step alone: the others' prompts add 16/1,024 of a prefill a token, under 1%), within its expected p90
    p90 = fitted("vllm", "nvidia-pro").error["decode"]["p90"]
    assert 1 / four.decode.tokens_per_s == pytest.approx(10.94e-3, rel=p90)


def test_vllm_an_fp8_kv_cache_halves_what_a_step_reads_of_it():
    bf16 = _speed("meta-llama/Llama-3.1-8B", ("H200",), "vllm", "fp8", concurrency=64, context=4096)
    fp8 = _speed("meta-llama/Llama-3.1-8B", ("H200",), "vllm", "fp8", concurrency=64, context=4096, kv_dtype="fp8")
    a, b = bf16.decode.terms["bytes_read_per_step"], fp8.decode.terms["bytes_read_per_step"]
    assert a["kv_cache"] == 2 * b["kv_cache"] == 64 * 4096 * 32 * 8 * 128 * 2 * 2  # layers, KV heads, dim, K and V
    assert a["weights"] == b["weights"] and fp8.decode.tokens_per_s > bf16.decode.tokens_per_s


def test_vllm_attention_runs_at_the_caches_rate():
    """A prompt's matmuls at the weights' rate, its attention at the cache's: FlashAttention 3 over an
    fp8 cache computes in fp8; over a bf16 cache in bf16, whatever the weights."""
    from paramcount.hardware import lookup
    from paramcount.memory.speed import vllm
    from paramcount.memory.speed.work import flat

    m, h200 = paramcount.load("meta-llama/Llama-3.1-8B"), lookup("H200")
    prompt, width = 8192, 32 * 32 * 128  # layers × query heads × head dim
    attention = 2 * prompt * (prompt + 1) * width
    for kv, rate in ((2, h200.flops["bf16"]), (1, h200.flops["fp8"])):
        w = flat(m, planner(m, "fp8", "vllm").weights.rows, kv)
        matmuls = w.prompt_flops(prompt) - attention
        expected = matmuls / h200.flops["fp8"] + attention / rate
        assert vllm.prompt_seconds(w, h200, "fp8", prompt) == pytest.approx(expected)


def test_aiconfigurator_fp8_runs_are_fitted_with_an_fp8_kv_cache():
    """AIConfigurator's fp8 profile serves an fp8 KV cache; its Qwen3-32B fp8 runs at tensor parallel 1
    and 2 say so themselves: each measured TPOT is under what the H100's datasheet bandwidth takes
    to read the fp8 weights and a bf16 cache at the run's mean depth (a bound, no fitted factor)."""
    from paramcount.hardware import lookup

    fit = _fit_module()
    rows, _ = fit.read_vllm()
    assert {r.kv for r in rows if r.dtype == "fp8"} == {"fp8"} and {r.kv for r in rows if r.dtype != "fp8"} == {"auto"}
    qwen = [r for r in rows if r.model == "Qwen/Qwen3-32B" and r.dtype == "fp8" and r.tp <= 2]
    assert len(qwen) == 2
    for r in qwen:
        assert fit.vllm_plan(r.model, r.dtype, r.tp, r.kv)[0].kv_bytes == 1
        _, bf16 = fit.vllm_plan(r.model, r.dtype, r.tp)
        depth = r.isl + r.osl // 2
        read = sum(bf16.weights.values()) + r.streams * sum(bf16.kv(depth).values())
        assert r.tpot < read / lookup("H100 SXM").bandwidth_bytes_per_s


def test_vulkan_rows_are_fitted_apart_from_the_vendors_backends():
    """llama.cpp's Vulkan rows never enter the CUDA/ROCm fits (factors.json); they are read on their
    own (fit.py's report), each on a card of the catalog."""
    fit = _fit_module()
    native, _ = fit.read()
    vulkan, _ = fit.read(backend="Vulkan")
    key = lambda r: (r.hardware, r.model, r.test, r.measured)  # noqa: E731
    assert len(vulkan) >= 10 and not {key(r) for r in vulkan} & {key(r) for r in native}
    assert {r.hardware for r in vulkan} >= {"rtx3090-24gb", "rtx4070-12gb", "rx9070xt-16gb"}
    assert all(r.source.endswith(("/10879", "/13506")) for r in vulkan)


def test_llama_cpp_splits_layers_over_several_gpus():
    s = _speed("meta-llama/Llama-3.1-8B", ("RTX 3090", "RTX 3060 12GB"), dtype="q8_0")
    assert {p.device for p in s.decode.parts} >= {"rtx3090-24gb", "rtx3060-12gb"}


# ---- the command ------------------------------------------------------------------------------


def test_the_command_prints_the_figures_and_their_json(capsys):
    import json

    from paramcount.cli import main

    argv = ["speed", "meta-llama/Llama-3.1-8B", "--gpu", "RTX 4090", "--runtime", "llama.cpp", "--dtype", "q4_k_m"]
    assert main([*argv, "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert "decode (per stream)" in out and "tok/s" in out and "bound" in out and "≤ " in out and "≥ " in out
    assert main([*argv, "--json", "--context", "8192", "-ngl", "8", "--cpu", "EPYC 9124"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "paramcount.speed/1" and d["settings"]["context"] == 8192
    assert {"decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s"} <= set(d)
    assert set(d["decode"]["terms"]["bytes_read_per_step"]) == {"weights", "kv_cache", "embedding_rows"}
    assert d["decode"]["estimate"]["label"] == "estimate" and d["decode"]["bound_by"].startswith("host memory")
    assert any(f["term"] == "bandwidth" for f in d["decode"]["factors"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gpu", "RTX 9999"], "--gpu: unknown hardware 'RTX 9999'"),
        (["--gpu", "RTX 4090", "--concurrency", "0"], "--concurrency"),
        (["--gpu", "RTX 4090", "--runtime", "mlx"], "MLX runs on Apple silicon"),
        (["--gpu", "EPYC 9654", "--runtime", "vllm"], "--runtime: vLLM's speed is modelled on GPUs only"),
        (["--gpu", "RTX 4090", "--runtime", "tgi"], "--runtime: unknown runtime 'tgi'"),
        (["--gpu", "RTX 4090", "--runtime", "llama.cpp", "-ngl", "10"], "--cpu: layers or tensors stay in host memory"),
        (["--gpu", "RTX 4090", "--cpu", "RTX 3090", "--runtime", "llama.cpp", "-ngl", "10"], "--cpu: "),
        (["--gpu", "Apple M4 Max 128GB,RTX 4090"], "--gpu: several devices are GPUs only"),
        (["--gpu", "EPYC 9654,EPYC 9554", "--runtime", "llama.cpp"], "--gpu: several devices are GPUs only"),
        (["--gpu", "EPYC 9654", "--runtime", "llama.cpp", "--dtype", "q9_z"], "--dtype: unknown scheme 'q9_z'"),
        (
            ["--gpu", "RTX 4090", "--runtime", "vllm", "--dtype", "q4_k_m"],
            "--dtype: q4_k_m is a GGUF type: llama.cpp and Ollama load it",
        ),
        (["--gpu", "RTX 4090", "--runtime", "llama.cpp", "--kv-dtype", "fp8"], "--kv-dtype: not a setting of"),
        (["--gpu", "H100 SXM", "--runtime", "vllm", "--kv-dtype", "fp9"], "--kv-dtype: vLLM's --kv-cache-dtype is one"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    from paramcount.cli import main

    assert main(["speed", "meta-llama/Llama-2-7b-hf", *argv]) == 2
    out, err = capsys.readouterr()
    assert not out and err.count("\n") == 1 and err.startswith("paramcount: error: ") and message in err, err


def test_more_streams_read_more_experts_of_a_mixture():
    from paramcount.memory.speed.llamacpp import _step_reads
    from paramcount.memory.speed.work import llamacpp

    w = llamacpp(planner(paramcount.load("Qwen/Qwen3-30B-A3B"), "q4_0", "llama.cpp"))
    one, many = _step_reads(w, 0, 1)[0], _step_reads(w, 0, 64)[0]
    experts = w.resident[0] - w.weights[0]  # (E − k)/E of the experts' bytes
    assert many == pytest.approx(w.weights[0] + experts * 16 / 15 * ((1 - (15 / 16) ** 64) - 1 / 16), abs=2)
    assert one < many < w.resident[0]


def test_a_cache_kept_in_host_memory_is_read_there():
    on_gpu = _speed("meta-llama/Llama-3.1-8B", dtype="q4_0", context=32768)
    nkvo = _speed("meta-llama/Llama-3.1-8B", dtype="q4_0", context=32768, kv_offload=False, cpu="EPYC 9124")
    host = next(p for p in nkvo.decode.parts if p.host)
    assert host.bytes == 32768 * 32 * 2 * 8 * 128 * 2 + 4096 // 32 * 18  # the cache at depth, and one embedding row
    assert nkvo.decode.tokens_per_s < on_gpu.decode.tokens_per_s


def test_several_gpus_take_one_share_each():
    with pytest.raises(paramcount.ParamcountError, match="2 shares for 1 GPU"):
        _speed(tensor_split=(1.0, 1.0))


def test_held_out_mixture_of_experts_runs_are_decoded_within_ten_percent():
    """gpt-oss 20B and 120B (llama.cpp discussion #15396), never fitted: k of E experts read a step."""
    fit = _fit_module()
    rows, _ = fit.read(fit.HERE / "validation")
    decode = [r for r in rows if r.phase == "decode"]
    assert len(decode) == 2
    from paramcount.memory.speed.factors import fitted

    for r in decode:
        predicted = fit.predict(r, fitted(r.runtime, r.family).terms)
        assert predicted == pytest.approx(r.measured, rel=0.1), r


def test_auto_is_this_machines_hardware(capsys, monkeypatch):
    import json

    from paramcount.cli import main
    from paramcount.hardware import detect, lookup

    found = detect.GPUFound("NVIDIA GeForce RTX 3090", 24 * 2**30, 20 * 2**30, "nvidia-smi", lookup("RTX 3090"))
    cpu = detect.CPUFound("AMD EPYC 9124 16-Core Processor", 16, ("avx2",), lookup("EPYC 9124"))
    monkeypatch.setattr(detect, "detect", lambda: detect.Machine((found,), None, None, cpu))
    argv = ["speed", "meta-llama/Llama-2-7b-hf", "--runtime", "llama.cpp", "--dtype", "q4_0", "--json"]
    assert main([*argv, "--gpu", "auto", "-ngl", "10", "--cpu", "auto"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["hardware"][0]["key"] == "rtx3090-24gb" and d["cpu"]["key"] == "epyc-9124"
    monkeypatch.setattr(detect, "detect", lambda: detect.Machine((), None, None, detect.CPUFound("Mystery", 4, ())))
    assert main([*argv, "--gpu", "auto"]) == 2  # under --json, the error is a JSON object on stdout
    assert (
        "auto: neither this machine's GPUs (none read) nor its CPU (Mystery)"
        in json.loads(capsys.readouterr().out)["error"]
    )


def test_without_flash_attention_the_scores_go_through_memory():
    off = _llama_work("meta-llama/Llama-2-7b-hf", "q4_0", flash_attn="off")
    assert off.scores_per_cell == 32 * 32 * 4 * 4  # heads × layers × f32 × (KQ, softmax in and out, KQV)
    assert _llama_work("meta-llama/Llama-2-7b-hf", "q4_0").scores_per_cell == 0  # -fa auto: on
    on, slow = (_speed(prompt=16384, flash_attn=fa).prefill for fa in ("on", "off"))
    assert slow.tokens_per_s < on.tokens_per_s / 2  # a long prompt's scores: 16,384² cells a layer


def test_decode_at_100k_tokens_is_several_times_slower_on_a_24gb_card():
    """Users report 50 → 6 tok/s at 100k tokens: each step reads the KV cache at its depth and does
    the attention FLOPs over it, so an 8B q4_k_m on a 24 GB card decodes several times slower at 100k."""
    m = paramcount.load("meta-llama/Llama-3.1-8B")
    near = speed.speed(m, ["RTX 4090"], "llama.cpp", "q4_k_m", context=1024)
    deep = speed.speed(m, ["RTX 4090"], "llama.cpp", "q4_k_m", context=100_000)
    cell = 32 * 8 * 128 * 2 * 2  # layers × KV heads × head dim × (K, V) × f16 bytes
    assert deep.decode.terms["bytes_read_per_step"]["kv_cache"] == 100_000 * cell
    assert near.decode.terms["bytes_read_per_step"]["kv_cache"] == 1024 * cell
    width = 32 * 32 * 128  # layers × query heads × head dim: QKᵀ and AV, 2 FLOPs each, per cell
    assert deep.decode.terms["flops_per_token"] - near.decode.terms["flops_per_token"] == 4 * (100_000 - 1024) * width
    weights = deep.decode.terms["bytes_read_per_step"]["weights"]
    assert weights + 100_000 * cell < 24 * 10**9  # weights and cache fit the card: no offload behind the slowdown
    assert near.decode.tokens_per_s > 3 * deep.decode.tokens_per_s
    assert deep.decode.bound_by.startswith("memory bandwidth")  # the cache's reads, 2.8 times the weights


def test_vllm_says_when_the_streams_overflow_its_kv_cache():
    """Past serving()'s max_concurrency vLLM queues streams: the wait is not modelled, and said so."""
    fits = _speed("meta-llama/Llama-3.1-8B", ("H100 SXM",), "vllm", "bf16", concurrency=8)
    over = _speed("meta-llama/Llama-3.1-8B", ("H100 SXM",), "vllm", "bf16", concurrency=4096, context=32768)
    assert not any("queues" in n for n in fits.notes)
    assert any(n.startswith("4096 streams of 32,768 tokens: the KV cache holds ") for n in over.notes)


def test_mlx_decode_reads_the_group_sizes_scales_and_biases():
    """mlx-4bit at --group-size 32 holds twice the scales and biases of 64: a decode step reads
    the MLX plan's weights at that group (each row scaled to its exact total), not group 64's."""
    from paramcount.errors import ParamcountError
    from paramcount.memory.runtimes.mlx.plan import MlxPlanner

    model = paramcount.load("meta-llama/Meta-Llama-3-8B")
    read, held = {}, {}
    for group in (32, 64, 128):
        s = _speed("meta-llama/Meta-Llama-3-8B", ("Apple M2 Max 64GB",), "mlx", "mlx-4bit", group_size=group)
        read[group] = s.decode.terms["bytes_read_per_step"]["weights"]
        held[group] = MlxPlanner(model, "mlx-4bit", group_size=group).weights_bytes
    assert read[32] > read[64] > read[128]
    for group in (32, 128):  # the same share of the plan's bytes is read (the embedding table but its rows)
        assert read[group] / read[64] == pytest.approx(held[group] / held[64], rel=1e-6)
    assert (
        read[64]
        == _speed("meta-llama/Meta-Llama-3-8B", ("Apple M2 Max 64GB",), "mlx", "mlx-4bit").decode.terms[
            "bytes_read_per_step"
        ]["weights"]
    )  # 64: mlx-lm's default
    with pytest.raises(ParamcountError, match="for mlx-Nbit schemes") as e:
        _speed("meta-llama/Meta-Llama-3-8B", ("Apple M2 Max 64GB",), "mlx", "bf16", group_size=32)
    assert e.value.field == "--group-size"


def test_a_model_split_across_families_claims_no_expected_error():
    """GPU layers with experts in host memory: each part has fitted factors (GeForce, CPU), but no
    measured run split a model so; the estimate stands without an expected error, and says why."""
    from paramcount.memory.runtimes.llamacpp.placement import n_cpu_moe

    experts = n_cpu_moe(30)
    card, cpu = ("RTX 3060 12GB",), "Ryzen 9 7950X"
    split = _speed("Qwen/Qwen3-30B-A3B", card, "llama.cpp", "q4_k_m", overrides=experts, cpu=cpu)
    assert split.decode.seconds is not None and split.decode.error is None
    assert "split across cpu and nvidia-geforce" in split.decode.why
    whole = _speed("Qwen/Qwen3-30B-A3B", ("RTX 4090",), "llama.cpp", "q4_k_m")
    assert whole.decode.error is not None and whole.decode.error["family"] == "nvidia-geforce"


def test_mlx_takes_its_own_factors_fitted_on_mlx_lm_runs_with_their_error():
    """MLX's figures come from the ``mlx`` factors (tools/speed_calibration/mlx.csv), not llama.cpp's,
    and carry their leave-one-out error; held to the LM Studio MLX run of Qwen2.5-32B-Instruct 4-bit
    on an M4 Pro 64GB (12.14 tokens/s at about 350 cells, a row of mlx.csv)."""
    s = _speed("Qwen/Qwen2.5-32B-Instruct", ("Apple M4 Pro 64GB",), "mlx", "mlx-4bit", context=350)
    d = s.to_dict()["decode"]
    assert {f["runtime"] for f in d["factors"]} == {"mlx"}
    err = d["estimate"]["expected_error"]
    assert (err["runtime"], err["family"]) == ("mlx", "apple") and err["rows"] >= 10
    assert abs(s.decode.tokens_per_s / 12.14 - 1) <= err["p90"]
    assert s.prefill.error["runtime"] == "mlx" and s.prefill.tokens_per_s > 0


def test_mlx_without_its_own_factors_borrows_llamacpps_and_says_so(monkeypatch):
    """Where no mlx factor is fitted for the family, llama.cpp's are borrowed: the figure carries no
    expected error, its note says borrowed, and its factors name whose they are."""
    from paramcount.memory.speed import estimate, factors

    kept = {k: v for k, v in factors.table().items() if k[0] != "mlx"}
    monkeypatch.setattr(estimate, "fitted", lambda runtime, fam: kept.get((runtime, fam)))
    d = _speed("Qwen/Qwen2.5-7B", ("Apple M4 Max 128GB",), "mlx", "mlx-4bit").to_dict()["decode"]
    assert d["estimate"]["tokens_per_s"] > 0 and d["estimate"]["expected_error"] is None
    assert "borrowed" in d["note"] and {f["runtime"] for f in d["factors"]} == {"llama.cpp, borrowed by mlx"}
