"""Placing a large MoE under llama.cpp's -ot and --n-cpu-moe: paramcount.pattern against Python's re.

Run: python benchmarks/bench_patterns.py

The -ot patterns are matched by paramcount.pattern (a lazily built DFA in Python, linear in the
name) rather than by Python's re (C, backtracking: exponential on some patterns). This times the
same llama.cpp memory plan with each engine behind ``placement.compile_pattern``, best of several
runs in one process, the plan's own work (the tree, the rows, the terms) included: the ratio is
what a user of ``memory --runtime llama.cpp -ot ...`` sees. The plans are asserted equal.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import paramcount
from paramcount import pattern
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp import placement as pl

MODEL = "Qwen/Qwen3-235B-A22B"  # 94 layers of 128 experts
USER = r"blk\.(4[0-9]|5[0-9])\.ffn_(up|gate)_exps=CPU,token_embd=CUDA0,blk\.9[0-3]\.attn_.*=CPU,ffn_down_exps=CPU"


def best(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def plan(model: paramcount.Model, overrides: tuple[tuple[str, str], ...]) -> dict[str, int]:
    p = inference(model, "q4_k_m", context=4096, runtime="llama.cpp", gpu_layers=80, overrides=overrides)
    return {t.key: t.bytes for t in p.terms}


def main() -> None:
    model = paramcount.load(MODEL)
    overrides = pl.n_cpu_moe(30) + pl.overrides(USER)
    ours = plan(model, overrides)
    pl.compile_pattern = re.compile  # the same plan with Python's re behind it
    assert plan(model, overrides) == ours
    t_re = best(lambda: plan(model, overrides))
    pl.compile_pattern = pattern.compile
    t_ours = best(lambda: plan(model, overrides))
    none = best(lambda: plan(model, ()))
    print(f"{MODEL}, q4_k_m, -ngl 80 --n-cpu-moe 30 -ot (4 patterns): {len(overrides)} patterns")
    print(f"  plan without patterns {none * 1e3:.1f} ms")
    print(f"  with Python re        {t_re * 1e3:.1f} ms")
    print(f"  with paramcount.pattern {t_ours * 1e3:.1f} ms: {t_ours / t_re:.2f}x re's time")


if __name__ == "__main__":
    main()
