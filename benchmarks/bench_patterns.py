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
# llama.cpp's names of a Qwen3-MoE layer's tensors (llama-arch.cpp, LLM_ARCH_QWEN3MOE)
LAYER = "attn_norm attn_q attn_k attn_v attn_output attn_q_norm attn_k_norm ffn_norm ffn_gate_inp"
LAYER += " ffn_gate_exps ffn_up_exps ffn_down_exps"
NAMES = [f"blk.{i}.{t}.weight" for i in range(94) for t in LAYER.split()] + ["token_embd.weight", "output.weight"]
USER = r"blk\.(4[0-9]|5[0-9])\.ffn_(up|gate)_exps=CPU,token_embd=CUDA0,blk\.9[0-3]\.attn_.*=CPU,ffn_down_exps=CPU"


class PythonRe:
    """Python's re behind the Pattern interface placement.py uses (its layer index reads the
    parsed prefix, taken from paramcount.pattern)."""

    def __init__(self, source: str) -> None:
        self.search = re.compile(source).search
        self.prefix = pattern.compile(source).prefix


def best(fn: Callable[[], object], repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def plan(model: paramcount.Model, overrides: tuple[tuple[str, str], ...]) -> dict[str, int]:
    p = inference(model, "q4_k_m", context=4096, runtime="llama.cpp", gpu_layers=80, overrides=overrides)
    return {t.key: t.bytes for t in p.terms}


def placed(overrides: tuple[tuple[str, str], ...]) -> list[str | None]:
    """Each tensor's buffer type, from a new Placement (nothing remembered between runs)."""
    p = pl.Placement(overrides=overrides)
    return [p.override(name) for name in NAMES]


def main() -> None:
    model = paramcount.load(MODEL)
    overrides = pl.n_cpu_moe(30) + pl.overrides(USER)
    ours, chosen = plan(model, overrides), placed(overrides)
    pl.compile_pattern = PythonRe  # the same code with Python's re behind it
    assert plan(model, overrides) == ours and placed(overrides) == chosen
    t_re, p_re = best(lambda: plan(model, overrides)), best(lambda: placed(overrides))
    pl.compile_pattern = pattern.compile
    t_ours, p_ours = best(lambda: plan(model, overrides)), best(lambda: placed(overrides))
    print(f"{MODEL}, q4_k_m, -ngl 80 --n-cpu-moe 30 -ot (4 patterns): {len(overrides)} patterns")
    print(f"  placing its {len(NAMES):,} tensor names: re {p_re * 1e3:.2f} ms, ours {p_ours * 1e3:.2f} ms:", end=" ")
    print(f"{p_ours / p_re:.2f}x re's time")
    print(f"  the whole llama.cpp plan: re {t_re * 1e3:.1f} ms, ours {t_ours * 1e3:.1f} ms: {t_ours / t_re:.2f}x")


if __name__ == "__main__":
    main()
