"""Fit paramcount's speed factors on the measurements in this folder and write them as package data.

    python tools/speed_calibration/fit.py            # writes src/paramcount/memory/speed/factors.json
    python tools/speed_calibration/fit.py --report   # and prints the residual tables (benchmarks/README.md)

Each CSV row is one published measurement with its source (``source``: the thread, ``via``: what
was transcribed). A row is fitted when its ``hardware`` names a row of ``paramcount.hardware`` and
its backend is its vendor's own (CUDA on NVIDIA, ROCm on AMD, Metal on Apple); the others stay in
the data, unfitted. ``mlx.csv`` holds mlx-lm's published runs (``mlx_lm.generate``/``benchmark``:
a prompt, then generation after it, so each decode row states its mean ``depth``), fitted as the
``mlx`` runtime on mlx-lm's own work (``estimate.mlx_work``) and its prefill step (2048 tokens).
The features come from paramcount itself: the bytes a step reads and the FLOPs
a prompt does (:mod:`paramcount.memory.speed.work`, the memory plan's rows and placement).

Per runtime and family:

* decode (``tgN``: N tokens from an empty context, so at a mean depth of N/2 cells): the
  measured seconds per token ``t = a · bytes/bandwidth + c · layers``, fitted by least squares on
  relative error (a ≥ 1, c ≥ 0); ``bandwidth`` = 1/a and ``layer_s`` = c;
* prefill (``pp512``): ``compute`` = the geometric mean over rows of (FLOPs / peak) / seconds, or,
  where the catalog gives no FLOP/s (Apple past M2), ``flop_per_byte`` = the geometric mean of
  FLOPs / (bandwidth · seconds) over every row of the family.

The expected error of each figure is the leave-one-out error: each row predicted (by the
package's own ``llamacpp.decode``/``prefill``) from the factors fitted on the other rows.

vLLM (``vllm.csv``: AIConfigurator's measured serving runs, TTFT and TPOT at a concurrency) is
fitted per family on its own terms (:mod:`paramcount.memory.speed.vllm`), by least absolute
relative error, and held out ten-fold (one fit per fold).

transformers (``transformers.csv``: optimum-benchmark's committed ``model.generate`` runs) is fitted
per family on the package's own arithmetic (:mod:`paramcount.memory.speed.hf`): decode's
``bandwidth`` and ``layer_s`` as llama.cpp's, prefill's ``compute`` on the time a forward's layers'
launches leave; the runs of settings the data do not cover stay in the file, unfitted
(``hf_left_out`` says why); held out one row at a time.
tests/test_speed.py refits the committed data and checks factors.json is what this script writes.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "src" / "paramcount" / "memory" / "speed" / "factors.json"
NATIVE = {"nvidia": "CUDA", "amd": "ROCm", "apple": "Metal", "intel": "SYCL", "cpu": "CPU"}  # by vendor / kind
VLLM = HERE / "vllm.csv"  # AIConfigurator's measured vLLM runs (TTFT, TPOT at a concurrency)
TRANSFORMERS = HERE / "transformers.csv"  # optimum-benchmark's model.generate runs (read_transformers)
PHASE = {"tg": "decode", "pp": "prefill"}  # llama-bench's tests: tgN (N tokens generated), ppN (a prompt of N)


@dataclass(frozen=True)
class Row:
    source: str
    runtime: str
    family: str
    hardware: str
    model: str
    dtype: str
    test: str
    measured: float  # tokens/s
    device: str
    flash: bool = True  # llama-bench -fa 1
    depth: int | None = None  # KV cells a decode row's mean step attends over, where not tgN's N/2

    @property
    def phase(self) -> str:
        return PHASE[self.test[:2]]

    @property
    def tokens(self) -> int:
        return int(self.test.removeprefix("pp").removeprefix("tg"))

    @property
    def cells(self) -> int:
        """The mean context depth of a decode row: llama-bench's tgN starts empty (N/2); an
        mlx-lm run generates after its prompt, so its ``depth`` column states prompt + N/2."""
        return self.depth if self.depth is not None else self.tokens // 2


def read(folder: Path = HERE, backend: str | None = None) -> tuple[list[Row], int]:
    """The fitted rows of every CSV in ``folder``, and how many rows were left out; with
    ``backend`` (``Vulkan``), that backend's rows on cards of the catalog instead of the vendor's own."""
    from paramcount.hardware import catalog
    from paramcount.memory.speed.factors import family

    known = {h.key: h for h in catalog()}
    rows, left = [], 0
    for path in sorted(folder.glob("*.csv")):
        if path.name in (VLLM.name, TRANSFORMERS.name):  # their own readers: read_vllm, read_transformers
            continue
        with path.open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                hw = known.get(r["hardware"])
                native = NATIVE[hw.vendor if hw.kind == "gpu" else hw.kind] if hw else None
                native = backend if hw and backend else native
                if native is None or native != r["backend"] or r["test"][:2] not in PHASE:
                    left += 1
                    continue
                depth = int(r["depth"]) if r.get("depth") else None  # mlx.csv: the decode's mean depth
                rows.append(Row(r["source"], r["runtime"], family(hw), hw.key, r["model"], r["dtype"], r["test"],
                                float(r["tokens_per_s"]), r["device"], r["flash_attn"] == "1", depth))  # fmt: skip
    return rows, left


@cache
def work(model: str, dtype: str, flash: bool = True, runtime: str = "llama.cpp"):
    """The package's own work of a row: llama.cpp's planner, or mlx-lm's (``estimate.mlx_work``)."""
    import paramcount
    from paramcount.memory.runtimes import planner
    from paramcount.memory.speed.estimate import mlx_work
    from paramcount.memory.speed.work import llamacpp

    if runtime == "mlx":
        return mlx_work(paramcount.load(model), dtype)
    fa = "on" if flash else "off"
    return llamacpp(planner(paramcount.load(model), dtype, "llama.cpp", flash_attn=fa))


def row_work(r: Row):
    return work(r.model, r.dtype, r.flash, r.runtime)


def chunk(r: Row) -> int:
    """Tokens a prompt's forward pass takes at once: llama-bench's ubatch, mlx-lm's prefill step."""
    from paramcount.memory.speed.estimate import MLX_PREFILL_STEP

    return MLX_PREFILL_STEP if r.runtime == "mlx" else 512


@cache
def hardware(key: str):
    from paramcount.hardware import catalog

    return next(h for h in catalog() if h.key == key)


# ---- the fits ---------------------------------------------------------------------------------


def decode_features(r: Row) -> tuple[float, float]:
    """(bytes read / bandwidth, layers) of one tg row on one GPU: the package's own step reads
    (``llamacpp._step_reads``: weights touched, KV and scores at depth; the host's rows aside)."""
    from paramcount.memory.speed.llamacpp import _step_reads
    from paramcount.memory.speed.work import HOST

    w, hw = row_work(r), hardware(r.hardware)
    read = sum(b for d, b in _step_reads(w, r.cells, 1).items() if d is not HOST)
    return read / hw.bandwidth_bytes_per_s, sum(n for d, n in w.layers.items() if d is not HOST)


def fit_decode(rows: list[Row]) -> dict[str, float]:
    """``t = a·x + c·L`` by least squares on relative error, a ≥ 1, c ≥ 0."""
    data = [(*decode_features(r), 1 / r.measured) for r in rows]
    a, c = _least_squares(data)
    if a < 1:
        a, c = 1.0, _one(data, 1.0)
    if c < 0:
        a, c = max(1.0, sum(x / t for x, _, t in data) / sum((x / t) ** 2 for x, _, t in data)), 0.0
    return {"bandwidth": _round(1 / a), "layer_s": _round(c)}


def _least_squares(data: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Minimise Σ((a·x + c·L)/t − 1)²: the 2×2 normal equations."""
    sxx = sum((x / t) ** 2 for x, _, t in data)
    sll = sum((n / t) ** 2 for _, n, t in data)
    sxl = sum(x * n / t**2 for x, n, t in data)
    sx, sl = sum(x / t for x, _, t in data), sum(n / t for _, n, t in data)
    det = sxx * sll - sxl * sxl
    if abs(det) < 1e-30 * max(sxx * sll, 1e-300):  # one layer count and one size: c is not identified
        return max(1.0, sx / sxx), 0.0
    return (sx * sll - sl * sxl) / det, (sxx * sl - sxl * sx) / det


def _one(data: list[tuple[float, float, float]], a: float) -> float:
    """c for a fixed a."""
    return max(0.0, sum((1 - a * x / t) * n / t for x, n, t in data) / sum((n / t) ** 2 for _, n, t in data))


def fit_prefill(rows: list[Row], bandwidth: float | None) -> dict[str, float]:
    """The family's compute share (geometric mean), or its FLOP/s per byte/s where the hardware is
    Apple's: over the seconds each prompt's matmuls take, what the attention scores moved through
    memory without flash attention leave (at the family's fitted ``bandwidth``)."""
    from paramcount.memory.speed.llamacpp import peak

    data = []
    for r in rows:
        w, hw = row_work(r), hardware(r.hardware)
        moved = sum(w.scores(r.tokens * (r.tokens + 1) // 2).values()) / (hw.bandwidth_bytes_per_s * (bandwidth or 1))
        seconds = r.tokens / r.measured - moved
        if seconds > 0:
            data.append((w.prompt_flops(r.tokens), seconds, hw, w.weight_type))
    if all(peak(hw, t) for _, _, hw, t in data) and data[0][2].kind != "apple":
        return {"compute": _round(_geomean(f / peak(hw, k) / t for f, t, hw, k in data))}
    return {"flop_per_byte": _round(_geomean(f / hw.bandwidth_bytes_per_s / t for f, t, hw, _ in data))}


def _geomean(values: Iterable[float]) -> float:
    v = list(values)
    return math.exp(sum(math.log(x) for x in v) / len(v))


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def fit(rows: list[Row]) -> dict[str, float]:
    """Every term for one runtime and family."""
    out: dict[str, float] = {}
    tg = [r for r in rows if r.phase == "decode"]
    pp = [r for r in rows if r.phase == "prefill"]
    if len(tg) >= 2:
        out.update(fit_decode(tg))
    if pp:
        out.update(fit_prefill(pp, out.get("bandwidth")))
    return out


# ---- predictions and residuals ----------------------------------------------------------------


def predict(r: Row, terms: dict[str, float]) -> float | None:
    """The package's own estimate of row ``r`` with these factors (tokens/s), or None."""
    from paramcount.memory.speed import llamacpp
    from paramcount.memory.speed.factors import Fitted

    f = Fitted(r.runtime, r.family, terms, {}, {}, ())
    setup = llamacpp.Setup((hardware(r.hardware),))
    w = row_work(r)
    if r.phase == "decode":
        fig = llamacpp.decode(w, setup, r.cells, table=lambda *_: f)
    else:
        fig = llamacpp.prefill(w, setup, r.tokens, chunk(r), table=lambda *_: f)
    return fig.tokens_per_s


def leave_one_out(rows: list[Row]) -> list[tuple[Row, float | None]]:
    """Each row's prediction from the factors fitted without it."""
    out = []
    for i, r in enumerate(rows):
        others = [o for j, o in enumerate(rows) if j != i]
        out.append((r, predict(r, fit(others))))
    return out


def summary(errors: list[float]) -> dict[str, float]:
    """Median and 90th percentile of |error| (nearest rank)."""
    a = sorted(abs(e) for e in errors)
    return {"median": round(statistics.median(a), 4), "p90": round(a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)], 4)}


def groups(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    out: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        out.setdefault((r.runtime, r.family), []).append(r)
    return dict(sorted(out.items()))


def factors(rows: list[Row]) -> dict:
    """The document factors.json holds."""
    out = []
    for (runtime, fam), rs in groups(rows).items():
        terms = fit(rs)
        loo = leave_one_out(rs)
        error, count = {}, {}
        for phase in ("decode", "prefill"):
            errs = [p / r.measured - 1 for r, p in loo if r.phase == phase and p]
            count[phase] = sum(r.phase == phase for r in rs)
            if errs:
                error[phase] = summary(errs)
        out.append({"runtime": runtime, "family": fam, "terms": terms, "rows": count, "error": error,
                    "sources": sorted({r.source for r in rs})})  # fmt: skip
    return {
        "schema": "paramcount.speed-factors/1",
        "fitted_by": "tools/speed_calibration/fit.py",
        "data": "tools/speed_calibration/*.csv",
        "error": "held-out |predicted/measured - 1| (leave-one-out, or as held_out says): median and 90th percentile",
        "factors": out + vllm_factors(read_vllm()[0]) + hf_factors(read_transformers()[0]),
    }


# ---- vLLM: serving runs (vllm.csv) -------------------------------------------------------------


@dataclass(frozen=True)
class Serve:
    """One measured vLLM run: ``streams`` concurrent requests of ``isl`` prompt and ``osl`` output
    tokens, tensor parallel over ``tp`` GPUs; its mean time to first token and per output token (s)."""

    source: str
    hardware: str
    family: str
    model: str
    dtype: str
    tp: int
    isl: int
    osl: int
    streams: int
    ttft: float
    tpot: float
    runtime: str = "vllm"
    kv: str = "auto"  # --kv-cache-dtype the run was served with (see read_vllm)


def read_vllm(path: Path = VLLM) -> tuple[list[Serve], int]:
    """The fitted vLLM rows, and how many were left out: hardware not in the catalog, or more
    streams than the KV cache paramcount plans for them holds (vLLM queues the rest: their TTFT
    counts whole requests waiting, which no prefill model predicts).

    ``kv_cache_dtype``: the runs' KV cache. AIConfigurator's ``fp8`` precision is its fp8 profile,
    fp8 GEMMs and an fp8 KV cache and attention (``sdk/task_v1_compat.py``, ``_PROFILE_TO_QUANT``),
    launched with ``--kv-cache-dtype fp8_e4m3`` (``generator/config/backend_config_mapping.yaml``);
    the bf16 rows keep vLLM's ``auto``. The Qwen3-32B fp8 runs could not have read a bf16 cache: at
    tensor parallel 1 and 2 their measured TPOT (16.85 and 11.63 ms) is under the time the H100's
    datasheet bandwidth takes for the fp8 weights and a bf16 cache alone (18.2 and 13.3 ms)."""
    from paramcount.hardware import catalog
    from paramcount.memory.speed.factors import family

    known = {h.key: h for h in catalog()}
    rows, left = [], 0
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            hw = known.get(r["hardware"])
            row = Serve(r["source"], r["hardware"], family(hw) if hw else "", r["model"], r["dtype"], int(r["tp"]),
                        int(r["isl"]), int(r["osl"]), int(r["concurrency"]), float(r["ttft_ms"]) / 1e3,
                        float(r["tpot_ms"]) / 1e3, kv=r["kv_cache_dtype"])  # fmt: skip
            if hw is None or queued(row):
                left += 1
                continue
            rows.append(row)
    return rows, left


@cache
def vllm_plan(model: str, dtype: str, tp: int, kv: str = "auto"):
    """vLLM's planner and one rank's work for a model in a scheme over ``tp`` ranks, its KV cache
    in ``kv`` (``--kv-cache-dtype``: the cache's bytes per value are what a decode step reads)."""
    import paramcount
    from paramcount.memory.runtimes import planner
    from paramcount.memory.speed.work import flat

    m = paramcount.load(model)
    p = planner(m, dtype, "vllm", tp=tp, kv_dtype=kv)
    return p, flat(m, p.weights.rows, p.kv_bytes, tp)


def queued(r: Serve) -> bool:
    """More streams than fit the KV cache at ``isl + osl`` tokens each (``serving``'s max_concurrency)."""
    p, _ = vllm_plan(r.model, r.dtype, r.tp, r.kv)
    return r.streams > p.serving(hardware(r.hardware).memory_bytes, r.isl + r.osl)["max_concurrency"]


@cache
def serve_features(r: Serve):
    """(decode step at the mean depth isl + osl/2, the prompt's seconds at the peak): the package's own."""
    from paramcount.memory.speed import vllm

    _, w = vllm_plan(r.model, r.dtype, r.tp, r.kv)
    hw = hardware(r.hardware)
    s = vllm.step(w, hw, r.dtype, r.isl + r.osl // 2, r.streams, r.tp)
    return s, vllm.prompt_seconds(w, hw, r.dtype, r.isl)


def _ttft_system(r: Serve) -> tuple[list[float], float]:
    """One row of the TTFT fit on relative error: [1, P, (N − 1)·P] / ttft against 1."""
    _, pre = serve_features(r)
    return [1 / r.ttft, pre / r.ttft, (r.streams - 1) * pre / r.ttft], 1.0


def _tpot_system(r: Serve) -> tuple[list[float], float]:
    """[memory, compute, layers, layers over several ranks, (N/osl)·P] / tpot against 1."""
    s, pre = serve_features(r)
    x = [s.memory, s.compute, s.layers, s.layers * (r.tp > 1), pre * r.streams / r.osl]
    return [v / r.tpot for v in x], 1.0


def _normal(systems: list[tuple[list[float], float]]) -> tuple[list[list[float]], list[float]]:
    k = len(systems[0][0])
    ata = [[sum(a[i] * a[j] for a, _ in systems) for j in range(k)] for i in range(k)]
    return ata, [sum(a[i] * b for a, b in systems) for i in range(k)]


def _nnls(ata: list[list[float]], atb: list[float]) -> list[float]:
    """Least squares with every coefficient ≥ 0: the best of the subsets' unconstrained solutions
    that are feasible (three coefficients: seven subsets)."""
    k, best, value = len(atb), [0.0] * len(atb), 0.0
    for mask in range(1, 1 << k):
        idx = [i for i in range(k) if mask >> i & 1]
        sol = _solve([[ata[i][j] for j in idx] for i in idx], [atb[i] for i in idx])
        if sol is None or min(sol) < 0:
            continue
        beta = [0.0] * k
        for i, v in zip(idx, sol, strict=True):
            beta[i] = v
        obj = sum(beta[i] * ata[i][j] * beta[j] for i in range(k) for j in range(k)) - 2 * sum(
            b * t for b, t in zip(beta, atb, strict=True)
        )
        if obj < value:
            best, value = beta, obj
    return best


def _solve(m: list[list[float]], v: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(v)
    a = [[*row, v[i]] for i, row in enumerate(m)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) < 1e-300:
            return None
        a[c], a[p] = a[p], a[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def fit_vllm(rows: list[Serve]) -> dict[str, float]:
    """TTFT (``request_s``, ``compute``, ``queue``) and TPOT (``bandwidth``, ``decode_compute``,
    ``layer_s``, ``allreduce_s``, ``steady``), each minimising the sum of |relative error| (the
    median the expected error reports; a few runs that disagree with the rest do not drag it),
    every coefficient ≥ 0 and the bandwidth's at least 1 (no step reads faster than the
    datasheet's bandwidth); a share whose coefficient is 0 is left out (that term adds nothing)."""
    t0, g, gq = _least_absolute([_ttft_system(r) for r in rows])
    tpot = [_tpot_system(r) for r in rows]
    a, b, c, d, h = _least_absolute(tpot)
    if a < 1:  # hold a at 1, fit the others on what is left
        a = 1.0
        b, c, d, h = _least_absolute([(x[1:], 1 - x[0]) for x, _ in tpot])
    terms = {"layer_s": c, "allreduce_s": d, "steady": h, "request_s": t0, "queue": gq / g if g else 0.0}
    terms.update({k: 1 / v for k, v in (("bandwidth", a), ("decode_compute", b), ("compute", g)) if v > 0})
    return {k: _round(v) for k, v in sorted(terms.items())}


IRLS_STEPS = 12  # iteratively reweighted least squares: enough for the median to settle here


def _least_absolute(systems: list[tuple[list[float], float]]) -> list[float]:
    """Non-negative least absolute deviations by iteratively reweighted least squares (weights
    1/|residual|, floored at 0.1% so a row fitted exactly does not take over)."""
    weights = [1.0] * len(systems)
    beta: list[float] = []
    for _ in range(IRLS_STEPS):
        scaled = [([v * w**0.5 for v in a], b * w**0.5) for (a, b), w in zip(systems, weights, strict=True)]
        beta = _nnls(*_normal(scaled))
        weights = [1 / max(abs(sum(c * v for c, v in zip(beta, a, strict=True)) - b), 1e-3) for a, b in systems]
    return beta


def predict_vllm(r: Serve, terms: dict[str, float]) -> tuple[float, float]:
    """(TPOT, TTFT) in seconds of a row from the package's own arithmetic (:mod:`paramcount.memory.speed.vllm`)."""
    from paramcount.memory.speed import vllm

    s, pre = serve_features(r)
    steady = vllm.steady_seconds(pre, r.streams, r.osl, terms)  # the others' prompts, per output token
    return vllm.step_seconds(s, terms) + steady, vllm.ttft_seconds(pre, r.streams, terms)


FOLDS = 10


def leave_one_out_vllm(rows: list[Serve]) -> list[tuple[Serve, float, float]]:
    """Each row's (TPOT, TTFT) predicted from the factors fitted without it: ten-fold (every tenth
    row held out together; one fit per fold, where a fit per row would take minutes)."""
    out: list[tuple[Serve, float, float]] = []
    for k in range(FOLDS):
        terms = fit_vllm([r for i, r in enumerate(rows) if i % FOLDS != k])
        out += [(r, *predict_vllm(r, terms)) for i, r in enumerate(rows) if i % FOLDS == k]
    return out


def vllm_factors(rows: list[Serve]) -> list[dict]:
    out = []
    for fam in sorted({r.family for r in rows}):
        rs = [r for r in rows if r.family == fam]
        loo = leave_one_out_vllm(rs)
        error = {"decode": summary([p / r.tpot - 1 for r, p, _ in loo]),
                 "ttft": summary([t / r.ttft - 1 for r, _, t in loo])}  # fmt: skip
        count = {"decode": len(rs), "ttft": len(rs)}
        out.append({"runtime": "vllm", "family": fam, "terms": fit_vllm(rs), "rows": count, "error": error,
                    "held_out": f"{FOLDS}-fold: every {FOLDS}th row predicted from a fit without it",
                    "sources": sorted({r.source for r in rs})})  # fmt: skip
    return out


def vllm_report(rows: list[Serve], left: int) -> str:
    """Markdown: the held-out (ten-fold) residuals of vLLM's TPOT and TTFT per family, card and model."""
    lines = [
        f"{len(rows)} vLLM rows fitted, {left} left out (more streams than the planned KV cache holds: queued).",
        "",
        "| family | GPU | model | dtype | rows | TPOT median | TPOT p90 | TTFT median | TTFT p90 |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for fam in sorted({r.family for r in rows}):
        loo = leave_one_out_vllm([r for r in rows if r.family == fam])
        keys = [("all", "", ""), *sorted({(r.hardware, r.model, r.dtype) for r, _, _ in loo})]
        for hw, model, dtype in keys:
            sel = [(r, p, t) for r, p, t in loo if hw == "all" or (r.hardware, r.model, r.dtype) == (hw, model, dtype)]
            d, t = summary([p / r.tpot - 1 for r, p, _ in sel]), summary([t / r.ttft - 1 for r, _, t in sel])
            lines.append(f"| {fam} | {hw} | {model} | {dtype} | {len(sel)} | {d['median']:.1%} | {d['p90']:.1%} | "
                         f"{t['median']:.1%} | {t['p90']:.1%} |")  # fmt: skip
    return "\n".join(lines)


# ---- transformers: model.generate runs (transformers.csv) ---------------------------------------

HF_MAX_BATCH = 8  # batches fitted: past 8 streams eager attention's own time outgrows the per-layer overhead
HF_DTYPES = ("fp16", "bf16")


@dataclass(frozen=True)
class Generate:
    """One measured ``model.generate`` run's decode (tokens/s per stream, over ``new`` tokens after
    a prompt of ``prompt``: a mean depth of prompt + new/2) or prefill (one forward of the prompt,
    prompt tokens/s) on one GPU, with a batch of ``batch`` sequences."""

    source: str
    hardware: str
    family: str
    model: str
    dtype: str
    attn: str
    batch: int
    prompt: int
    new: int
    phase: str
    measured: float
    runtime: str = "transformers"

    @property
    def depth(self) -> int:
        return self.prompt + self.new // 2


def read_transformers(path: Path = TRANSFORMERS) -> tuple[list[Generate], int]:
    """The fitted transformers rows (each run's decode; a batch of one's prefill too), and how many
    runs were left out (:func:`hf_left_out` says why)."""
    from paramcount.hardware import catalog
    from paramcount.memory.speed.factors import family

    known = {h.key: h for h in catalog()}
    rows, left = [], 0
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            hw = known.get(r["hardware"])
            if hw is None or hf_left_out(r, hw):
                left += 1
                continue
            batch, prompt, new = int(r["batch"]), int(r["prompt"]), int(r["new_tokens"])
            common = (r["source"], hw.key, family(hw), r["model"], r["dtype"], r["attn_implementation"], batch, prompt)
            rows.append(Generate(*common, new, "decode", _hf_decode_rate(r, batch, new)))
            if batch == 1 and r["forward_s"]:
                rows.append(Generate(*common, new, "prefill", prompt / float(r["forward_s"])))
    return rows, left


def hf_left_out(r: dict, hw) -> str:
    """Why a run is not fitted ('' where it is): not on a GPU of the catalog under its vendor's own
    backend, a setting the data do not cover (quantised kernels, a static cache, torch.compile,
    batches past HF_MAX_BATCH), or a setting the source does not state."""
    if hw.kind != "gpu" or NATIVE[hw.vendor] != r["backend"]:
        return "not a GPU under its vendor's backend"
    if not (r["model"] and r["transformers"] and r["attn_implementation"] and r["prompt"] and r["new_tokens"]):
        return "a setting not stated (model, transformers version, attention, prompt or tokens)"
    if r["quantization"] or r["dtype"] not in HF_DTYPES:
        return "quantised kernels: not fitted"
    if r["cache"] != "dynamic" or r["compile"] != "0":
        return "static cache or torch.compile: not fitted"
    return "" if int(r["batch"]) <= HF_MAX_BATCH else f"a batch past {HF_MAX_BATCH}: not fitted"


def _hf_decode_rate(r: dict, batch: int, new: int) -> float:
    """Tokens/s per stream after the prompt: the published decode throughput (all streams) over
    the batch, or, where only generate's and the prompt's latencies were published, the new
    tokens after the first (which the prompt's forward gives) over the time past that forward."""
    if r["decode_tokens_per_s"]:
        return float(r["decode_tokens_per_s"]) / batch
    return (new - 1) / (float(r["generate_s"]) - float(r["forward_s"]))


@cache
def hf_work(model: str, dtype: str):
    import paramcount
    from paramcount.memory.speed import hf
    from paramcount.memory.weights.schemes import weights

    m = paramcount.load(model)
    return hf.work(m, weights(m, dtype).rows)


def hf_decode_features(r: Generate) -> tuple[float, float]:
    """(bytes a step reads / bandwidth, layers): the package's own step reads (:mod:`paramcount.memory.speed.hf`)."""
    from paramcount.memory.speed.llamacpp import _step_reads
    from paramcount.memory.speed.work import HOST

    w, hw = hf_work(r.model, r.dtype), hardware(r.hardware)
    read = sum(b for d, b in _step_reads(w, r.depth, r.batch).items() if d is not HOST)
    return read / hw.bandwidth_bytes_per_s, sum(w.layers.values())


def fit_hf(rows: list[Generate]) -> dict[str, float]:
    """transformers' ``bandwidth`` and ``layer_s`` (decode, by least squares on relative error as
    :func:`fit_decode`, a ≥ 1, c ≥ 0) and ``compute`` (prefill: the geometric mean of the share of
    the peak each prompt's FLOPs reached in the time its layers' launches leave,
    :func:`paramcount.memory.speed.hf.prefill`)."""
    from paramcount.memory.speed.llamacpp import peak

    out: dict[str, float] = {}
    data = [(*hf_decode_features(r), 1 / r.measured) for r in rows if r.phase == "decode"]
    if len(data) >= 2:
        a, c = _least_squares(data)
        if a < 1:
            a, c = 1.0, _one(data, 1.0)
        if c < 0:
            a, c = max(1.0, sum(x / t for x, _, t in data) / sum((x / t) ** 2 for x, _, t in data)), 0.0
        out.update({"bandwidth": _round(1 / a), "layer_s": _round(c)})
    shares = []
    for r in (r for r in rows if r.phase == "prefill"):  # the prompt's seconds past the layers' launches
        w = hf_work(r.model, r.dtype)
        seconds = r.prompt / r.measured - out.get("layer_s", 0.0) * sum(w.layers.values())
        if seconds > 0:
            shares.append(w.prompt_flops(r.prompt) / seconds / peak(hardware(r.hardware)))
    if shares:
        out["compute"] = _round(_geomean(shares))
    return out


def predict_hf(r: Generate, terms: dict[str, float]) -> float | None:
    """The package's own estimate of row ``r`` with these factors (tokens/s)."""
    from paramcount.memory.speed import hf
    from paramcount.memory.speed.factors import Fitted

    f = Fitted(r.runtime, r.family, terms, {}, {}, ())
    w, hw = hf_work(r.model, r.dtype), hardware(r.hardware)
    if r.phase == "decode":
        return hf.decode(w, hw, r.depth, r.batch, table=lambda *_: f).tokens_per_s
    return hf.prefill(w, hw, r.prompt, table=lambda *_: f).tokens_per_s


def leave_one_out_hf(rows: list[Generate]) -> list[tuple[Generate, float | None]]:
    """Each row predicted from the factors fitted on the others (a run's decode and prefill are
    separate rows: each phase's fit leaves out only the row predicted)."""
    return [(r, predict_hf(r, fit_hf(rows[:i] + rows[i + 1 :]))) for i, r in enumerate(rows)]


def hf_factors(rows: list[Generate]) -> list[dict]:
    out = []
    for fam in sorted({r.family for r in rows}):
        rs = [r for r in rows if r.family == fam]
        loo = leave_one_out_hf(rs)
        error = {}
        for phase in ("decode", "prefill"):
            errs = [p / r.measured - 1 for r, p in loo if r.phase == phase and p]
            if errs:
                error[phase] = summary(errs)
        count = {phase: sum(r.phase == phase for r in rs) for phase in ("decode", "prefill")}
        dtypes = "/".join(sorted({r.dtype for r in rs}))
        setting = f"model.generate, DynamicCache, no torch.compile, {dtypes}, batch 1 to {max(r.batch for r in rs)}"
        out.append({"runtime": "transformers", "family": fam, "terms": fit_hf(rs), "rows": count, "error": error,
                    "hardware": sorted({r.hardware for r in rs}), "attention": sorted({r.attn for r in rs}),
                    "setting": setting, "sources": sorted({r.source for r in rs})})  # fmt: skip
    return out


def hf_report(rows: list[Generate], left: int) -> str:
    """Markdown: transformers' leave-one-out residuals per family, phase and attention, then every row."""
    lines = [
        f"{len(rows)} transformers rows fitted (decode of each run, prefill of a batch of one), {left} runs left out "
        "(quantised kernels, batches past 8, a GPU not in the catalog, a setting the source does not state).",
        "",
        "| family | phase | attention | rows | median abs error | p90 abs error |",
        "|---|---|---|---:|---:|---:|",
    ]
    every = []
    for fam in sorted({r.family for r in rows}):
        loo = leave_one_out_hf([r for r in rows if r.family == fam])
        every += loo
        for phase in ("decode", "prefill"):
            for attn in ("all", *sorted({r.attn for r, _ in loo})):
                errs = [p / r.measured - 1 for r, p in loo if r.phase == phase and p and attn in ("all", r.attn)]
                if errs:
                    s = summary(errs)
                    lines.append(f"| {fam} | {phase} | {attn} | {len(errs)} | {s['median']:.1%} | {s['p90']:.1%} |")
    lines += ["", "| GPU | model | attention | batch | prompt | new | phase | measured t/s | predicted t/s | error |",
              "|---|---|---|---:|---:|---:|---|---:|---:|---:|"]  # fmt: skip
    for r, p in every:
        err = f"{p / r.measured - 1:+.1%}" if p else "—"
        lines.append(f"| {r.hardware} | {r.model} | {r.attn} | {r.batch} | {r.prompt} | {r.new} | {r.phase} | "
                     f"{r.measured:.1f} | {p or 0:.1f} | {err} |")  # fmt: skip
    return "\n".join(lines)


def text(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def report(rows: list[Row], left: int) -> str:
    """Markdown: residuals per runtime and family (leave-one-out), then every row."""
    lines = [
        f"{len(rows)} rows fitted, {left} left out (hardware not in the catalog, another backend).",
        "",
        "| runtime | family | phase | rows | median abs error | p90 abs error |",
        "|---|---|---|---:|---:|---:|",
    ]
    every = []
    for (runtime, fam), rs in groups(rows).items():
        loo = leave_one_out(rs)
        every += loo
        for phase in ("decode", "prefill"):
            errs = [p / r.measured - 1 for r, p in loo if r.phase == phase and p]
            if errs:
                s = summary(errs)
                lines.append(f"| {runtime} | {fam} | {phase} | {len(errs)} | {s['median']:.1%} | {s['p90']:.1%} |")
    lines += ["", *generation_report(every)]
    lines += ["", "| device | model | dtype | test | measured t/s | predicted t/s (leave-one-out) | error |",
              "|---|---|---|---|---:|---:|---:|"]  # fmt: skip
    for r, p in every:
        err = f"{p / r.measured - 1:+.1%}" if p else "—"
        lines.append(f"| {r.device} | {r.model} | {r.dtype} | {r.test} | {r.measured:g} | {p or 0:.1f} | {err} |")
    return "\n".join(lines)


def generation(r: Row) -> str:
    """An Apple chip's generation (M1 … M4) or a CPU's catalog family (EPYC 9004, Xeon 6 …)."""
    hw = hardware(r.hardware)
    return hw.family.split()[0] if hw.kind == "apple" else hw.family


def generation_report(loo: list[tuple[Row, float | None]]) -> list[str]:
    """Markdown lines: the family-wide leave-one-out errors of the Apple and CPU families split by
    chip generation or CPU family (one factor per family is fitted: these rows are too few to fit
    one per generation, and the split shows whether one would differ)."""
    lines = ["| runtime | family | generation | phase | rows | median abs error | p90 abs error |",
             "|---|---|---|---|---:|---:|---:|"]  # fmt: skip
    split: dict[tuple[str, str, str, str], list[float]] = {}
    for r, p in loo:
        if r.family in ("apple", "cpu") and p:
            split.setdefault((r.runtime, r.family, generation(r), r.phase), []).append(p / r.measured - 1)
    for (runtime, fam, gen, phase), errs in sorted(split.items()):
        s = summary(errs)
        lines.append(f"| {runtime} | {fam} | {gen} | {phase} | {len(errs)} | {s['median']:.1%} | {s['p90']:.1%} |")
    return lines


def borrowed_report(rows: list[Row]) -> str:
    """Markdown: the mlx rows predicted with llama.cpp's factors for their family (what MLX's
    figures borrowed before it had its own), against the mlx family's own leave-one-out errors."""
    from paramcount.memory.speed.factors import fitted

    lines = ["| runtime's rows | factors | phase | rows | median abs error | p90 abs error |",
             "|---|---|---|---:|---:|---:|"]  # fmt: skip
    for (runtime, fam), rs in groups(rows).items():
        lent = fitted("llama.cpp", fam) if runtime != "llama.cpp" else None
        if lent is None:
            continue
        terms = {k: v for k, v in lent.terms.items() if k in ("bandwidth", "layer_s", "flop_per_byte")}
        own = leave_one_out(rs)
        for phase in ("decode", "prefill"):
            sel = [(r, p) for r, p in own if r.phase == phase and p]
            if not sel:
                continue
            lent_errors = summary([predict(r, terms) / r.measured - 1 for r, _ in sel])
            own_errors = summary([p / r.measured - 1 for r, p in sel])
            named = ((f"llama.cpp's {fam} (borrowed)", lent_errors), (f"its own {fam} (leave-one-out)", own_errors))
            for name, e in named:
                lines.append(f"| {runtime} | {name} | {phase} | {len(sel)} | {e['median']:.1%} | {e['p90']:.1%} |")
    return "\n".join(lines)


def vulkan_report() -> str:
    """Markdown: llama.cpp's Vulkan rows on cards of the catalog, fitted per family on their own
    and held out one at a time; a family with one card is listed, not fitted. Report only:
    ``paramcount speed`` takes the vendor's backend's factors (factors.json holds no Vulkan fit)."""
    rows, _ = read(backend="Vulkan")
    lines = ["| family | phase | cards | median abs error | p90 abs error |", "|---|---|---:|---:|---:|"]
    every = []
    for (_, fam), rs in groups(rows).items():
        loo = leave_one_out(rs) if len({r.hardware for r in rs}) > 1 else [(r, None) for r in rs]
        every += loo
        for phase in ("decode", "prefill"):
            errs = [p / r.measured - 1 for r, p in loo if r.phase == phase and p]
            cards = len({r.hardware for r in rs if r.phase == phase})
            s = summary(errs) if errs else None
            cells = f"{s['median']:.1%} | {s['p90']:.1%}" if s else "— | — (one card: nothing to hold out)"
            lines.append(f"| {fam} | {phase} | {cards} | {cells} |")
    lines += ["", "| device | model | dtype | fa | test | measured t/s | predicted t/s (leave-one-out) | error |",
              "|---|---|---|---:|---|---:|---:|---:|"]  # fmt: skip
    for r, p in every:
        err = f"{p / r.measured - 1:+.1%}" if p else "—"
        lines.append(f"| {r.device} | {r.model} | {r.dtype} | {int(r.flash)} | {r.test} | {r.measured:g} | "
                     f"{p or 0:.1f} | {err} |")  # fmt: skip
    return "\n".join(lines)


def type_report(rows: list[Row]) -> str:
    """Markdown: would a prefill factor per GGUF type hold? In each family whose prompts ran in
    more than one type (Apple's F16 and Q4_0), every prompt held out one at a time, predicted from
    one factor fitted on the family's other prompts, then from a factor fitted only on its own type's."""
    lines = ["| family | types | prompts | one factor: median | p90 | a factor per type: median | p90 |",
             "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for (_, fam), rs in groups(rows).items():
        tg, pp = [r for r in rs if r.phase == "decode"], [r for r in rs if r.phase == "prefill"]
        if len({r.dtype for r in pp}) < 2:
            continue
        cells = []
        for split in (False, True):
            errs = []
            for i, r in enumerate(pp):
                others = [o for j, o in enumerate(pp) if j != i and (not split or o.dtype == r.dtype)]
                errs.append(predict(r, fit(tg + others)) / r.measured - 1)
            s = summary(errs)
            cells += [f"{s['median']:.1%}", f"{s['p90']:.1%}"]
        lines.append(f"| {fam} | {', '.join(sorted({r.dtype for r in pp}))} | {len(pp)} | {' | '.join(cells)} |")
    return "\n".join(lines)


def validation(folder: Path = HERE / "validation") -> str:
    """Markdown: the held-out rows (``validation/*.csv``, never fitted) against the committed factors."""
    from paramcount.memory.speed.factors import fitted

    rows, left = read(folder)
    lines = [
        "| device | model | dtype | test | measured t/s | predicted t/s | error |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        f = fitted(r.runtime, r.family)
        p = predict(r, f.terms) if f else None
        err = f"{p / r.measured - 1:+.1%}" if p else "—"
        lines.append(f"| {r.device} | {r.model} | {r.dtype} | {r.test} | {r.measured:g} | {p or 0:.1f} | {err} |")
    return "\n".join(lines) + (f"\n\n{left} rows left out (hardware not in the catalog)." if left else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", action="store_true", help="print the residual tables as Markdown")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows, left = read()
    args.out.write_text(text(factors(rows)), encoding="utf-8")
    print(f"wrote {args.out} from {len(rows)} rows ({left} left out)")
    if args.report:
        print(report(rows, left))
        print(f"\nvLLM (tools/speed_calibration/vllm.csv), {FOLDS}-fold held out:\n")
        print(vllm_report(*read_vllm()))
        print("\nMLX's rows with llama.cpp's factors borrowed, against its own:\n")
        print(borrowed_report(rows))
        print("\nA prefill factor per GGUF type, held out one prompt at a time:\n")
        print(type_report(rows))
        print("\nllama.cpp's Vulkan backend (fitted on its own rows, report only):\n")
        print(vulkan_report())
        print("\ntransformers (tools/speed_calibration/transformers.csv), held out one row at a time:\n")
        print(hf_report(*read_transformers()))
        print("\nHeld out (tools/speed_calibration/validation/, never fitted):\n")
        print(validation())


if __name__ == "__main__":
    main()
