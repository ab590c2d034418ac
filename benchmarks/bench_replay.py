"""llama.cpp's compute buffer on a CPU: the replay against the closed form, timed in the same run.

Run: python benchmarks/bench_replay.py   (the core alone: no extras)

For a dense decoder on a CPU the planner replays the graph llama.cpp builds for its reserved
micro-batches through the port of ggml-alloc (``paramcount.memory.runtimes.llamacpp.plan.replayed``
over ``.replay.buffer``); elsewhere it takes the closed form (``plan.compute``: the largest of
three moments). Both are timed here on the same planner's shape, layout, cells and options, best
of REPEAT calls each (nothing is cached between calls), with the bytes each gives. The figures:
milliseconds per call, the ratio replay / closed form (what exactness costs; it holds across
machines where milliseconds do not), the closed form's bytes against the replay's, and a whole
``plan()`` (weights, KV, the replayed buffer, output) for scale.
"""

from __future__ import annotations

import time
from dataclasses import replace

import paramcount
from paramcount.memory.runtimes import planner
from paramcount.memory.runtimes.llamacpp.plan import Cells, compute, mixer, replayed

REPEAT = 20
# dense llama, qwen2 and qwen3 graphs (the replay stops once a layer repeats), small to large, and two
# hybrids whose layers differ (every layer replayed)
MODELS = (
    "meta-llama/Llama-3.2-1B",
    "Qwen/Qwen2.5-7B",
    "meta-llama/Llama-3.1-8B",
    "Qwen/Qwen3-32B",
    "LiquidAI/LFM2-1.2B",  # convolution and attention layers: the whole graph replayed
    "ibm-granite/granite-4.0-h-small",  # Mamba-2 and attention layers, routed experts: whole too
)
CONTEXTS = (4096, 32768, 131072)
FLASH = ("on", "off")


def best(call, repeat: int = REPEAT) -> tuple[float, object]:
    """The fastest of ``repeat`` calls, in seconds, and the last call's answer."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t)
    return min(times), out


def case(p, context: int) -> dict:
    """One planner at one context: each way of sizing the buffer, timed on the same inputs."""
    o = p.options
    cells = Cells.of(context, 1, o)
    attention = replace(p.layout, kinds=tuple(k for k in p.layout.kinds if k.attention != "state"))
    t_replay, r = best(lambda: replayed(p.dense, cells, o))
    t_closed, c = best(lambda: compute(p.shape, attention, cells, o, mixer(p.recurrent)))
    t_plan, _ = best(lambda: p.plan(context), repeat=3)
    return {"replay": (t_replay, r.bytes), "closed": (t_closed, c.bytes), "plan": t_plan}


def main() -> None:
    import platform

    print(f"paramcount {paramcount.__version__}, Python {platform.python_version()}, best of {REPEAT} (plan: of 3)")
    head = ("model", "context", "-fa", "replay ms", "closed form ms", "replay / closed", "replay B", "closed B",
            "closed / replay", "plan() ms")  # fmt: skip
    print(" | ".join(head))
    ratios = []
    for name in MODELS:
        model = paramcount.load(name)
        for fa in FLASH:
            p = planner(model, "q4_k_m", "llama.cpp", device="cpu", flash_attn=fa)
            assert p.dense is not None, f"{name}: not a graph the replay covers"
            for context in CONTEXTS:
                m = case(p, context)
                (tr, br), (tc, bc) = m["replay"], m["closed"]
                ratios.append(tr / tc)
                print(
                    f"{name} | {context:,} | {fa} | {tr * 1e3:.2f} | {tc * 1e3:.4f} | {tr / tc:,.0f}x | {br:,} | {bc:,}"
                    f" | {bc / br - 1:+.1%} | {m['plan'] * 1e3:.2f}"
                )
    ratios.sort()
    print(f"replay / closed form: median {ratios[len(ratios) // 2]:,.0f}x, {ratios[0]:,.0f}x .. {ratios[-1]:,.0f}x")


if __name__ == "__main__":
    main()
