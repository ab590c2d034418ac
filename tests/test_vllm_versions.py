"""--vllm-version: where each vLLM release line books cuBLAS/NCCL and the CUDA graphs, held to
vLLM's own memory-profiling logs (tests/fixtures/vllm_logs_versions.json, each row citing its thread).

Up to 0.10 the memory made outside PyTorch after the baseline snapshot is in the claim
(V0 Worker.determine_num_available_blocks; V1 Worker.determine_available_memory under
memory_profiling) and the CUDA graphs are captured after the KV cache, beyond the claim. From 0.11
NCCL is made before the snapshot (beside the claim) and the cuBLAS handles after it (in the claim);
0.21 takes its graph estimate out of the claim; 0.33 makes the cuBLAS handles before the snapshot too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.core.gpus import GIB
from paramcount.memory.runtimes import planner

ALL = json.loads((Path(__file__).parent / "fixtures" / "vllm_logs_versions.json").read_text())["logs"]
LOGS = [r for r in ALL if r["source"].endswith("/pull/10511")]  # vLLM 0.6.5-dev, Meta-Llama-3-8B, TP 1 and 2
QWEN = next(r for r in ALL if r["source"].endswith("LMCache/issues/3430"))  # 0.21.0, Qwen3-8B, 24 GB GPU
V1_LIST = next(r for r in ALL if r["source"].endswith("/issues/12529"))
SMALL = 64 * 2**20  # the tolerance for small terms


def plan_for(row):
    f = row["flags"]
    # V0's defaults (max_num_seqs 256; max_num_batched_tokens = max_model_len 8,192, no chunked prefill)
    return planner(
        paramcount.load(row["model"]),
        "bf16",
        "vllm",
        tp=f["tp"],
        utilization=f["gpu_memory_utilization"],
        vllm_version=row["version"],
    )


def gib(x: float) -> int:
    return int(x * GIB)


@pytest.mark.parametrize("row", LOGS, ids=lambda r: f"{r['model']}-tp{r['flags']['tp']}")
def test_weights_as_logged(row):
    p = plan_for(row)
    assert p.stages[0].share.bytes == pytest.approx(gib(row["logged"]["weights_gib"]), rel=0.02)


def test_activation_peak_tp1_as_logged():
    row = LOGS[0]
    assert abs(plan_for(row).peak(8192).bytes - gib(row["logged"]["activation_peak_gib"])) <= SMALL


@pytest.mark.xfail(
    strict=True,
    reason="TP 2: vLLM 0.6.5-dev logs the same 1.26 GiB peak as TP 1; the plan splits the projections' "
    "outputs over TP (0.95 GiB); what keeps vLLM's peak unsplit is not explained here",
)
def test_activation_peak_tp2_as_logged():
    row = LOGS[1]
    assert abs(plan_for(row).peak(8192).bytes - gib(row["logged"]["activation_peak_gib"])) <= SMALL


@pytest.mark.xfail(
    strict=True,
    reason="non_torch_memory logged 1.79 GiB (TP 1) / 3.58 GiB (TP 2) by the 0.6.5 development build; the plan's "
    "cuBLAS + NCCL estimate is 0.25 / 0.375 GiB. Later builds log 0.16-0.20 GiB (vllm#12126, #14447) after "
    "the baseline was moved (vllm#12059): what the dev build's figure held is not explained here",
)
@pytest.mark.parametrize("row", LOGS, ids=lambda r: f"tp{r['flags']['tp']}")
def test_non_torch_as_logged(row):
    p = plan_for(row)
    term = next(t for t in p.plan(8192).terms if t.key == "non_torch")
    assert abs(term.bytes - gib(row["logged"]["non_torch_gib"])) <= SMALL


@pytest.mark.xfail(strict=True, reason="the non-torch miss above (1.54 GiB) carries into the KV cache (+2.9%)")
def test_kv_cache_tp1_as_logged():
    row = LOGS[0]
    p = plan_for(row)
    kv = p.serving(gib(row["logged"]["total_gpu_memory_gib"]), 8192)["kv_cache_bytes"]
    assert kv == pytest.approx(gib(row["logged"]["kv_cache_gib"]), rel=0.02)


def test_claim_as_logged():
    """request_memory / V0's total × utilization: 79.22 GiB × 0.90 = 71.29 GiB, as logged."""
    row = LOGS[0]
    p = plan_for(row)
    s = p.serving(gib(row["logged"]["total_gpu_memory_gib"]), 8192)
    fixed = s["kv_cache_bytes"] + p.stages[0].share.bytes + p.peak(8192).bytes + s["non_torch_bytes"]
    assert fixed / GIB == pytest.approx(row["logged"]["instance_can_use_gib"], abs=0.01)


def _keys(terms):
    return [t.key for t in terms]


def test_up_to_0_10_non_torch_in_claim_and_graphs_beyond():
    m = paramcount.load("meta-llama/Meta-Llama-3-8B")
    for version in ("0.6", "0.8", "0.10"):
        p = planner(m, "bf16", "vllm", vllm_version=version).plan(8192)
        outside = next(t for t in p.terms if t.key == "outside")
        assert "non_torch" in _keys(p.terms) and "cuda_graphs" not in _keys(p.terms)
        assert "cuda_graphs" in _keys(outside.parts) and "non_torch" not in _keys(outside.parts)
    latest = planner(m, "bf16", "vllm").plan(8192)
    outside = next(t for t in latest.terms if t.key == "outside")
    assert "cuda_graphs" in _keys(latest.terms) and "non_torch" in _keys(outside.parts)
    assert "vllm_version" not in latest.settings and p.settings["vllm_version"] == "0.10"


def test_no_start_check_before_0_10():
    """A 0.9764 run on a 24 GiB GPU (LMCache#3430's share): 0.6 and 0.8 never compare the free
    memory with the claim, so what sits beyond the 0.57 GiB margin does not stop them; 0.10 and 0.20
    refuse (their graphs and the CUDA context must fit beside the claim), 0.21 to 0.32 start (only the
    CUDA context is beside it), and 0.33 refuses again (its cuBLAS handles are made before the snapshot)."""
    m = paramcount.load("meta-llama/Meta-Llama-3-8B")
    starts = {
        v: planner(m, "bf16", "vllm", vllm_version=v, utilization="0.9764").serving(24 * GIB, 8192)["starts"]
        for v in ("0.6", "0.8", "0.10", "0.20", "0.32", "latest")
    }
    assert starts == {"0.6": True, "0.8": True, "0.10": False, "0.20": False, "0.32": True, "latest": False}


def test_unknown_version_refused():
    with pytest.raises(ParamcountError, match=r"vLLM version '0\.7' is not planned; give one of 0\.6, 0\.8"):
        planner(paramcount.load("meta-llama/Meta-Llama-3-8B"), "bf16", "vllm", vllm_version="0.7")


def test_cli_unknown_version_one_line(capsys):
    rc = main(["memory", "meta-llama/Meta-Llama-3-8B", "--runtime", "vllm", "--vllm-version", "9"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--vllm-version" in err and "is not planned" in err and "\n" not in err


def test_capture_sizes_by_version():
    """V0 captures decode graphs at 1, 2, 4, 8 … 256 up to max_num_seqs; 0.8's V1 piecewise graphs
    at 1, 2, 4, 8 … 512 (67 sizes, as vllm#12529's config logs them); the latest 51 piecewise and
    35 full graphs with 256 sequences (as LMCache#3430 logs them)."""
    from paramcount.memory.runtimes.vllm.plan import capture_sizes, options

    v0 = capture_sizes(options(vllm_version="0.6", max_num_seqs=256, max_batched_tokens=8192), 8192)
    assert v0 == [1, 2, 4, *range(8, 257, 8)]
    v1 = capture_sizes(options(vllm_version="0.8", max_num_seqs=256, max_batched_tokens=8192), 8192)
    assert len(v1) == 67 and v1[-1] == V1_LIST["logged"]["max_capture_size"]
    latest = options(max_num_seqs=256, max_batched_tokens=2048)
    sizes = capture_sizes(latest, 16384)
    logged = QWEN["logged"]["cuda_graph_sizes"]
    assert (len(sizes), sizes[-1]) == (logged["piecewise"], logged["piecewise_largest"])
    full = [s for s in sizes if s <= latest.seqs]
    assert (len(full), full[-1]) == (logged["full"], logged["full_largest"])


def qwen_plan():
    f = QWEN["flags"]
    return planner(
        paramcount.load(QWEN["model"]),
        "bf16",
        "vllm",
        utilization=f["gpu_memory_utilization"],
        gpu="rtx4090",
        vllm_version=QWEN["version"],
    )


def test_qwen_kv_tokens_from_logged_bytes():
    """The logged 6.37 GiB of KV cache is 46,368 tokens (2,898 blocks of 16) at Qwen3-8B's page."""
    p = qwen_plan()
    page = p.stages[0].pages
    lo, hi = (page.blocks(gib(QWEN["logged"]["kv_cache_gib"] + d)) for d in (-0.005, 0.005))
    assert lo * 16 <= QWEN["logged"]["kv_tokens"] <= hi * 16
    assert round(QWEN["logged"]["kv_tokens"] // 16 / 1024, 2) == QWEN["logged"]["max_concurrency"]


@pytest.mark.xfail(
    strict=True,
    reason="CUDA graphs: the plan keeps one layer's tensors per captured size, 1.46 GiB for Qwen3-8B's 51 "
    "piecewise and 35 full graphs; vLLM 0.21+ estimates 0.52 GiB (LMCache#3430). No per-graph term fitted on half "
    "of the six graph logs held the other half (docs/vllm.md); the plan's JSON carries the measured error",
)
def test_qwen_cuda_graphs_as_logged():
    p = qwen_plan()
    logged = gib(QWEN["logged"]["cuda_graphs_estimated_gib"])
    assert abs(p.graphs(16384).bytes - logged) <= max(SMALL, logged * 0.02)


def test_qwen_starts_as_logged():
    """The run started at 0.9764 on a 24 GB GPU: 2.36% of it (0.56 GiB) held what vLLM 0.21.0 makes
    before its snapshot, the CUDA context; its cuBLAS handles come at the profile's first matmul, in
    the claim. Booked beside the claim as 0.33 makes them (0.5 + 0.25 GiB), the run would not start."""
    assert qwen_plan().serving(gib(23.55), 16384)["starts"] is QWEN["logged"]["started"] is True
    f = QWEN["flags"]
    as_033 = planner(paramcount.load(QWEN["model"]), "bf16", "vllm", utilization=f["gpu_memory_utilization"])
    assert as_033.serving(gib(23.55), 16384)["starts"] is False


def test_qwen_claim_before_kv_and_graphs_as_logged():
    """What 0.21.0 takes from its claim besides the KV cache and the graph estimate (weights, the
    profile's peak, the non-torch memory made after the snapshot): the claim less the logged 6.37 GiB
    KV cache and 0.52 GiB graph estimate, 0.85 GiB over the weights on a 23.55 GiB GPU. The plan's
    weights + peak + cuBLAS is within 64 MiB of it (with cuBLAS beside the claim it was 0.21 GiB short)."""
    p = qwen_plan()
    claim = -(-gib(23.55) * 9764 // 10000)
    logged = claim - gib(QWEN["logged"]["kv_cache_gib"]) - gib(QWEN["logged"]["cuda_graphs_estimated_gib"])
    claimed = [t for t in p.plan(16384).terms if t.key in ("weights", "activations", "non_torch")]
    assert [t.key for t in claimed] == ["weights", "activations", "non_torch"]
    assert abs(sum(t.bytes for t in claimed) - logged) <= SMALL


def test_non_torch_sides_by_version():
    """cuBLAS and NCCL (TP 2) by release line: both in the claim up to 0.10 (one term), cuBLAS in and
    NCCL beside from 0.11 to 0.32 (two terms), both beside from 0.33."""
    m = paramcount.load("meta-llama/Meta-Llama-3-8B")
    sides = {}
    for v in ("0.6", "0.8", "0.10", "0.20", "0.32", "latest"):
        terms = planner(m, "bf16", "vllm", tp=2, vllm_version=v).plan(8192).terms
        outside = next(t for t in terms if t.key == "outside")
        sides[v] = (
            {t.key: t.bytes for t in terms if t.key in ("non_torch", "nccl")},
            {t.key: t.bytes for t in outside.parts if t.key in ("non_torch", "nccl")},
        )
    both, cublas, nccl = {"non_torch": 3 * GIB // 8}, {"non_torch": GIB // 4}, {"nccl": GIB // 8}
    assert sides == {
        **{v: (both, {}) for v in ("0.6", "0.8", "0.10")},
        **{v: (cublas, nccl) for v in ("0.20", "0.32")},
        "latest": ({}, both),
    }


def test_v0_batch_defaults():
    """V0 (0.6): 256 sequences; the profile over max(max_model_len, 2,048) tokens up to 32K, where
    chunked prefill takes over with 2,048; V1 lines keep vllm serve's GPU defaults."""
    from paramcount.memory.runtimes.vllm.plan import options

    o = options(vllm_version="0.6")
    assert o.seqs == 256 and [o.tokens(c) for c in (1024, 8192, 32768, 32769)] == [2048, 8192, 32768, 2048]
    assert options(vllm_version="0.8").tokens(32768) == 8192


def test_0_20_captures_full_graphs_beyond_the_claim():
    """0.11 to 0.20: FULL_AND_PIECEWISE graphs, as the latest captures them, but after the KV cache."""
    m = paramcount.load("meta-llama/Meta-Llama-3-8B")
    old = planner(m, "bf16", "vllm", vllm_version="0.20")
    new = planner(m, "bf16", "vllm")
    assert old.graphs(8192).bytes == new.graphs(8192).bytes > 0
    outside = next(t for t in old.plan(8192).terms if t.key == "outside")
    assert "cuda_graphs" in _keys(outside.parts)


def test_cli_version_under_another_runtime_one_line(capsys):
    rc = main(["memory", "gpt2", "--runtime", "llama.cpp", "--vllm-version", "0.6"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.endswith("--vllm-version is a vllm setting; this plan's runtime is llama.cpp")


@pytest.mark.xfail(
    strict=True,
    reason="Qwen3-235B-A22B-FP8 on 4 H100s (vllm#21348): 8.11 GiB of KV cache logged, 12.97 GiB planned "
    "(+60%; 13.08 before the fused-MoE buffers). Those buffers, as 0.10's fused_experts_impl allocates them, "
    "are 0.55 GiB of the profiled layer (8,192 tokens × 8 experts × (4,096 + 384) × 2 B), not the 4.9 GiB "
    "missing; the LMCache connector the run used and what else it held are not modelled",
)
def test_qwen3_235b_fp8_kv_as_logged():
    row = next(r for r in ALL if r["source"].endswith("/issues/21348"))
    f = row["flags"]
    p = planner(
        paramcount.load("Qwen/Qwen3-235B-A22B"),
        "fp8",
        "vllm",
        tp=f["tp"],
        utilization=f["gpu_memory_utilization"],
        vllm_version=row["version"],
    )
    kv = p.serving(gib(79.22), f["max_model_len"])["kv_cache_bytes"]
    assert kv == pytest.approx(gib(row["logged"]["kv_cache_gib"]), rel=0.02)


# ---- CUDA-graph memory against every public log that states it (issue 35) ---------------------------------

GRAPH_ROWS = [r for r in ALL if "cuda_graphs_taken_gib" in r["logged"] or "cuda_graphs_estimated_gib" in r["logged"]]
MELLEA = next(r for r in ALL if r["source"].endswith("mellea/pull/416"))  # V0, Qwen3-0.6B, 80 GB


def row_plan(row):
    """The row's plan at vllm serve's defaults for its release line and GPU (the 0.21+ row on its 24 GB GPU)."""
    if row is QWEN:
        return qwen_plan(), QWEN["flags"]["max_model_len"]
    f = row["flags"]
    p = planner(
        paramcount.load(row["model"]),
        row.get("scheme", "bf16"),
        "vllm",
        tp=f["tp"],
        utilization=f.get("gpu_memory_utilization", "0.90"),
        vllm_version=row["version"],
        **({"gpu": row["plan_gpu"]} if "plan_gpu" in row else {}),
    )
    return p, f.get("max_model_len", 8192)


def graph_miss(row) -> float:
    p, context = row_plan(row)
    logged = row["logged"].get("cuda_graphs_taken_gib", row["logged"].get("cuda_graphs_estimated_gib"))
    return p.graphs(context).bytes / gib(logged) - 1


@pytest.mark.parametrize(
    "row", [r for r in GRAPH_ROWS if "cuda_graph_sizes" in r["logged"]], ids=lambda r: f"{r['model']}-{r['version']}"
)
def test_graph_count_as_logged(row):
    """The graphs each log names are the graphs the plan captures: V0's decode graphs, or the
    piecewise sizes and the full ones up to max_num_seqs (count and largest)."""
    from paramcount.memory.runtimes.vllm.plan import capture_sizes

    p, context = row_plan(row)
    sizes = capture_sizes(p.o, context)
    kinds = {"decode": sizes} if row["version"] == "0.6" else {"piecewise": sizes}
    if row["version"] != "0.6" and p.o.accounting.graphs == "full_and_piecewise":
        kinds["full"] = [s for s in sizes if s <= p.o.seqs]
    logged = row["logged"]["cuda_graph_sizes"]
    for kind, planned in kinds.items():
        if kind in logged:
            assert (len(planned), planned[-1]) == (logged[kind], logged[f"{kind}_largest"]), kind


def _band(misses):
    """Per release line: the least and greatest miss (to the hundredth, outward) and how many."""
    import math

    lines: dict[str, list[float]] = {}
    for version, miss in misses:
        lines.setdefault(version, []).append(miss)
    return {v: (math.floor(min(m) * 100) / 100, math.ceil(max(m) * 100) / 100, len(m)) for v, m in lines.items()}


def test_graph_error_is_the_measured_one():
    """The error the plan's JSON carries for each release line is the least and greatest miss over
    the logs of that line, to the hundredth outward: a change to the rule that moves a miss fails here."""
    from paramcount.memory.runtimes.vllm.plan import GRAPH_ERROR

    assert _band((r["version"], graph_miss(r)) for r in GRAPH_ROWS) == GRAPH_ERROR


NON_TORCH_ROWS = [r for r in ALL if "non_torch_gib" in r["logged"]]


def test_non_torch_error_is_the_measured_one():
    """V0's non_torch_memory: the 0.6.5 development build's 1.79 / 3.58 GiB and the later builds'
    0.16 (TP 1) / 0.25 GiB (TP 2), against the plan's 0.25 GiB + 0.125 GiB a peer."""
    from paramcount.memory.runtimes.vllm.plan import NON_TORCH_ERROR, non_torch

    misses = []
    for row in NON_TORCH_ROWS:
        p, _ = row_plan(row)
        misses.append((row["version"], non_torch(p.o).bytes / gib(row["logged"]["non_torch_gib"]) - 1))
    assert len(NON_TORCH_ROWS) == 5 and _band(misses) == NON_TORCH_ERROR


def test_graph_error_in_the_json():
    m = paramcount.load("meta-llama/Meta-Llama-3-8B")
    for version, logs in (("0.6", 2), ("0.10", 0), ("0.20", 2), ("0.32", 1), ("latest", 0)):
        plan = planner(m, "bf16", "vllm", vllm_version=version).plan(8192).to_dict()
        term = next(t for t in _walk(plan["terms"]) if t["key"] == "cuda_graphs")
        assert term["estimate"] is True and term["error"]["logs"] == logs
        assert ("low" in term["error"]) == (logs > 0)
        non_torch = next(t for t in _walk(plan["terms"]) if t["key"] == "non_torch")
        assert non_torch["error"]["logs"] == (5 if version == "0.6" else 0)


def _walk(terms):
    for t in terms:
        yield t
        yield from _walk(t["parts"])


def test_v0_later_build_weights_and_kv_as_logged():
    """A later V0 build (mellea#416, Qwen3-0.6B on an 80 GB GPU at 0.80): weights and the KV cache
    within 2% (the peak and non-torch misses below offset)."""
    p, context = row_plan(MELLEA)
    s = p.serving(gib(MELLEA["logged"]["total_gpu_memory_gib"]), context)
    assert p.stages[0].share.bytes == pytest.approx(gib(MELLEA["logged"]["weights_gib"]), rel=0.02)
    assert s["kv_cache_bytes"] == pytest.approx(gib(MELLEA["logged"]["kv_cache_gib"]), rel=0.02)
    assert s["kv_blocks"] == pytest.approx(MELLEA["logged"]["gpu_blocks"], rel=0.02)


@pytest.mark.xfail(
    strict=True,
    reason="V0 non_torch_memory: 0.16 GiB logged by later V0 builds on an H100 at TP 1 (mellea#416, "
    "gateway-api-inference-extension#550, vllm#12126), 0.25 GiB planned: 92 MiB over the 64 MiB tolerance; the "
    "figure is CUDA's lazily loaded modules and NCCL's buffers, not derived here (its error is in the JSON)",
)
def test_v0_later_build_non_torch_as_logged():
    p, context = row_plan(MELLEA)
    term = next(t for t in p.plan(context).terms if t.key == "non_torch")
    assert abs(term.bytes - gib(MELLEA["logged"]["non_torch_gib"])) <= SMALL


@pytest.mark.xfail(
    strict=True,
    reason="V0 profile peak for Qwen3-0.6B: 0.23 GiB logged (mellea#416), 0.64 GiB planned over 8,192 tokens",
)
def test_v0_later_build_peak_as_logged():
    p, context = row_plan(MELLEA)
    assert abs(p.peak(context).bytes - gib(MELLEA["logged"]["activation_peak_gib"])) <= SMALL
