"""Counting every catalog model: paramcount versus transformers on the meta device.

Run: python benchmarks/bench_count.py   (needs the test extras: torch and transformers)

Both sides start from the same config dict and give the same total (asserted); the
figures are per model, and the ratio is the point: it holds across machines.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import warnings

import paramcount
from paramcount.frontends import catalog


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def ours(entry: catalog.Entry) -> int:
    m = paramcount.load(entry.config)
    m.components()
    return m.total


def meta(entry: catalog.Entry, cls: str) -> int:
    import torch
    import transformers

    model_type = paramcount.load(entry.config).model_type
    kwargs = {k: v for k, v in entry.config.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return sum(p.numel() for p in model.parameters())


def cold_start(args: list[str], repeat: int = 5) -> float:
    return best_of(lambda: subprocess.run(args, check=True, capture_output=True), repeat)


def main() -> None:
    warnings.filterwarnings("ignore")
    import transformers  # noqa: F401  (imported once up front: not part of the per-model figure)

    rows = []
    for entry in catalog.entries():
        m = paramcount.load(entry.config)
        # the suite checks every class tensor by tensor; here the backbones must agree too
        # (classes can differ where we follow the checkpoint: Flan-T5's untied head)
        assert m.backbone_total == meta(entry, m.backbone_class), entry.id
        a = best_of(lambda e=entry: ours(e), 20)
        b = best_of(lambda e=entry, c=m.class_name: meta(e, c), 3)
        rows.append((entry.id, a, b))
        print(f"{entry.id:45s} paramcount {a * 1e3:8.3f} ms   meta {b * 1e3:9.1f} ms   {b / a:8.0f}x", flush=True)
    ratios = sorted((b / a, name) for name, a, b in rows)
    print(
        f"\n{len(rows)} models: paramcount median {statistics.median(a for _, a, _ in rows) * 1e3:.3f} ms, "
        f"max {max(a for _, a, _ in rows) * 1e3:.3f} ms per model; meta median "
        f"{statistics.median(b for _, _, b in rows) * 1e3:.1f} ms"
    )
    slow = sorted(((a, name) for name, a, _ in rows if a >= 1e-4), reverse=True)
    print(
        f"{len(slow)} of {len(rows)} models take 0.1 ms or more (goal: none): "
        + ", ".join(f"{name} {a * 1e3:.3f}" for a, name in slow[:10])
        + (" …" if len(slow) > 10 else "")
    )
    (low, low_name), (high, high_name) = ratios[0], ratios[-1]
    print(
        f"speed-up: median {statistics.median(r for r, _ in ratios):,.0f}x, "
        f"min {low:,.0f}x ({low_name}), max {high:,.0f}x ({high_name})"
    )

    # A catalog name, as users type it (issue 12's goal: within 4x a bare interpreter's start).
    cli = cold_start([sys.executable, "-m", "paramcount", "bert-base-uncased", "--json"], repeat=20)
    imp = cold_start([sys.executable, "-c", "import transformers"])
    base = cold_start([sys.executable, "-c", "pass"], repeat=20)
    print(
        f"cold start: paramcount bert-base-uncased --json {cli * 1e3:.1f} ms; bare python {base * 1e3:.1f} ms "
        f"({cli / base:.1f}x bare; goal 4x); python -c 'import transformers' {imp * 1e3:.0f} ms ({imp / cli:.1f}x ours)"
    )


if __name__ == "__main__":
    main()
